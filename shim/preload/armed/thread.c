/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thread.c - the shim's own threads in an armed process (thread.h), made
 * one way: none is started where no policy is armed.
 *
 * Such a thread runs none of the program's signal handlers: every signal
 * is blocked on it but those the fault handler must take (fault.c, as the
 * program's own masks get them: sigmask.c), set around pthread_create so
 * that the new thread inherits it and the caller's mask comes back as it
 * was.  Both calls are libc's (REAL): these are not the program's calls.
 * What libc allocates to make the thread (its TLS vector: ld.so's
 * calloc) is the shim's: made with shim_busy set, it goes to the heap,
 * unrouted and unlearned.  Learned as the program's, it was proposed as a
 * site, "libpmalloc_shim.so:shim_thread" (a timer started at a server's
 * listen).
 * Owns nothing after the call returns; never called from a signal handler,
 * nor with a lock of the shim's held (pthread_create takes libc's).
 */
#define _GNU_SOURCE
#include "thread.h"
#include "fault.h"
#include "guard.h"
#include "libc.h"

#include <pthread.h>
#include <signal.h>

bool shim_thread_start(void *(*fn)(void *), const char *name, size_t stack)
{
	typedef int (*create_t)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	create_t create = REAL(pthread_create, create_t);
	typedef int (*mask_t)(int, const sigset_t *, sigset_t *);
	mask_t mask = REAL(pthread_sigmask, mask_t);
	if (!create || !mask)
		return false;
	sigset_t every, old;
	sigfillset(&every);
	fault_filter_mask(&every);
	mask(SIG_SETMASK, &every, &old);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, stack);
	int busy = shim_busy_enter();
	bool ok = create(&t, &attr, fn, NULL) == 0;
	shim_busy_leave(busy);
	if (ok)
		pthread_setname_np(t, name);
	pthread_attr_destroy(&attr);
	mask(SIG_SETMASK, &old, NULL);
	return ok;
}
