/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stress_api_protect - threads racing protect against allocation.
 *
 * Two "raw" threads allocate without writing, from an API pool (pmalloc)
 * and from the policy's site race_alloc() (calloc into pool "shared"),
 * racing the protects inside the pool code.  Two "writer" threads allocate
 * and fill each object with a pattern, holding a read lock that the
 * protecting thread takes for writing: a protect never falls between a
 * writer's allocation and its write, as a correct program arranges.  The
 * main thread protects both pools (pmalloc_protect_pool and the manual
 * trigger, pmalloc_protect_named) ROUNDS times.  The threads record their
 * objects at the pace of the protects (a share per round, which main waits
 * for); past its share a raw thread goes on with small unrecorded objects.
 *
 * Each thread notes how many protects were done when it called the
 * allocator and how many had started when it returned: every protect that
 * starts later must leave the object read-only, which main checks after
 * each round on what was published; an object allocated while no protect
 * started must be writable, which the thread checks at once.  At the end:
 * every object allocated before a protect is read-only, those allocated
 * after the last are writable, no two objects overlap, every writer's
 * object still holds its pattern (nothing written before a protect is
 * lost), calloc's objects read as zero, and the API pool counts exactly the
 * objects it gave.  Prints "rounds N, ..." and "ok"; exit 0 when all held.
 * A write to protected memory would kill it by SIGSEGV with a report, a
 * hang is ended by an alarm.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmalloc.h"

#define RAW 2
#define WRITERS 2
#define THREADS (RAW + WRITERS)
#define ROUNDS 1000
#define RECORD_MAX 50000             /* objects per thread */
#define TAIL 50                      /* objects each thread allocates after the last protect */
#define EXTRA_MAX 200000             /* unrecorded 16-byte objects per raw thread */
#define ALARM_S 60

struct obj {
	unsigned char *p;
	size_t size;
	unsigned long done_before;       /* protects done when the allocation was called */
	unsigned long started_after;     /* protects started when the allocation had returned */
	unsigned char tag;               /* writers: the pattern; 0: not written */
	unsigned char api;               /* from the API pool, else from race_alloc */
};

struct worker {
	pthread_t t;
	unsigned int id;
	struct obj objs[RECORD_MAX];
	_Atomic size_t n;                /* objs[0, n) published */
	size_t checked;                  /* main's: objs[0, checked) seen protected */
	_Atomic size_t extra;             /* unrecorded objects (raw threads) */
	size_t extra_api;                /* of which from the API pool */
};

static struct worker workers[THREADS];
static struct pmalloc_pool *api_pool;
static pthread_rwlock_t gate = PTHREAD_RWLOCK_INITIALIZER;
static _Atomic unsigned long started, done;
static _Atomic int stop;

/* The policy's site: its callers' callocs go to pool "shared". */
__attribute__((noinline)) static void *race_alloc(size_t n)
{
	void *p = calloc(1, n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static void fail(const char *what)
{
	fprintf(stderr, "stress_api_protect: %s\n", what);
	exit(1);
}

/* The objects a thread may have published once `rounds` protects started:
 * paced by the protects, so that allocations race every round; the last
 * TAIL places are for after the last protect. */
static size_t quota(unsigned long rounds)
{
	size_t n = (size_t)(rounds + 1) * (RECORD_MAX - TAIL) / ROUNDS;
	return n < RECORD_MAX - TAIL ? n : RECORD_MAX - TAIL;
}

/* p was allocated when `done` protects were done: unless one started
 * since, it must be writable now. */
static void check_fresh(const void *p, unsigned long done_before)
{
	int prot = pmalloc_is_protected(p);
	if (atomic_load(&started) == done_before && prot != 0)
		fail("an object allocated after a protect is read-only");
}

static void one(struct worker *w, unsigned int *seed, unsigned long i)
{
	size_t n = atomic_load_explicit(&w->n, memory_order_relaxed);
	bool writer = w->id >= RAW, api = i % 2;

	size_t limit = stop ? RECORD_MAX : quota(atomic_load(&started));
	if (n >= limit || n >= RECORD_MAX) {
		/* Unrecorded until the next round: a raw thread goes on racing
		 * the protects with small objects (counted, bounded).  No record
		 * is touched: objs[RECORD_MAX] is past the array (its api byte
		 * was the next global's, api_pool, now and then). */
		if (!writer && w->extra < (atomic_load(&started) + 1) * EXTRA_MAX / ROUNDS && !stop) {
			unsigned long d = atomic_load(&done);
			void *p = api ? pmalloc(api_pool, 16) : race_alloc(16);
			if (!p)
				fail("allocation failed");
			check_fresh(p, d);
			w->extra_api += api;
			w->extra++;
		} else
			sched_yield();
		return;
	}
	struct obj *o = &w->objs[n];
	o->api = api;
	o->size = 1 + (size_t)(rand_r(seed) % 300);
	if (writer)
		pthread_rwlock_rdlock(&gate);
	o->done_before = atomic_load(&done);
	o->p = o->api ? pmalloc(api_pool, o->size) : race_alloc(o->size);
	if (!o->p)
		fail("allocation failed");
	o->started_after = atomic_load(&started);
	check_fresh(o->p, o->done_before);
	o->tag = 0;
	if (writer) {
		o->tag = (unsigned char)(1 + (w->id * 37 + i) % 250);
		memset(o->p, o->tag, o->size);
		pthread_rwlock_unlock(&gate);
	}
	atomic_store_explicit(&w->n, n + 1, memory_order_release);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int seed = w->id * 104729u + 3;
	unsigned long i = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		one(w, &seed, i++);
	return NULL;
}

/* After protect number `rounds` completed: everything published that was
 * allocated before a protect started is read-only. */
static void check_round(unsigned long rounds)
{
	for (int t = 0; t < THREADS; t++) {
		struct worker *w = &workers[t];
		size_t n = atomic_load_explicit(&w->n, memory_order_acquire);
		for (; w->checked < n; w->checked++) {
			const struct obj *o = &w->objs[w->checked];
			if (o->started_after >= rounds)
				break;               /* not necessarily protected yet: next round */
			if (pmalloc_is_protected(o->p) != 1)
				fail("an object allocated before a protect is writable after it");
		}
	}
}

/* Wait until every thread has published n objects. */
static void wait_for_quota(size_t n)
{
	for (int t = 0; t < THREADS; t++)
		while (atomic_load(&workers[t].n) < n)
			sched_yield();
}

static int by_address(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;
	return x->p < y->p ? -1 : x->p > y->p;
}

int main(void)
{
	static struct obj all[THREADS * RECORD_MAX];
	size_t n_all = 0, api_objects = 0, tail_writable = 0;

	alarm(ALARM_S);
	api_pool = pmalloc_create_named_pool("race", 0);
	if (!api_pool)
		return 2;
	for (unsigned int t = 0; t < THREADS; t++) {
		workers[t].id = t;
		if (pthread_create(&workers[t].t, NULL, work, &workers[t]) != 0)
			return 2;
	}
	for (unsigned long r = 1; r <= ROUNDS; r++) {
		/* Each round, the threads have allocated their share first: on
		 * a loaded machine too, every protect races allocations. */
		usleep(200);
		wait_for_quota(quota(atomic_load(&started)));
		pthread_rwlock_wrlock(&gate);
		atomic_fetch_add(&started, 1);
		pmalloc_protect_pool(api_pool);
		if (pmalloc_protect_named("shared") != 0)
			fail("pmalloc_protect_named(\"shared\") failed");
		atomic_fetch_add(&done, 1);
		pthread_rwlock_unlock(&gate);
		check_round(r);
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < THREADS; t++)
		pthread_join(workers[t].t, NULL);
	/* A tail allocated after the last protect: it must stay writable. */
	for (int t = 0; t < THREADS; t++) {
		unsigned int seed = 1;
		for (unsigned long i = 0; i < TAIL; i++)
			one(&workers[t], &seed, i);
	}

	for (int t = 0; t < THREADS; t++) {
		const struct worker *w = &workers[t];
		for (size_t i = 0; i < w->n; i++) {
			const struct obj *o = &w->objs[i];
			int prot = pmalloc_is_protected(o->p);
			if (o->started_after < ROUNDS && prot != 1)
				fail("an object allocated before the last protect is writable");
			if (o->done_before == ROUNDS) {
				if (prot != 0)
					fail("an object allocated after the last protect is read-only");
				tail_writable++;
			}
			for (size_t k = 0; k < o->size; k++)
				if (o->tag ? o->p[k] != o->tag : !o->api && o->p[k] != 0)
					fail(o->tag ? "a writer's object lost its contents"
						    : "a calloc'ed pool object is not zero");
			api_objects += o->api;
			all[n_all++] = *o;
		}
	}
	for (int t = 0; t < THREADS; t++)
		api_objects += workers[t].extra_api;
	qsort(all, n_all, sizeof(all[0]), by_address);
	for (size_t i = 1; i < n_all; i++)
		if (all[i - 1].p + all[i - 1].size > all[i].p)
			fail("two objects overlap");
	struct pmalloc_stats st;
	if (pmalloc_pool_stats(api_pool, &st) != 0 || st.objects != api_objects)
		fail("the API pool does not count the objects it gave");
	if (st.protect_calls == 0 || st.protect_calls > ROUNDS)
		fail("the API pool's protect count is off");
	printf("rounds %d, objects %s, tail writable %zu\n", ROUNDS,
	       n_all >= THREADS * (size_t)(TAIL + ROUNDS) ? "enough" : "too few", tail_writable);
	if (getenv("STRESS_VERBOSE"))
		fprintf(stderr, "objects %zu (api %zu), protect calls %zu\n", n_all, api_objects,
			st.protect_calls);
	printf("ok\n");
	return 0;
}
