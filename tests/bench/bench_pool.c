/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_pool - pools in one long-lived process: pmalloc against malloc
 * (glibc's, through the shim's forwarding, as a program linked with the
 * shim gets it) for millions of small objects (16..256 bytes) from one and
 * from two threads, and the cost of protecting a 64 MiB pool.  The
 * fresh-process comparison with glibc, jemalloc and mimalloc is alloc_cmp.c.
 *
 *   alloc:      the allocators' own work; the program does not touch the
 *               objects (glibc writes its chunk headers into them, pmalloc
 *               keeps its metadata apart).
 *   alloc+init: every object is written once, as a program initialising
 *               its data would.
 * Ratios are pmalloc time / malloc time (lower is better); the best of
 * several rounds is kept for each, rounds interleaved.
 */
#define _GNU_SOURCE
#include <pmalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 2000000
#define ROUNDS 3

static unsigned sizes[N];
static void *objs[N];

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct job {
	struct pmalloc_pool *pool;   /* NULL: glibc malloc */
	int from, to, init;
};

static void *run(void *arg)
{
	struct job *j = arg;
	for (int i = j->from; i < j->to; i++) {
		void *p = j->pool ? pmalloc(j->pool, sizes[i]) : malloc(sizes[i]);
		if (j->init)
			memset(p, (int)i, sizes[i]);
		objs[i] = p;
	}
	return NULL;
}

/* Seconds for N objects over threads threads, freshly in a new pool or
 * into glibc (whose objects are freed afterwards, so later rounds reuse its
 * memory just as later pools reuse the arena's). */
static double measure(int use_pool, int threads, int init)
{
	struct pmalloc_pool *pool = use_pool ? pmalloc_create_pool() : NULL;
	pthread_t t[8];
	struct job j[8];
	double t0 = now();
	for (int k = 0; k < threads; k++) {
		j[k] = (struct job){ pool, N / threads * k, N / threads * (k + 1), init };
		if (threads == 1)
			run(&j[k]);
		else
			pthread_create(&t[k], NULL, run, &j[k]);
	}
	if (threads > 1)
		for (int k = 0; k < threads; k++)
			pthread_join(t[k], NULL);
	double dt = now() - t0;
	if (pool)
		pmalloc_destroy_pool(pool);
	else
		for (int i = 0; i < N; i++)
			free(objs[i]);
	return dt;
}

static void compare(const char *what, int threads, int init, int bar)
{
	double best_p = 1e9, best_m = 1e9;
	for (int r = 0; r < ROUNDS; r++) {
		double m = measure(0, threads, init), p = measure(1, threads, init);
		if (m < best_m)
			best_m = m;
		if (p < best_p)
			best_p = p;
	}
	double ratio = best_p / best_m;
	printf("pool %-11s %d thread%s  pmalloc %6.1f ns  malloc %6.1f ns  ratio %.2f%s\n", what, threads,
	       threads > 1 ? "s" : " ", best_p / N * 1e9, best_m / N * 1e9, ratio,
	       bar ? (ratio <= 0.5 ? "  (bar <= 0.50: ok)" : "  (bar <= 0.50: MISSED)") : "");
}

int main(void)
{
	srand(1);
	for (int i = 0; i < N; i++)
		sizes[i] = 16 + (unsigned)(rand() % 241);
	compare("alloc", 1, 0, 1);
	compare("alloc", 2, 0, 0);
	compare("alloc+init", 1, 1, 0);
	compare("alloc+init", 2, 1, 0);

	/* Protecting a 64 MiB pool of small objects. */
	struct pmalloc_pool *pool = pmalloc_create_pool();
	size_t total = 0;
	while (total < (64u << 20)) {
		char *p = pmalloc(pool, 128);
		p[0] = 1;
		total += 128;
	}
	double t0 = now();
	pmalloc_protect_pool(pool);
	double t1 = now();
	pmalloc_protect_pool(pool);
	double t2 = now();
	printf("protect    64 MiB pool: %.1f us; again with nothing new: %.2f us\n", (t1 - t0) * 1e6,
	       (t2 - t1) * 1e6);
	pmalloc_destroy_pool(pool);
	return 0;
}
