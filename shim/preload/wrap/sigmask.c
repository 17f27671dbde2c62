/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sigmask.c - the signal-mask calls, interposed so that no thread ever
 * blocks the fault signals the shim needs: SIGSEGV always, SIGTRAP while
 * audit pools exist (fault_filter_mask says which).
 *
 * Why: a write fault is synchronous.  When its signal is blocked the kernel
 * does not queue it; it unblocks it, resets the action to SIG_DFL and kills
 * the thread's process on the spot (force_sig), so the shim's handler never
 * runs: no report in enforce mode, a death instead of a report in audit
 * mode.  Threads that block "everything" (liblzma's workers, thread pools
 * with pthread_sigmask(SIG_BLOCK, full set)) are common.  Blocking a
 * synchronous fault signal has no other effect than that death, so leaving
 * it out changes nothing a program can rely on; a SIGSEGV sent by kill(2)
 * to such a thread is delivered (to the program's handler, or the default
 * action) instead of staying pending.
 *
 * Covered: sigprocmask, pthread_sigmask, the BSD/SysV sigblock, sigsetmask
 * and sighold, the mask of threads created with pthread_attr_setsigmask_np,
 * the handler masks set with sigaction (fault.c), a mask inherited across
 * execve (cleared once at load), the masks restored by siglongjmp and
 * longjmp (a jump buffer saved in a handler, with SIGSEGV blocked) and by
 * setcontext and swapcontext.  Not covered: a raw rt_sigprocmask system
 * call, found at the next protect on the protecting thread (fault.c's
 * fault_recheck).
 *
 * Cost: one sigset copy per call; these calls are not on any fast path.
 * Never allocates on its own behalf (the first call looks libc's function
 * up with dlsym, which may).
 */
#define _GNU_SOURCE
/* Fortified, <setjmp.h> renames longjmp and siglongjmp to __longjmp_chk:
 * this file defines all four names itself. */
#undef _FORTIFY_SOURCE
#include "fault.h"
#include "stderr.h"
#include "os.h"
#include "armed.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
typedef int (*attr_fn)(pthread_attr_t *, const sigset_t *);

/* libc's functions, looked up at load (the constructor below; libc.h's
 * read-only table from init.c's on): mask calls are common in signal
 * handlers, where dlsym must not run.  Looked up on first use when a call
 * comes before the constructor. */


/* how/set as the program gave them, with the fault signals left out of
 * what it would block. */
static const sigset_t *filtered(int how, const sigset_t *set, sigset_t *copy)
{
	if (!set || how == SIG_UNBLOCK)
		return set;
	*copy = *set;
	fault_filter_mask(copy);
	return copy;
}

PMALLOC_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	mask_fn fn = REAL(pthread_sigmask, mask_fn);
	if (!fn)
		return ENOSYS;
	sigset_t copy;
	return fn(how, filtered(how, set, &copy), old);
}

PMALLOC_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	mask_fn fn = REAL(sigprocmask, mask_fn);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	sigset_t copy;
	return fn(how, filtered(how, set, &copy), old);
}

/* The old BSD interface: a mask of the first 31 signals as an int. */
static int bsd_mask(int how, int mask)
{
	sigset_t set, old;
	sigemptyset(&set);
	for (int s = 1; s < 32; s++)
		if (mask & (1 << (s - 1)))
			sigaddset(&set, s);
	if (sigprocmask(how, &set, &old) < 0)
		return -1;
	int r = 0;
	for (int s = 1; s < 32; s++)
		if (sigismember(&old, s) == 1)
			r |= 1 << (s - 1);
	return r;
}

PMALLOC_EXPORT int sigblock(int mask)
{
	return bsd_mask(SIG_BLOCK, mask);
}

PMALLOC_EXPORT int sigsetmask(int mask)
{
	return bsd_mask(SIG_SETMASK, mask);
}

PMALLOC_EXPORT int sighold(int sig)
{
	sigset_t set;
	sigemptyset(&set);
	if (sigaddset(&set, sig) < 0)
		return -1;
	return sigprocmask(SIG_BLOCK, &set, NULL);
}

PMALLOC_EXPORT int pthread_attr_setsigmask_np(pthread_attr_t *attr, const sigset_t *set)
{
	attr_fn fn = REAL(pthread_attr_setsigmask_np, attr_fn);
	if (!fn)
		return ENOSYS;
	sigset_t copy;
	return fn(attr, filtered(SIG_SETMASK, set, &copy));
}

/* A mask inherited across execve may block SIGSEGV already. */
__attribute__((constructor)) static void sigmask_init(void)
{
	(void)REAL(pthread_sigmask, mask_fn);
	(void)REAL(sigprocmask, mask_fn);
	(void)REAL(pthread_attr_setsigmask_np, attr_fn);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGSEGV);
	os_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* The saved mask a jump restores, with the fault signals left out; the
 * buffer is the program's, writable (it wrote it with sigsetjmp). */
static void filter_jump(struct __jmp_buf_tag *env)
{
	if (env && env->__mask_was_saved)
		fault_filter_mask((sigset_t *)&env->__saved_mask);
}

typedef void (*jump_fn)(struct __jmp_buf_tag *, int);

/* One for each of libc's names: glibc's longjmp restores a saved mask as
 * siglongjmp does, and a fortified program calls __longjmp_chk. */
#define JUMP(name) \
	PMALLOC_EXPORT __attribute__((noreturn)) void name(struct __jmp_buf_tag env[1], int val) \
	{ \
		filter_jump(env); \
		jump_fn fn = REAL(name, jump_fn); \
		if (!fn) \
			fatal(#name, "glibc's " #name " not found"); \
		fn(env, val); \
		__builtin_unreachable(); \
	}
JUMP(siglongjmp)
JUMP(longjmp)
JUMP(_longjmp)
void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
JUMP(__longjmp_chk)

/* A context's mask, as a copy of it with the fault signals left out (the
 * program's ucontext is const here). */
typedef int (*setcontext_fn)(const ucontext_t *);
typedef int (*swapcontext_fn)(ucontext_t *, const ucontext_t *);

PMALLOC_EXPORT int setcontext(const ucontext_t *ucp)
{
	setcontext_fn fn = REAL(setcontext, setcontext_fn);
	if (!fn || !ucp) {
		errno = fn ? EINVAL : ENOSYS;
		return -1;
	}
	ucontext_t copy = *ucp;
	fault_filter_mask(&copy.uc_sigmask);
	return fn(&copy);
}

PMALLOC_EXPORT int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	swapcontext_fn fn = REAL(swapcontext, swapcontext_fn);
	if (!fn || !ucp) {
		errno = fn ? EINVAL : ENOSYS;
		return -1;
	}
	ucontext_t copy = *ucp;
	fault_filter_mask(&copy.uc_sigmask);
	return fn(oucp, &copy);
}
