/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fault_actions.c - the signal actions of SIGSEGV and SIGTRAP: the shim's
 * handlers installed (fault.c names them), one thread at a time under the
 * install lock, and looked at again (fault_recheck); the program's own
 * actions recorded in a page of their own, read-only but while one is
 * written, for fault.c to chain to; the fault signals kept out of every
 * mask (fault_filter_mask).
 *
 * Must never: decide what a fault is or report one (fault.c), or leave
 * the program's actions writable (a failed mprotect is fatal).
 * fault_program_publish() runs in the handler (SA_RESETHAND):
 * async-signal-safe, as prog_open() and prog_close() are.  Arming's first
 * close (the take-over) is held with its other freezes and done with
 * fault.c's page beside it, one mprotect for the two, under the install
 * lock (ro_freeze_locked); an open after it opens as ever.
 */
#define _GNU_SOURCE
#include "stderr.h"
#include "os.h"
#include "ro.h"
#include "fault_inner.h"

#include <signal.h>
#include <string.h>

/* Which handler runs for a fault that is not a write to pool memory is a
 * decision too: the program's actions live in a page of their own,
 * read-only but while prog_open() .. prog_close() change them (the
 * program's sigaction(), install_lock held; SA_RESETHAND in the handler),
 * whose mprotects fail hard.  A write into the shim's data cannot make an
 * attacker's function the chained handler. */
union fault_prog_page fault_prog __attribute__((aligned(RO_PAGE)));
const struct ro_span fault_prog_ro_span = { &fault_prog, sizeof(fault_prog) };   /* ro.h: init.c lists it */

/* install_lock: who installs or records a handler, one thread at a time.
 * Not a pthread mutex: a word of one set to anything but 0 (make tamper)
 * made the next protect, or the program's next sigaction(), wait for
 * ever.  The owner's thread id instead; an owner that is no live thread
 * of ours, this very thread (nothing here takes it twice), or one holding
 * it past INSTALL_WAIT_NS is a forged word: the lock is taken over
 * (report.c's lock does the same).  A fork child finds its parent's other
 * threads gone, so a lock held across a fork frees itself too. */
static _Atomic int install_owner;
#define INSTALL_WAIT_NS UINT64_C(2000000000)

void fault_install_lock_take(void)
{
	int me = os_gettid(), expected = 0;
	uint64_t since = 0;
	for (unsigned spins = 1; !atomic_compare_exchange_weak_explicit(&install_owner, &expected, me,
									memory_order_acquire, memory_order_relaxed);
	     spins++) {
		if (expected != 0 && spins % 64 == 1) {
			uint64_t now = os_monotonic_ns(false);
			if (!since)
				since = now;
			if ((expected == me || !os_thread_alive(expected) || now - since > INSTALL_WAIT_NS) &&
			    atomic_compare_exchange_strong(&install_owner, &expected, me))
				return;
		}
		expected = 0;
		os_yield();
	}
}

void fault_install_lock_give(void)
{
	atomic_store_explicit(&install_owner, 0, memory_order_release);
}

/* Async-signal-safe (one system call each).  Before its first close the
 * page is the .bss it was loaded as, writable: nothing to open (arming's
 * take-over is that first close in most processes).  A flag forged to say
 * "never closed" only makes the writes fault, as site.c's filter's. */
static bool prog_closed_once;

static void prog_open(void)
{
	if (__atomic_load_n(&prog_closed_once, __ATOMIC_ACQUIRE) &&
	    os_protect_rw(&fault_prog, sizeof(fault_prog)) < 0)
		fatal("sigaction", "cannot open the program's signal actions");
}

static void prog_close(void)
{
	__atomic_store_n(&prog_closed_once, true, __ATOMIC_RELEASE);
	if (ro_freeze_locked(&fault_prog, sizeof(fault_prog), fault_install_lock_take, fault_install_lock_give) < 0)
		fatal("sigaction", "cannot make the program's signal actions read-only");
}

void fault_program_publish(struct program_action *pa, const struct sigaction *act)
{
	prog_open();
	int cur = atomic_load_explicit(&pa->idx, memory_order_relaxed) & 1;
	pa->slot[!cur] = *act;
	atomic_store_explicit(&pa->idx, !cur, memory_order_release);
	prog_close();
}

/* The shim's handler runs on the alternate stack only when the program's
 * own handler for sig asked for one (SA_ONSTACK, for its stack-overflow
 * handling): a write to pool memory never exhausts the thread's stack, and
 * an alternate stack smaller than the kernel's signal frame (3.3 KiB with
 * AVX-512) would make the kernel kill the process before any handler runs. */
void fault_install_handler(int sig, void (*fn)(int, siginfo_t *, void *), const struct sigaction *prog,
		    struct sigaction *old)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (prog && (prog->sa_flags & SA_ONSTACK))
		sa.sa_flags |= SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (os_sigaction(sig, &sa, old) < 0)
		fatal("pmalloc_create_pool", "cannot install the fault handler");
	if (!prog && old && (old->sa_flags & SA_ONSTACK)) {
		sa.sa_flags |= SA_ONSTACK;
		os_sigaction(sig, &sa, NULL);
	}
}

void fault_take_over(int sig, void (*fn)(int, siginfo_t *, void *), struct program_action *prog)
{
	fault_install_lock_take();
	if (!atomic_load(&prog->ours)) {
		prog_open();
		fault_install_handler(sig, fn, NULL, &prog->slot[0]);
		atomic_store(&prog->idx, 0);
		atomic_store(&prog->ours, 1);
		prog_close();
	}
	fault_install_lock_give();
}

void fault_filter_mask(sigset_t *set)
{
	sigdelset(set, SIGSEGV);
	if (atomic_load_explicit(&prog_trap.ours, memory_order_relaxed))
		sigdelset(set, SIGTRAP);
}

/* The kernel's action for sig, if it is not fn: recorded as the
 * program's, fn installed again.  install_lock held. */
bool fault_recheck_action(int sig, void (*fn)(int, siginfo_t *, void *), struct program_action *prog)
{
	struct sigaction cur;
	if (!atomic_load(&prog->ours) || os_sigaction(sig, NULL, &cur) < 0)
		return false;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fn)
		return false;
	fault_filter_mask(&cur.sa_mask);
	fault_program_publish(prog, &cur);
	fault_install_handler(sig, fn, &cur, NULL);
	return true;
}
