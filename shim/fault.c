/*
 * fault.c - the SIGSEGV handler.
 *
 * A write to protected pool memory (SEGV_ACCERR inside a span, below its
 * protected mark) is reported, then:
 *   enforce: the default action is restored and the handler returns, so the
 *            write faults again and the process dies by SIGSEGV with a core,
 *            exactly as an unhandled fault would.  The program's own handler
 *            is deliberately not run: a handler that recovers (longjmp) would
 *            let the attacker's write be retried elsewhere.
 *   audit:   the page is made writable, the instruction single-stepped
 *            (x86-64 trap flag) and the page protected again in SIGTRAP.
 * Every other SIGSEGV goes to the handler that was there before (or that
 * the program installs later, through fault_set_program_action), with its
 * flags and mask honoured, or to the default action, re-raised when the
 * signal was sent rather than caused, so a core is still produced.
 *
 * Async-signal-safe: no malloc, no stdio, no locks in the handlers.  The
 * handler runs with SIGSEGV blocked (no SA_NODEFER), so a fault inside it
 * kills the process instead of recursing.
 */
#define _GNU_SOURCE
#include "fault.h"
#include "common.h"
#include "os.h"
#include "pool.h"
#include "report.h"
#include "site.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

/* The program's action for a signal the shim handles first; two slots so
 * the handler never reads one being written: writers (under install_lock)
 * fill the idle slot, then publish its index. */
struct program_action {
	struct sigaction slot[2];
	_Atomic int idx;
	_Atomic int ours;                /* the shim's handler is installed */
};
static struct program_action prog_segv, prog_trap;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct sigaction *program_current(struct program_action *pa)
{
	return &pa->slot[atomic_load_explicit(&pa->idx, memory_order_acquire)];
}

static void program_publish(struct program_action *pa, const struct sigaction *act)
{
	int cur = atomic_load_explicit(&pa->idx, memory_order_relaxed);
	pa->slot[!cur] = *act;
	atomic_store_explicit(&pa->idx, !cur, memory_order_release);
}

/* The pages an audited write was let through on (two when one store
 * straddles a page boundary) and its instruction, per thread.
 * initial-exec: no allocation on first use in a signal handler. */
static __thread uintptr_t audit_pages[2] __attribute__((tls_model("initial-exec")));
static __thread uintptr_t audit_ip __attribute__((tls_model("initial-exec")));

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

struct unwind_state {
	struct violation *v;
	bool started;
};

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_state *st = arg;
	uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
	if (ip == 0)
		return _URC_END_OF_STACK;
	/* Skip the handler's own frames: start at the faulting instruction. */
	if (!st->started) {
		if (ip != st->v->ip)
			return _URC_NO_REASON;
		st->started = true;
		return _URC_NO_REASON;     /* frames[0] is already ip */
	}
	if (st->v->n_frames >= (int)ARRAY_SIZE(st->v->frames))
		return _URC_END_OF_STACK;
	st->v->frames[st->v->n_frames++] = ip;
	return _URC_NO_REASON;
}

static void collect_backtrace(struct violation *v)
{
	v->frames[0] = v->ip;
	v->n_frames = 1;
	struct unwind_state st = { .v = v };
	_Unwind_Backtrace(unwind_step, &st);
}

static void die_by_default(int sig, const siginfo_t *si)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	os_sigaction(sig, &dfl, NULL);
	/* A fault re-faults on return; a sent signal must be sent again. */
	if (si->si_code <= 0)
		syscall(SYS_tgkill, getpid(), gettid(), sig);
}

/* Run the program's action for sig as the kernel would have: its mask
 * (and sig itself unless SA_NODEFER) blocked, and SA_RESETHAND honoured by
 * making the default action current first. */
static void chain(int sig, siginfo_t *si, void *uctx, struct program_action *prog)
{
	struct sigaction pa = *program_current(prog);
	bool runs = (pa.sa_flags & SA_SIGINFO) ? pa.sa_sigaction != NULL
					       : pa.sa_handler != SIG_DFL && pa.sa_handler != SIG_IGN;
	if (runs) {
		if (pa.sa_flags & SA_RESETHAND) {
			struct sigaction dfl;
			memset(&dfl, 0, sizeof(dfl));
			dfl.sa_handler = SIG_DFL;
			program_publish(prog, &dfl);
		}
		sigset_t old, self;
		pthread_sigmask(SIG_BLOCK, &pa.sa_mask, &old);
		if (pa.sa_flags & SA_NODEFER) {
			sigemptyset(&self);
			sigaddset(&self, sig);
			pthread_sigmask(SIG_UNBLOCK, &self, NULL);
		}
		if (pa.sa_flags & SA_SIGINFO)
			pa.sa_sigaction(sig, si, uctx);
		else
			pa.sa_handler(sig);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return;
	}
	if (!(pa.sa_flags & SA_SIGINFO) && pa.sa_handler == SIG_IGN && si->si_code <= 0)
		return;                          /* an ignored kill() */
	die_by_default(sig, si);
}

enum audit_step { AUDIT_REFUSED, AUDIT_FIRST, AUDIT_MORE };

/* Open the faulting page for one instruction (x86-64 trap flag); a store
 * straddling two pages faults twice with the same ip and opens both. */
static enum audit_step audit_let_through(uintptr_t addr, uintptr_t ip, void *uctx)
{
#if defined(__x86_64__)
	uintptr_t page = addr & ~(uintptr_t)(os_page_size - 1);
	enum audit_step step;
	int slot;
	if (!atomic_load(&prog_trap.ours))
		return AUDIT_REFUSED;
	if (!audit_pages[0]) {
		slot = 0;
		step = AUDIT_FIRST;
	} else if (!audit_pages[1] && ip == audit_ip) {
		slot = 1;
		step = AUDIT_MORE;
	} else {
		return AUDIT_REFUSED;
	}
	if (os_protect_rw((void *)page, os_page_size) < 0)
		return AUDIT_REFUSED;            /* sealed: enforce */
	audit_pages[slot] = page;
	audit_ip = ip;
	((ucontext_t *)uctx)->uc_mcontext.gregs[REG_EFL] |= 0x100;    /* trap flag */
	return step;
#else
	(void)addr;
	(void)ip;
	(void)uctx;
	return AUDIT_REFUSED;
#endif
}

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
	struct pool_hit hit;
	if (si->si_code == SEGV_ACCERR && pool_lookup(si->si_addr, &hit) && hit.is_protected) {
		struct violation v;
		memset(&v, 0, sizeof(v));
		v.pool = hit.pool->name[0] ? hit.pool->name : "(unnamed)";
		v.policy = hit.pool->policy;
		v.audit = atomic_load_explicit(&hit.pool->mode, memory_order_relaxed) == POOL_AUDIT;
		v.address = (uintptr_t)si->si_addr;
		v.ip = context_ip(uctx);
		enum audit_step step = v.audit ? audit_let_through(v.address, v.ip, uctx) : AUDIT_REFUSED;
		if (step == AUDIT_MORE) {
			errno = saved;
			return;                  /* the same store, already reported */
		}
		v.audit = step == AUDIT_FIRST;
		if (hit.in_object) {
			v.object = hit.object;
			v.object_size = hit.object_size;
			v.site_ra = site_address(hit.site);
			v.site_symbol = site_symbol(hit.site);
		}
		collect_backtrace(&v);
		report_violation(&v);
		if (!v.audit)
			die_by_default(sig, si);
		errno = saved;
		return;
	}
	chain(sig, si, uctx, &prog_segv);
	errno = saved;
}

static void on_trap(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
#if defined(__x86_64__)
	if (audit_pages[0]) {
		for (int i = 0; i < 2; i++)
			if (audit_pages[i] && os_protect_ro((void *)audit_pages[i], os_page_size) < 0)
				fatal("audit", "cannot protect pool memory again");
		audit_pages[0] = audit_pages[1] = 0;
		((ucontext_t *)uctx)->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)0x100;
		errno = saved;
		return;
	}
#endif
	chain(sig, si, uctx, &prog_trap);
	errno = saved;
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *old)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (os_sigaction(sig, &sa, old) < 0)
		fatal("pmalloc_create_pool", "cannot install the fault handler");
}

static void take_over(int sig, void (*fn)(int, siginfo_t *, void *), struct program_action *prog)
{
	pthread_mutex_lock(&install_lock);
	if (!atomic_load(&prog->ours)) {
		install(sig, fn, &prog->slot[0]);
		atomic_store(&prog->idx, 0);
		atomic_store(&prog->ours, 1);
	}
	pthread_mutex_unlock(&install_lock);
}

void fault_install(void)
{
	take_over(SIGSEGV, on_segv, &prog_segv);
}

void fault_enable_audit(void)
{
	take_over(SIGTRAP, on_trap, &prog_trap);
}

int fault_set_program_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct program_action *prog = sig == SIGSEGV ? &prog_segv : sig == SIGTRAP ? &prog_trap : NULL;
	int r = 0;
	pthread_mutex_lock(&install_lock);
	if (!prog || !atomic_load(&prog->ours)) {
		r = os_sigaction(sig, act, old);
	} else {
		if (old)
			*old = *program_current(prog);
		if (act)
			program_publish(prog, act);
	}
	pthread_mutex_unlock(&install_lock);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}
