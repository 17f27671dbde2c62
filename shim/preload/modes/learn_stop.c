/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * learn_stop.c - in learn mode, when the program began to shut down: a
 * terminating signal (SIGTERM, SIGINT, SIGQUIT) delivered to a handler of
 * the program's.
 *
 * Why: a server stopped as systemctl stop does (SIGTERM) frees its
 * configuration while it tears down (nginx destroys its cycle pool,
 * lighttpd its config contexts); those frees are not frees while serving,
 * and counting them would leave nothing "live" to propose.  What was live
 * when the shutdown began is what the learned entries call live
 * (learn.c asks learn_stopping() before it counts a free).
 *
 * Owns: the program's handler for those three signals while the process
 * learns (the kernel holds a trampoline of ours that notes the delivery,
 * then calls the program's with the flags and mask it asked for, which the
 * kernel applies to the trampoline).  Must never: change a disposition
 * outside learn mode, or the program's SIG_DFL/SIG_IGN, or hand the
 * program back anything but its own handler from sigaction's old action.
 *
 * The shutdown of a process is its ancestors' too, up to STOP_DEPTH: nginx's
 * master, stopped by SIGTERM, tells its workers by its channel (no signal),
 * and they free their cycle before exit.  So each process has a word in a
 * page shared with its children (mapped at start-up, a new one in each
 * forked child, which keeps its parent's): set by the trampoline, read by
 * learn_stopping() in the process and its descendants; never upward.
 *
 * Cost: none per allocation; per counted free of a learn-pool object,
 * up to STOP_DEPTH + 1 loads; one atomic store per delivered signal.
 */
#define _GNU_SOURCE
#include "learn.h"
#include "os.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

#define STOP_SIGS 3

static const int stop_sig[STOP_SIGS] = { SIGTERM, SIGINT, SIGQUIT };
/* The program's handler per signal and whether it takes siginfo; read by
 * the trampoline (atomics: a handler replaced while a signal arrives runs
 * the old or the new one, as the kernel would). */
static _Atomic uintptr_t prog_fn[STOP_SIGS];
static _Atomic int prog_info[STOP_SIGS];
#define STOP_DEPTH 4
static _Atomic int stopping;                  /* when no shared page could be mapped */
static _Atomic int *stop_word;                /* this process's shared word */
static _Atomic int *stop_up[STOP_DEPTH];      /* its ancestors', nearest first */
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
/* Set once by learn_stop_init(), which learn.c calls when learning is
 * armed: this file never asks learn.c (the two would call each other). */
static _Atomic bool stop_armed;

bool learn_stopping(void)
{
	if (atomic_load_explicit(&stopping, memory_order_relaxed))
		return true;
	for (int k = 0; k < STOP_DEPTH && stop_up[k]; k++)
		if (atomic_load_explicit(stop_up[k], memory_order_relaxed))
			return true;
	return false;
}

/* A forked child: its parent's word goes up the chain, and it gets its own
 * (still not stopping, even when the parent is). */
static void stop_after_fork_child(void)
{
	if (!stop_word)
		return;
	memmove(stop_up + 1, stop_up, (STOP_DEPTH - 1) * sizeof(stop_up[0]));
	stop_up[0] = stop_word;
	void *w;
	stop_word = os_map_shared(sizeof(*stop_word), &w) == 0 ? w : NULL;
	atomic_store(&stopping, 0);
}

void learn_stop_init(void)
{
	void *w;
	if (os_map_shared(sizeof(*stop_word), &w) == 0) {
		stop_word = w;
		pthread_atfork(NULL, NULL, stop_after_fork_child);
	}
	atomic_store(&stop_armed, true);
}

static int slot_of(int sig)
{
	for (int k = 0; k < STOP_SIGS; k++)
		if (stop_sig[k] == sig)
			return k;
	return -1;
}

bool learn_stop_signal(int sig)
{
	return atomic_load_explicit(&stop_armed, memory_order_relaxed) && slot_of(sig) >= 0;
}

static void on_stop(int sig, siginfo_t *si, void *uctx)
{
	int k = slot_of(sig);
	atomic_store_explicit(&stopping, 1, memory_order_relaxed);
	if (stop_word)
		atomic_store_explicit(stop_word, 1, memory_order_relaxed);
	if (k < 0)
		return;
	uintptr_t fn = atomic_load_explicit(&prog_fn[k], memory_order_acquire);
	if (!fn)
		return;
	if (atomic_load_explicit(&prog_info[k], memory_order_relaxed))
		((void (*)(int, siginfo_t *, void *))fn)(sig, si, uctx);
	else
		((void (*)(int))fn)(sig);
}

/* old as the program set it: the trampoline replaced by its handler. */
static void as_program(struct sigaction *old, uintptr_t fn, int info)
{
	if (!old || (old->sa_flags & SA_SIGINFO) == 0 || old->sa_sigaction != on_stop)
		return;
	if (info) {
		old->sa_sigaction = (void (*)(int, siginfo_t *, void *))fn;
	} else {
		old->sa_flags &= ~SA_SIGINFO;
		old->sa_handler = (void (*)(int))fn;
	}
}

int learn_stop_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int k = slot_of(sig), r;
	if (k < 0)
		return os_sigaction(sig, act, old);
	pthread_mutex_lock(&stop_lock);
	uintptr_t was_fn = atomic_load(&prog_fn[k]);
	int was_info = atomic_load(&prog_info[k]);
	if (!act) {
		r = os_sigaction(sig, NULL, old);
	} else {
		bool info = (act->sa_flags & SA_SIGINFO) != 0;
		uintptr_t fn = info ? (uintptr_t)act->sa_sigaction : (uintptr_t)act->sa_handler;
		if (!info && (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)) {
			r = os_sigaction(sig, act, old);
		} else {
			/* Published before the kernel can call the trampoline. */
			atomic_store_explicit(&prog_info[k], info, memory_order_relaxed);
			atomic_store_explicit(&prog_fn[k], fn, memory_order_release);
			struct sigaction tramp = *act;
			tramp.sa_flags |= SA_SIGINFO;
			tramp.sa_sigaction = on_stop;
			r = os_sigaction(sig, &tramp, old);
			if (r < 0) {
				atomic_store(&prog_info[k], was_info);
				atomic_store(&prog_fn[k], was_fn);
			}
		}
	}
	if (r == 0)
		as_program(old, was_fn, was_info);
	pthread_mutex_unlock(&stop_lock);
	return r;
}
