/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fill.c - the shim's own writes into the pool objects it hands out
 * (strdup's and strndup's copy, realloc's move of a pool object) must
 * never meet a protect half-way: the copy would fault inside the shim and
 * be reported as the program's write.  A fill (allocation plus copy) and a
 * protect exclude each other: two counters in the way of Dekker
 * (sequentially consistent atomics), no lock, so nothing is held across a
 * fork and nothing waits on a program's code.  Only pool routes pay for it
 * (two atomic operations); heap routes never come here.
 *
 * A protect waits for the fills under way in other threads, which end
 * after one bounded copy; a fill waits for a protect under way (a few
 * mprotect calls).  A protect from a signal handler that interrupted this
 * thread's own fill does not wait for it.  After fork() the child has one
 * thread: its counts start again from zero.
 */
#define _GNU_SOURCE
#include "fill.h"
#include "common.h"
#include "os.h"

#include <pthread.h>

/* Writable words that only ever make a protect or a fill wait, never
 * skip: and each wait is bounded (FILL_WAIT_NS, far longer than a copy or
 * a protect takes), after which it goes ahead.  A count forged high then
 * costs a second's delay, never a protect that does not happen; a protect
 * that really overlapped a shim's copy makes that copy fault, reported
 * and enforced as any write. */
static _Atomic unsigned int fills;        /* fills under way, all threads */
static _Atomic unsigned int protecting;   /* protects under way */
static __thread unsigned int my_fills __attribute__((tls_model("initial-exec")));

#define FILL_WAIT_NS UINT64_C(1000000000)

/* Until *deadline (0: not started), through a coarse clock: false once
 * it has passed. */
static bool keep_waiting(uint64_t *deadline)
{
	uint64_t now = os_monotonic_ns(true);
	if (!*deadline)
		*deadline = now + FILL_WAIT_NS;
	else if (now > *deadline)
		return false;
	os_yield();
	return true;
}

void fill_begin(void)
{
	uint64_t deadline = 0;
	for (;;) {
		while (atomic_load(&protecting) && keep_waiting(&deadline))
			;
		if (deadline && os_monotonic_ns(true) > deadline)
			break;
		atomic_fetch_add(&fills, 1);
		if (likely(!atomic_load(&protecting)))
			goto counted;
		atomic_fetch_sub(&fills, 1);   /* a protect came first: let it finish */
	}
	atomic_fetch_add(&fills, 1);
counted:
	my_fills++;
}

void fill_end(void)
{
	my_fills--;
	atomic_fetch_sub(&fills, 1);
}

void fill_protect_begin(void)
{
	uint64_t deadline = 0;
	atomic_fetch_add(&protecting, 1);
	while (atomic_load(&fills) > my_fills && keep_waiting(&deadline))
		;
}

void fill_protect_end(void)
{
	atomic_fetch_sub(&protecting, 1);
}

static void fill_after_fork(void)
{
	atomic_store(&fills, 0);
	atomic_store(&protecting, 0);
	my_fills = 0;
}

__attribute__((constructor)) static void fill_init(void)
{
	pthread_atfork(NULL, NULL, fill_after_fork);
}
