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
 * the handler masks set with sigaction (fault.c), and a mask inherited
 * across execve (cleared once at load).  Not covered: a raw rt_sigprocmask
 * system call, and masks restored by setcontext/swapcontext from a
 * ucontext saved before the shim's filter applied.
 *
 * Cost: one sigset copy per call; these calls are not on any fast path.
 * Never allocates on its own behalf (the first call looks libc's function
 * up with dlsym, which may).
 */
#define _GNU_SOURCE
#include "fault.h"
#include "os.h"
#include "shim.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>

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
