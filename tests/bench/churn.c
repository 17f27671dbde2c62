/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * churn - an allocation-heavy workload for measuring the shim's overhead:
 * malloc/free/realloc of 16..512 bytes over a live working set of 8192
 * slots.  Prints the best of several rounds in ns per operation.  Knows
 * nothing of pmalloc; the runner preloads the shim or not.
 *
 *   churn               the workload
 *   churn N             one round of N operations (for callgrind: the
 *                       instruction counts are exact, the times are not)
 *   churn tagged        ns per malloc from a named site (tagged_site) and
 *                       from an unnamed one, objects kept (no free)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 8192
#define OPS 4000000
#define ROUNDS 5
static int ops = OPS, rounds = ROUNDS;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Named by the "never allocates" policy: it exists, it is resolved, and it
 * is never called, so the shim is armed but routes nothing. */
__attribute__((noinline)) void *unused_site(size_t n);
__attribute__((noinline)) void *unused_site(size_t n)
{
	return malloc(n);
}

static uint32_t rng = 12345;
static inline uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static double churn(void)
{
	static void *slot[SLOTS];
	double t0 = now();
	for (int i = 0; i < ops; i++) {
		uint32_t r = next();
		void **s = &slot[r % SLOTS];
		size_t n = 16 + (r >> 16) % 497;
		switch ((r >> 13) & 3) {
		case 0:
		case 1:
			free(*s);
			*s = malloc(n);
			break;
		case 2:
			void *t = realloc(*s, n);
			if (t)
				*s = t;
			break;
		case 3:
			if (*s)
				((char *)*s)[0] = 1;
			break;
		}
	}
	double dt = now() - t0;
	for (int i = 0; i < SLOTS; i++) {
		free(slot[i]);
		slot[i] = NULL;
	}
	return dt;
}

/* Each site's objects are kept (never freed): the figure is malloc's alone. */
static void *volatile kept;

__attribute__((noinline)) static double tagged_site(int n)
{
	double t0 = now();
	for (int i = 0; i < n; i++)
		if (!(kept = malloc(64)))
			abort();
	return now() - t0;
}

__attribute__((noinline)) static double untagged_site(int n)
{
	double t0 = now();
	for (int i = 0; i < n; i++)
		if (!(kept = malloc(64)))
			abort();
	return now() - t0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "tagged") == 0) {
		double bt = 1e9, bu = 1e9;
		for (int r = 0; r < ROUNDS; r++) {
			double u = untagged_site(200000), t = tagged_site(200000);
			bu = u < bu ? u : bu;
			bt = t < bt ? t : bt;
		}
		printf("%.2f %.2f\n", bt / 200000 * 1e9, bu / 200000 * 1e9);
		return 0;
	}
	if (argc > 1 && atoi(argv[1]) > 0) {
		ops = atoi(argv[1]);
		rounds = 1;
	}
	double best = 1e9;
	for (int r = 0; r < rounds; r++) {
		double t = churn();
		best = t < best ? t : best;
	}
	printf("%.2f\n", best / ops * 1e9);
	return 0;
}
