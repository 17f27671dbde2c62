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

/* The program's SIGSEGV action; two slots so the handler never reads one
 * being written: writers fill the idle slot, then publish its index. */
static struct sigaction prev_segv[2];
static _Atomic int prev_idx;
static struct sigaction prev_trap;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int installed, audit_installed;

/* The page an audited write was let through on, per thread.  initial-exec:
 * no allocation on first use in a signal handler. */
static __thread uintptr_t audit_page __attribute__((tls_model("initial-exec")));

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
 * making the default action current first (reset() publishes it). */
static void chain(int sig, siginfo_t *si, void *uctx, const struct sigaction *saved,
		  void (*reset)(void))
{
	struct sigaction pa = *saved;
	bool runs = (pa.sa_flags & SA_SIGINFO) ? pa.sa_sigaction != NULL
					       : pa.sa_handler != SIG_DFL && pa.sa_handler != SIG_IGN;
	if (runs) {
		if (pa.sa_flags & SA_RESETHAND)
			reset();
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
		return;                          /* an ignored kill(SIGSEGV) */
	die_by_default(sig, si);
}

static void reset_segv(void)
{
	int cur = atomic_load_explicit(&prev_idx, memory_order_acquire);
	memset(&prev_segv[!cur], 0, sizeof(prev_segv[!cur]));
	prev_segv[!cur].sa_handler = SIG_DFL;
	atomic_store_explicit(&prev_idx, !cur, memory_order_release);
}

static void reset_trap(void)
{
	memset(&prev_trap, 0, sizeof(prev_trap));
	prev_trap.sa_handler = SIG_DFL;
}

static bool audit_let_through(uintptr_t addr, void *uctx)
{
#if defined(__x86_64__)
	uintptr_t page = addr & ~(uintptr_t)(os_page_size - 1);
	if (!atomic_load(&audit_installed) || audit_page || os_protect_rw((void *)page, os_page_size) < 0)
		return false;                /* sealed, or already stepping: enforce */
	audit_page = page;
	((ucontext_t *)uctx)->uc_mcontext.gregs[REG_EFL] |= 0x100;    /* trap flag */
	return true;
#else
	(void)addr;
	(void)uctx;
	return false;
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
		if (hit.in_object) {
			v.object = hit.object;
			v.object_size = hit.object_size;
			v.site_ra = site_address(hit.site);
			v.site_symbol = site_symbol(hit.site);
		}
		v.ip = context_ip(uctx);
		collect_backtrace(&v);
		if (v.audit && !audit_let_through(v.address, uctx))
			v.audit = 0;
		report_violation(&v);
		if (!v.audit)
			die_by_default(sig, si);
		errno = saved;
		return;
	}
	chain(sig, si, uctx, &prev_segv[atomic_load_explicit(&prev_idx, memory_order_acquire)], reset_segv);
	errno = saved;
}

static void on_trap(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
#if defined(__x86_64__)
	if (audit_page) {
		if (os_protect_ro((void *)audit_page, os_page_size) < 0)
			fatal("audit", "cannot protect pool memory again");
		audit_page = 0;
		((ucontext_t *)uctx)->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)0x100;
		errno = saved;
		return;
	}
#endif
	chain(sig, si, uctx, &prev_trap, reset_trap);
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

void fault_install(void)
{
	pthread_mutex_lock(&install_lock);
	if (!atomic_load(&installed)) {
		install(SIGSEGV, on_segv, &prev_segv[0]);
		atomic_store(&prev_idx, 0);
		atomic_store(&installed, 1);
	}
	pthread_mutex_unlock(&install_lock);
}

void fault_enable_audit(void)
{
	pthread_mutex_lock(&install_lock);
	if (!atomic_load(&audit_installed)) {
		install(SIGTRAP, on_trap, &prev_trap);
		atomic_store(&audit_installed, 1);
	}
	pthread_mutex_unlock(&install_lock);
}

int fault_installed(void)
{
	return atomic_load(&installed);
}

int fault_set_program_action(const struct sigaction *act, struct sigaction *old)
{
	int r = 0;
	pthread_mutex_lock(&install_lock);
	if (!atomic_load(&installed)) {
		r = os_sigaction(SIGSEGV, act, old);
	} else {
		int cur = atomic_load(&prev_idx);
		if (old)
			*old = prev_segv[cur];
		if (act) {
			prev_segv[!cur] = *act;
			atomic_store_explicit(&prev_idx, !cur, memory_order_release);
		}
	}
	pthread_mutex_unlock(&install_lock);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}
