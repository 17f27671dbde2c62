/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * alloc_cmp - one allocator, N small objects (16..256 bytes, the same
 * sequence every run), in a fresh process: the figure a real caller pays.
 *
 *   alloc_pool N [write]           pmalloc() from one pool
 *   alloc_glibc|alloc_jemalloc|alloc_mimalloc N [write]
 *                                  that malloc, alone in the process
 *
 * The Makefile builds one binary per allocator from this file: the pool's
 * with the shim (-DWITH_POOL), the others without it, so their malloc is
 * not the shim's forwarding one.  With "write"
 * each object is written once after it is allocated, as a program
 * initialising its data does.  Prints nanoseconds per object.  Under
 * callgrind, the runner counts the instructions of the allocation function
 * alone (--toggle-collect), so the loop and the writes do not count.
 *
 * Prints nanoseconds per object, then two exact counts that say what the
 * time is mostly made of: the page faults taken during the loop (minor
 * faults, getrusage) and the KiB of the process's memory mapped by
 * transparent huge pages at its end (AnonHugePages).  The same number of
 * faults at two very different times is the machine, not the allocator: on
 * a VM, a 2 MiB block the host took back while the guest had it free costs
 * host faults when it is touched again (5 ms per huge page here, against
 * 0.25 ms for one the guest used a moment ago).
 */
#define _GNU_SOURCE
#ifdef WITH_POOL
#include <pmalloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static long minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* KiB of this process in transparent huge pages; -1 when unknown. */
static long huge_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s N [write]\n", argv[0]);
		return 2;
	}
	long n = atol(argv[1]);
	int write = argc > 2 && strcmp(argv[2], "write") == 0;
	unsigned *sizes = calloc((size_t)n, sizeof(*sizes));
	void **objs = calloc((size_t)n, sizeof(*objs));
	if (!sizes || !objs || n <= 0)
		return 1;
	unsigned seed = 1;
	for (long i = 0; i < n; i++)
		sizes[i] = 16 + (unsigned)(rand_r(&seed) % 241);
#ifdef WITH_POOL
	struct pmalloc_pool *pool = pmalloc_create_pool();
	if (!pool)
		return 1;
#define ALLOC(size) pmalloc(pool, size)
#else
#define ALLOC(size) malloc(size)
#endif
	long f0 = minflt();
	double t0 = now();
	for (long i = 0; i < n; i++) {
		void *p = ALLOC(sizes[i]);
		if (write)
			memset(p, (int)i, sizes[i]);
		objs[i] = p;
	}
	double dt = now() - t0;
	long faults = minflt() - f0;
	for (long i = 0; i < n; i++)
		if (!objs[i])
			return 1;
	printf("%.2f %ld %ld\n", dt / (double)n * 1e9, faults, huge_kib());
	return 0;
}
