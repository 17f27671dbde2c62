/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_threads - four threads allocate from a site (thread_alloc, calloc of
 * 16..200 bytes) while the main thread calls listen(), the trigger.  No
 * thread writes a pool object: calloc's zeroes are the initialisation, so
 * an object protected between its allocation and a write cannot fault.
 * The threads also churn the ordinary heap.
 *
 * Afterwards the main thread checks: no two objects overlap, every object
 * still reads as zero, every object allocated before listen() was called is
 * protected, every one allocated after it returned is not.  Exit 0 when
 * all hold.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define BEFORE 2000          /* objects each thread allocates before main may listen */
#define MAX_PER_THREAD 60000 /* bound on the loop that runs while main listens */
#define AFTER 500            /* objects each thread allocates once listen() returned */

struct obj {
	uintptr_t p;
	size_t size;
	int when;                /* 0: surely before the trigger, 1: during, 2: surely after */
};

struct worker {
	pthread_t t;
	unsigned seed;
	struct obj *objs;
	size_t n;
};

static _Atomic int started_listen, listen_done, ready;
static int (*is_protected)(const void *);

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *thread_alloc(size_t n)
{
	return calloc(1, n);
}

static void churn_heap(unsigned *seed)
{
	size_t n = 16 + (size_t)(rand_r(seed) % 500);
	char *p = malloc(n);
	if (p) {
		memset(p, 0x33, n);
		free(p);
	}
}

static int one(struct worker *w)
{
	int after = atomic_load(&listen_done);
	size_t size = 16 + (size_t)(rand_r(&w->seed) % 185);
	void *p = thread_alloc(size);
	if (!p)
		return -1;
	/* Read the flag after the allocation: still 0 means it came before
	 * main even started listen(). */
	int before = !atomic_load(&started_listen);
	w->objs[w->n++] = (struct obj){ (uintptr_t)p, size, before ? 0 : after ? 2 : 1 };
	churn_heap(&w->seed);
	return 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < BEFORE; i++)
		if (one(w) < 0)
			return NULL;
	atomic_fetch_add(&ready, 1);
	/* Keep allocating while the main thread listens; past the bound,
	 * wait for it (bounded too). */
	while (!atomic_load(&listen_done) && w->n < MAX_PER_THREAD - AFTER)
		if (one(w) < 0)
			return NULL;
	for (double end = now_s() + 5; !atomic_load(&listen_done) && now_s() < end;)
		sched_yield();
	for (int i = 0; i < AFTER; i++)
		if (one(w) < 0)
			return NULL;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;
	return x->p < y->p ? -1 : x->p > y->p;
}

int main(void)
{
	is_protected = (int (*)(const void *))dlsym(RTLD_DEFAULT, "pmalloc_is_protected");
	if (!is_protected) {
		printf("no shim\n");
		return 1;
	}
	struct worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .seed = (unsigned)i + 1, .objs = malloc(MAX_PER_THREAD * sizeof(struct obj)) };
		if (!w[i].objs || pthread_create(&w[i].t, NULL, work, &w[i]) != 0)
			return 2;
	}
	/* Bounded wait until every thread has its first objects. */
	for (double end = now_s() + 5; atomic_load(&ready) < THREADS && now_s() < end;)
		sched_yield();
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return 2;
	atomic_store(&started_listen, 1);
	if (listen(fd, 1) < 0)
		return 2;
	atomic_store(&listen_done, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(w[i].t, NULL);

	size_t total = 0;
	for (int i = 0; i < THREADS; i++)
		total += w[i].n;
	struct obj *all = malloc(total * sizeof(*all));
	if (!all)
		return 2;
	total = 0;
	for (int i = 0; i < THREADS; i++) {
		memcpy(all + total, w[i].objs, w[i].n * sizeof(*all));
		total += w[i].n;
	}
	qsort(all, total, sizeof(*all), cmp);
	size_t overlaps = 0, dirty = 0, early_open = 0, late_shut = 0, counts[3] = { 0 };
	for (size_t i = 0; i < total; i++) {
		const unsigned char *p = (const unsigned char *)all[i].p;
		size_t us = malloc_usable_size((void *)p);
		if (us < all[i].size || (i + 1 < total && all[i].p + all[i].size > all[i + 1].p))
			overlaps++;
		for (size_t k = 0; k < all[i].size; k++)
			if (p[k]) {
				dirty++;
				break;
			}
		int prot = is_protected(p) == 1 && is_protected(p + all[i].size - 1) == 1;
		counts[all[i].when]++;
		if (all[i].when == 0 && !prot)
			early_open++;
		if (all[i].when == 2 && prot)
			late_shut++;
	}
	printf("threads %d; objects before %s, after %s\n", THREADS, counts[0] >= THREADS * BEFORE ? "enough" : "TOO FEW",
	       counts[2] >= THREADS * AFTER ? "enough" : "TOO FEW");
	printf("overlapping %zu, not zero %zu, before listen but writable %zu, after listen but read-only %zu\n",
	       overlaps, dirty, early_open, late_shut);
	int ok = !overlaps && !dirty && !early_open && !late_shut && counts[0] >= THREADS * BEFORE &&
		 counts[2] >= THREADS * AFTER;
	printf("%s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
