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

static _Atomic unsigned int fills;        /* fills under way, all threads */
static _Atomic unsigned int protecting;   /* protects under way */
static __thread unsigned int my_fills __attribute__((tls_model("initial-exec")));

void fill_begin(void)
{
	for (;;) {
		while (atomic_load(&protecting))
			os_yield();
		atomic_fetch_add(&fills, 1);
		if (likely(!atomic_load(&protecting)))
			break;
		atomic_fetch_sub(&fills, 1);   /* a protect came first: let it finish */
	}
	my_fills++;
}

void fill_end(void)
{
	my_fills--;
	atomic_fetch_sub(&fills, 1);
}

void fill_protect_begin(void)
{
	atomic_fetch_add(&protecting, 1);
	while (atomic_load(&fills) > my_fills)
		os_yield();
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
