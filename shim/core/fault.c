/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fault.c - the SIGSEGV and SIGTRAP handlers: what a fault is and what
 * it gets, from the read-only decisions this file owns (ro, armed by
 * fault_arm).  Must never decide from a writable word alone.
 *
 * A write to protected pool memory (SEGV_ACCERR inside a span, below its
 * protected mark) is reported, then:
 *   enforce: the default action is restored and the handler returns, so the
 *            write faults again and the process dies by SIGSEGV with a core,
 *            exactly as an unhandled fault would.  The program's own handler
 *            is deliberately not run: a handler that recovers (longjmp) would
 *            let the attacker's write be retried elsewhere.
 *   audit:   the page is made writable in an audit window (audit.c: one at
 *            a time, other threads' writes meanwhile found by comparison),
 *            the instruction single-stepped (x86-64 trap flag) and the page
 *            protected again in SIGTRAP.
 *   learn:   learn.c opens the page for good (learn.h).
 * Which of the three, and whether the pool is the interposition's at all,
 * is read from one page (ro below) that is read-only from the first pool
 * on and never from the pool structs, spans or any other writable word:
 * an attacker who can write the heap or the shim's data cannot turn
 * enforcement into audit without first undoing an mprotect.  Writable
 * words still on the way (a span's owner, its protected mark) can only
 * make a write look like no pool's (the program's own SIGSEGV disposition:
 * death by default) or like another pool's, which is enforced unless the
 * read-only page names it and the address lies in the interposition's
 * units (arena.c's read-only map).
 * Every other SIGSEGV goes to the handler that was there before (or that
 * the program installs later, through fault_set_program_action), with its
 * flags and mask honoured, or to the default action, re-raised when the
 * signal was sent rather than caused, so a core is still produced.
 *
 * Report first, then enrich: the report line is written before anything
 * that can fault again; the stack walk (fault_walk.c) comes after it.
 * The signal actions, the shim's installed and the program's kept
 * read-only, are fault_actions.c's; what the three share: fault_inner.h.
 *
 * Async-signal-safe: no malloc, no stdio, no locks in the handlers but the
 * report and audit-window spin locks.  Outside the walk the handler runs
 * with SIGSEGV blocked (no SA_NODEFER).  SIGSEGV and SIGTRAP are never
 * blocked by the program (sigmask.c): a blocked synchronous fault signal
 * kills without running any handler.
 */
#define _GNU_SOURCE
#include "stderr.h"
#include "guard.h"
#include "hooks.h"
#include "common.h"
#include "os.h"
#include "ro.h"
#include "pool.h"
#include "report.h"
#include "audit.h"
#include "life.h"
#include "site.h"
#include "fmt.h"
#include "pmalloc.h"
#include "fault_inner.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* The decisions, in a page of their own (hardened_malloc's ro, OpenBSD's
 * malloc_readonly): all zeros, i.e. enforce for every pool, until init.c
 * arms the interposition's pools; read-only from the first
 * fault_install() on (or from fault_arm(), when the policy's pools come
 * first), written once more only by fault_arm() at start-up
 * (and sealed under protection = "seal").  The handler reaches it at a
 * link-time address: no writable pointer leads to it. */
struct fault_ro {
	int mode;                           /* enum fault_mode */
	bool armed;
	size_t n_pools;
	const struct pmalloc_pool *pools[FAULT_POOLS_MAX];
	bool (*learn)(const struct pool_hit *, uintptr_t);
	bool (*reload)(const struct pool_hit *, uintptr_t);
	char policy[POOL_NAME];             /* the reports' names of the armed pools */
	char names[FAULT_POOLS_MAX][POOL_NAME];
};
static union {
	struct fault_ro s;
	unsigned char page[RO_PAGE];
} ro __attribute__((aligned(RO_PAGE)));
const struct ro_span fault_ro_span = { &ro, sizeof(ro) };   /* ro.h: init.c lists it */
static_assert(sizeof(ro) == RO_PAGE, "the read-only state is one page");
static_assert(sizeof(struct fault_ro) <= RO_PAGE, "the read-only state fits its page");
static _Atomic int ro_locked;            /* ro is read-only (a writable hint: protecting twice is harmless) */

/* Set when this thread's context was given the trap flag by the shim: the
 * next SIGTRAP on it is ours.  initial-exec: no allocation on first use in
 * a signal handler. */
static __thread int step_armed __attribute__((tls_model("initial-exec")));

static uintptr_t context_ip(const void *uctx)
{
	const ucontext_t *uc = uctx;
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

static void die_by_default(int sig, const siginfo_t *si)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	os_sigaction(sig, &dfl, NULL);
	/* A fault re-faults on return; a sent signal must be sent again. */
	if (si->si_code <= 0)
		(void)os_signal_self(sig);
}

/* Run the program's action for sig as the kernel would have: its mask
 * (and sig itself unless SA_NODEFER) blocked, and SA_RESETHAND honoured by
 * making the default action current first. */
static void chain(int sig, siginfo_t *si, void *uctx, struct program_action *prog)
{
	struct sigaction pa = *fault_program_current(prog);
	bool runs = (pa.sa_flags & SA_SIGINFO) ? pa.sa_sigaction != NULL
					       : pa.sa_handler != SIG_DFL && pa.sa_handler != SIG_IGN;
	if (runs) {
		if (pa.sa_flags & SA_RESETHAND) {
			struct sigaction dfl;
			memset(&dfl, 0, sizeof(dfl));
			dfl.sa_handler = SIG_DFL;
			fault_program_publish(prog, &dfl);
		}
		sigset_t old, self;
		os_sigmask(SIG_BLOCK, &pa.sa_mask, &old);
		if (pa.sa_flags & SA_NODEFER) {
			sigemptyset(&self);
			sigaddset(&self, sig);
			os_sigmask(SIG_UNBLOCK, &self, NULL);
		}
		if (pa.sa_flags & SA_SIGINFO)
			pa.sa_sigaction(sig, si, uctx);
		else
			pa.sa_handler(sig);
		os_sigmask(SIG_SETMASK, &old, NULL);
		return;
	}
	if (!(pa.sa_flags & SA_SIGINFO) && pa.sa_handler == SIG_IGN && si->si_code <= 0)
		return;                          /* an ignored kill() */
	die_by_default(sig, si);
}

static void set_trap_flag(void *uctx, bool on)
{
#if defined(__x86_64__)
	greg_t *efl = &((ucontext_t *)uctx)->uc_mcontext.gregs[REG_EFL];
	*efl = on ? *efl | 0x100 : *efl & ~(greg_t)0x100;
#else
	(void)uctx;
	(void)on;
#endif
}

/* Audit: open the faulting page for one instruction (x86-64 trap flag) in
 * this thread's window (audit.c).  False when it cannot be let through. */
static bool audit_let_through(uintptr_t addr, uintptr_t ip, void *uctx)
{
#if defined(__x86_64__)
	if (audit_window_add(addr, ip) < 0)
		return false;
	set_trap_flag(uctx, true);
	step_armed = 1;
	return true;
#else
	(void)addr;
	(void)ip;
	(void)uctx;
	return false;
#endif
}

/* The armed pool p is, or -1. */
static int armed_index(const struct pmalloc_pool *p)
{
	for (size_t i = 0; i < ro.s.n_pools && i < FAULT_POOLS_MAX; i++)
		if (ro.s.pools[i] == p)
			return (int)i;
	return -1;
}

enum fault_mode fault_mode_of(const struct pool_hit *hit)
{
	int mode = ro.s.mode;
	if (likely(mode == FAULT_ENFORCE))
		return FAULT_ENFORCE;
	/* Only the pools armed here ever audit or learn: an API pool, or a
	 * pool pointer that is none of them (a span's owner overwritten), is
	 * enforced. */
	if (armed_index(hit->pool) < 0 || !arena_interposed((const void *)hit->addr))
		return FAULT_ENFORCE;
	return mode == FAULT_AUDIT ? FAULT_AUDIT : mode == FAULT_LEARN ? FAULT_LEARN : FAULT_ENFORCE;
}

void fault_names(const struct pool_hit *hit, const char **ret_pool, const char **ret_policy)
{
	int i = armed_index(hit->pool);
	if (i >= 0) {
		*ret_pool = ro.s.names[i];
		*ret_policy = ro.s.policy;
		return;
	}
	/* An API pool's own label; one not ended within its field (the
	 * struct overwritten) is not read on. */
	const char *name = hit->pool->name;
	*ret_pool = name[0] && memchr(name, '\0', POOL_NAME) ? name : "(unnamed)";
	*ret_policy = "";
}

/* Can a write into hit's pool be let through?  Audit pools, not sealed
 * (mprotect fails on sealed memory), where single-stepping works.  The
 * flag and the trap handler's word can only take audit away. */
static bool audit_applies(const struct pool_hit *hit, enum fault_mode mode)
{
#if defined(__x86_64__)
	return mode == FAULT_AUDIT && !pool_seals(hit->pool) && atomic_load(&prog_trap.ours);
#else
	(void)hit;
	(void)mode;
	return false;
#endif
}

static cold void audit_failed(void)
{
	char buf[128];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_line_start(&f);
	fmt_str(&f, "the audited write cannot be let through; killed by SIGSEGV\n");
	fmt_flush_stderr(&f);
}

static void on_violation(int sig, siginfo_t *si, void *uctx, const struct pool_hit *hit, enum fault_mode mode)
{
	uintptr_t address = (uintptr_t)si->si_addr, ip = context_ip(uctx);
	bool audit = audit_applies(hit, mode);
	/* The second page of a store straddling two: the same write. */
	if (audit && audit_window_continues(address, ip)) {
		if (audit_let_through(address, ip, uctx))
			return;
		audit_failed();
		die_by_default(sig, si);
		return;
	}
	/* Reported once per site and process: a later write is counted and
	 * its page left open (audit.c). */
	if (audit && hit->in_object && !audit_site_first(hit->site) && audit_repeat(address, hit->site) == 0)
		return;
	/* The line first; the walk, which may fault, after it; the page is
	 * opened last, so the window other threads could write through
	 * unseen is as short as it can be. */
	const char *pool, *policy;
	fault_names(hit, &pool, &policy);
	report_end(report_begin(hit, pool, policy, address, ip, audit), fault_walk_backtrace, NULL);
	if (audit && audit_let_through(address, ip, uctx))
		return;
	if (audit)
		audit_failed();
	die_by_default(sig, si);
}

/* A write fault inside the arena (its range read-only, arena.h) that the
 * writable side tables do not explain as a protected pool object's: no
 * span, a span's owner that is no pool, a mark that says not protected.
 * Pool memory is only ever read-only or reserved, so it is a write to pool
 * memory all the same, enforced: never the program's handler, whatever
 * was overwritten.  Reported as any violation (stderr line, journal or
 * pmallocd), its pool named as unknown: one word zeroed (a pool's magic,
 * a unit head) must not turn a kill into a silent one. */
static cold void unexplained_pool_write(int sig, siginfo_t *si, void *uctx)
{
	struct pool_hit hit;
	memset(&hit, 0, sizeof(hit));
	hit.addr = (uintptr_t)si->si_addr;
	hit.is_protected = true;
	int busy = shim_busy_enter();
	report_end(report_begin(&hit, "(unknown: corrupt pool state)", ro.s.armed ? ro.s.policy : "",
				(uintptr_t)si->si_addr, context_ip(uctx), false),
		   fault_walk_backtrace, NULL);
	shim_busy_leave(busy);
	die_by_default(sig, si);
}

/* A write from the thread that began exit (life.c): its page made
 * writable for the rest of the process's short life.  False when exit has
 * not begun on this thread, or the page cannot be opened (sealed). */
static bool exit_let_through(uintptr_t addr)
{
	if (likely(!life_exiting_here()))
		return false;
	uintptr_t page = addr & ~(uintptr_t)(os_page_size - 1);
	return os_protect_rw((void *)page, os_page_size) == 0;
}

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
	if (si->si_code > 0 && fault_walk_fault())
		return;                          /* not reached */
	struct pool_hit hit;
	if (si->si_code == SEGV_ACCERR && pool_lookup(si->si_addr, &hit) && hit.is_protected &&
	    pool_valid(hit.pool)) {
		/* Nothing the handler calls allocates; anything that does anyway
		 * (a sanitizer's report) gets the heap, never a site look-up. */
		int busy = shim_busy_enter();
		enum fault_mode mode = fault_mode_of(&hit);
		uintptr_t addr = (uintptr_t)si->si_addr;
		/* Exit's cleanup (life.h): the page opened and the store retried,
		 * neither reported nor learned; sealed memory cannot be opened and
		 * is enforced as before.  A reload under way (reload.c), whatever
		 * the mode, for the armed pools only; then learn mode.  Either way
		 * the page is writable now and the store is retried. */
		bool reload = ro.s.reload && armed_index(hit.pool) >= 0 && arena_interposed((const void *)addr) &&
			      ro.s.reload(&hit, addr);
		if (!reload && !exit_let_through(addr) &&
		    !(mode == FAULT_LEARN && ro.s.learn && ro.s.learn(&hit, addr)))
			on_violation(sig, si, uctx, &hit, mode);
		shim_busy_leave(busy);
	} else if (si->si_code == SEGV_ACCERR && arena_contains(si->si_addr)) {
		unexplained_pool_write(sig, si, uctx);
	} else {
		chain(sig, si, uctx, &prog_segv);
	}
	errno = saved;
}

static void on_trap(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
	if (audit_window_mine() || step_armed) {
#if defined(__x86_64__)
		const ucontext_t *uc = uctx;
		if (audit_window_stepping(context_ip(uctx), (uintptr_t)uc->uc_mcontext.gregs[REG_RDI])) {
			errno = saved;
			return;          /* the trap flag stays: next iteration */
		}
#endif
		if (audit_window_mine())
			audit_window_close();
		step_armed = 0;
		set_trap_flag(uctx, false);
		errno = saved;
		return;
	}
	chain(sig, si, uctx, &prog_trap);
	errno = saved;
}

/* ro read-only, once there is a pool whose writes it decides.  It cannot
 * fail but for want of memory mappings: then the process cannot be kept
 * safe and says so (fatal), as a failed mprotect of a pool does.  Arming's
 * freeze (fault_arm) is held with its other freezes and done with the
 * program's actions' page beside it, under the install lock (ro.h): a
 * failure is then arming's, which runs unprotected and says so, and the
 * next lock tries again. */
static void ro_lock(void)
{
	if (atomic_load(&ro_locked))
		return;
	if (ro_freeze_locked(&ro, sizeof(ro), fault_install_lock_take, fault_install_lock_give) < 0)
		fatal("pmalloc_create_pool", "cannot make the fault handler's state read-only");
	/* Put off, the hint stays clear: a later lock (an API pool's, or a
	 * start-up whose release failed) freezes it again, fatal as ever. */
	if (!ro_held(&ro, sizeof(ro)))
		atomic_store(&ro_locked, 1);
}

static void install_segv(bool lock)
{
	fault_walk_init();
	report_init();
	if (lock) {
		fault_install_lock_take();
		ro_lock();
		fault_install_lock_give();
	}
	fault_take_over(SIGSEGV, on_segv, &prog_segv);
}

void fault_install(void)
{
	install_segv(true);
}

void fault_install_for_arm(void)
{
	install_segv(false);
}

static void copy_name(char dst[POOL_NAME], const char *src)
{
	size_t len = strnlen(src, POOL_NAME - 1);
	memcpy(dst, src, len);
	dst[len] = '\0';
}

int fault_arm(enum fault_mode mode, struct pmalloc_pool *const *pools, size_t n,
	      bool (*learn)(const struct pool_hit *hit, uintptr_t addr),
	      bool (*reload)(const struct pool_hit *hit, uintptr_t addr), bool seal)
{
	if (n > FAULT_POOLS_MAX)
		return -E2BIG;
	fault_install_lock_take();
	/* Still writable (and never armed: arming locks it) when no API pool
	 * locked it first; then written before it is read, one fault not two. */
	bool locked = atomic_load(&ro_locked);
	int r = !locked ? 0 : ro.s.armed ? -EBUSY : os_protect_rw(&ro, sizeof(ro));
	if (r == 0) {
		ro.s.mode = mode;
		ro.s.n_pools = n;
		for (size_t i = 0; i < n; i++) {
			ro.s.pools[i] = pools[i];
			copy_name(ro.s.names[i], pools[i]->name[0] ? pools[i]->name : "(unnamed)");
		}
		copy_name(ro.s.policy, n ? pools[0]->policy : "");
		ro.s.learn = learn;
		ro.s.reload = reload;
		ro.s.armed = true;
		atomic_store(&ro_locked, 0);
		ro_lock();
		if (seal && os_have_mseal && os_seal(&ro, sizeof(ro)) < 0)
			fatal("pmalloc", "cannot seal the fault handler's state");
	}
	fault_install_lock_give();
	return r;
}

void fault_enable_audit(void)
{
	static atomic_flag forked = ATOMIC_FLAG_INIT;
	if (!atomic_flag_test_and_set(&forked))
		pthread_atfork(NULL, NULL, audit_after_fork_child);
	audit_init();
	fault_take_over(SIGTRAP, on_trap, &prog_trap);
}

static void notice(unsigned int kind, const char *what)
{
	if (core_hook.fault_notice)
		core_hook.fault_notice(kind, what);
	else
		debug_printf("%s", what);
}

/* When fault_recheck last looked, unless forced (a writable hint: forged,
 * it delays a look by FAULT_RECHECK_EVERY_NS at most; fault.h). */
_Atomic uint64_t fault_recheck_last;

int fault_recheck(bool force)
{
	int fixed = 0;
	uint64_t now = os_monotonic_ns(true);
	if (!force && !fault_recheck_due(now))
		return 0;
	atomic_store_explicit(&fault_recheck_last, now, memory_order_relaxed);
	fault_install_lock_take();
	bool segv = fault_recheck_action(SIGSEGV, on_segv, &prog_segv);
	bool trap = fault_recheck_action(SIGTRAP, on_trap, &prog_trap);
	fault_install_lock_give();
	sigset_t cur;
	bool held = os_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, SIGSEGV) == 1;
	if (held) {
		sigset_t segv_set;
		sigemptyset(&segv_set);
		sigaddset(&segv_set, SIGSEGV);
		(void)os_sigmask(SIG_UNBLOCK, &segv_set, NULL);
	}
	if (segv) {
		notice(PMW_NOTICE_SEGV_REPLACED, "the SIGSEGV handler was replaced behind the shim (not through sigaction or signal):"
		       " the shim's is installed again, the program's kept for faults that are not pool writes");
		fixed++;
	}
	if (trap) {
		notice(PMW_NOTICE_TRAP_REPLACED, "the SIGTRAP handler was replaced behind the shim: the shim's is installed again");
		fixed++;
	}
	if (held) {
		notice(PMW_NOTICE_SEGV_BLOCKED, "SIGSEGV was blocked on the protecting thread (a blocked fault signal kills without a"
		       " report): unblocked");
		fixed++;
	}
	return fixed;
}

int fault_set_program_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct program_action *prog = sig == SIGSEGV ? &prog_segv : sig == SIGTRAP ? &prog_trap : NULL;
	struct sigaction copy;
	int r = 0;
	if (act) {
		/* No handler may block a fault signal while it runs (sigmask.c). */
		copy = *act;
		fault_filter_mask(&copy.sa_mask);
		act = &copy;
	}
	fault_install_lock_take();
	if (!prog || !atomic_load(&prog->ours)) {
		r = os_sigaction(sig, act, old);
	} else {
		if (old)
			*old = *fault_program_current(prog);
		if (act) {
			fault_program_publish(prog, act);
			fault_install_handler(sig, sig == SIGSEGV ? on_segv : on_trap, act, NULL);
		}
	}
	fault_install_lock_give();
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}
