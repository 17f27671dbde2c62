/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stress_api_fork - a fork storm under an armed policy with max_bytes.
 *
 * Four threads allocate without pause: from the policy's site
 * storm_alloc() (pool "storm", capped by max_bytes, the rest to the heap),
 * from an API pool (pmalloc), and on the plain heap (malloc/free churn).
 * Every recorded object is filled with a pattern before it is published;
 * the threads record at the pace of the forks, so the pools fill (and the
 * cap is reached) while the children are being forked.
 * Meanwhile the main thread forks FORKS children, at most PARALLEL at a
 * time.  Each child, with the other threads gone mid-flight:
 *   - finds every object published before the fork intact,
 *   - allocates from all three places itself (locks left by the parent's
 *     threads would hang it here; an alarm turns a hang into SIGALRM),
 *   - protects both pools (pmalloc_protect_named, pmalloc_protect_pool),
 *   - checks the accounting: the "storm" objects in the pool add up to no
 *     more than max_bytes, every API object is protected, objects never
 *     overlap, and the API pool's statistics agree with what was published,
 *   - exits 0, or 1 with one line on stderr saying what failed.
 * The parent then stops its threads and runs the same checks on itself.
 * Prints "forks N, clean exits N, ..." and "ok"; exit 0 when all held.
 *
 * Usage: stress_api_fork MAX_BYTES (the policy's max_bytes for "storm").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pmalloc.h"

#define THREADS 4
#define RECORD_MAX 10000         /* objects recorded per thread and kind */
#define FORKS 200
#define PARALLEL 8
#define CHILD_ALARM_S 10

enum kind { STORM, API, KINDS };

struct obj {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

struct worker {
	pthread_t t;
	unsigned int id;
	struct obj objs[KINDS][RECORD_MAX];
	_Atomic size_t n[KINDS];             /* published: objs[k][0, n) are complete */
};

static struct worker workers[THREADS];
static struct pmalloc_pool *api_pool;
static _Atomic int stop;
static _Atomic int forked;               /* children forked so far */
static size_t max_bytes;

/* The policy's site: its callers' mallocs go to pool "storm". */
__attribute__((noinline)) static void *storm_alloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");   /* keep the call a call */
	return p;
}

__attribute__((noreturn)) static void fail(const char *what)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "stress_api_fork[%d]: %s\n", (int)getpid(), what);
	if (n > 0)
		(void)write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	_exit(1);
}

static void fill(struct obj *o, unsigned char *p, size_t size, unsigned char tag)
{
	memset(p, tag, size);
	o->p = p;
	o->size = size;
	o->tag = tag;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int seed = w->id * 7919u + 1;
	void *churn[16] = { 0 };

	for (unsigned long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		size_t size = 16 + (size_t)(rand_r(&seed) % 240);
		unsigned char tag = (unsigned char)(1 + (w->id * 31 + i) % 250);
		/* Paced by the forks, so that the pools fill during the whole storm. */
		size_t limit = (size_t)(atomic_load_explicit(&forked, memory_order_relaxed) + 1) *
			       RECORD_MAX / FORKS;
		for (int k = 0; k < KINDS; k++) {
			size_t n = atomic_load_explicit(&w->n[k], memory_order_relaxed);
			if (n >= limit || n == RECORD_MAX)
				continue;
			unsigned char *p = k == STORM ? storm_alloc(size) : pmalloc(api_pool, size);
			if (!p)
				fail("allocation failed in a thread");
			fill(&w->objs[k][n], p, size, tag);
			atomic_store_explicit(&w->n[k], n + 1, memory_order_release);
		}
		free(churn[i % 16]);
		churn[i % 16] = malloc(1 + (size_t)(rand_r(&seed) % 4000));
		if (i % 64 == 0)
			sched_yield();
	}
	for (int i = 0; i < 16; i++)
		free(churn[i]);
	return NULL;
}

static int by_address(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;
	return x->p < y->p ? -1 : x->p > y->p;
}

/* What must hold in any process of the storm, after the protects. */
static void check(const char *who)
{
	static struct obj all[THREADS * RECORD_MAX * KINDS + 64];
	size_t n_all = 0, storm_pool_bytes = 0, api_objects = 0, api_requested = 0;
	char what[160];

	for (int t = 0; t < THREADS; t++)
		for (int k = 0; k < KINDS; k++) {
			size_t n = atomic_load_explicit(&workers[t].n[k], memory_order_acquire);
			for (size_t i = 0; i < n; i++) {
				const struct obj *o = &workers[t].objs[k][i];
				if (o->p[0] != o->tag || o->p[o->size - 1] != o->tag ||
				    o->p[o->size / 2] != o->tag) {
					snprintf(what, sizeof(what), "%s: object of thread %d lost its contents", who, t);
					fail(what);
				}
				int prot = pmalloc_is_protected(o->p);
				if (k == API && prot != 1) {
					snprintf(what, sizeof(what), "%s: API object not protected after protect", who);
					fail(what);
				}
				if (k == STORM && prot == 1)
					storm_pool_bytes += o->size;
				if (k == API) {
					api_objects++;
					api_requested += o->size;
				}
				all[n_all++] = *o;
			}
		}
	/* Threads racing at the cap may each pass it by one object (pool.c). */
	if (storm_pool_bytes > max_bytes + THREADS * 256) {
		snprintf(what, sizeof(what), "%s: %zu bytes of storm objects in a pool capped at %zu", who,
			 storm_pool_bytes, max_bytes);
		fail(what);
	}
	qsort(all, n_all, sizeof(all[0]), by_address);
	for (size_t i = 1; i < n_all; i++)
		if (all[i - 1].p + all[i - 1].size > all[i].p) {
			snprintf(what, sizeof(what), "%s: two objects overlap", who);
			fail(what);
		}
	/* A thread may have been between pmalloc() and publishing at the fork:
	 * the pool counts at most one object per thread more than published. */
	struct pmalloc_stats st;
	if (pmalloc_pool_stats(api_pool, &st) != 0)
		fail("pmalloc_pool_stats failed");
	if (st.objects < api_objects || st.objects > api_objects + THREADS + 1 ||
	    st.requested_bytes < api_requested || st.requested_bytes > api_requested + (THREADS + 1) * 256 ||
	    st.protected_bytes < st.used_bytes) {
		snprintf(what, sizeof(what),
			 "%s: API pool counts %zu objects / %zu bytes (protected %zu of %zu), published %zu / %zu",
			 who, st.objects, st.requested_bytes, st.protected_bytes, st.used_bytes, api_objects,
			 api_requested);
		fail(what);
	}
}

static void child(void)
{
	alarm(CHILD_ALARM_S);
	/* The child allocates from all three places, then protects and checks. */
	unsigned char *s = storm_alloc(100), *a = pmalloc(api_pool, 100), *h = malloc(100);
	if (!s || !a || !h)
		fail("child: allocation failed");
	memset(s, 1, 100);
	memset(h, 3, 100);
	free(h);
	if (pmalloc_protect_named("storm") != 0)
		fail("child: pmalloc_protect_named(\"storm\") failed");
	pmalloc_protect_pool(api_pool);
	if (pmalloc_is_protected(a) != 1)
		fail("child: its own API object is not protected");
	check("child");
	_exit(0);
}

int main(int argc, char **argv)
{
	int running = 0, clean = 0, forks = 0;

	if (argc != 2 || (max_bytes = strtoul(argv[1], NULL, 10)) == 0) {
		fprintf(stderr, "usage: stress_api_fork MAX_BYTES\n");
		return 2;
	}
	api_pool = pmalloc_create_named_pool("api", 0);
	if (!api_pool)
		return 2;
	for (unsigned int t = 0; t < THREADS; t++) {
		workers[t].id = t;
		if (pthread_create(&workers[t].t, NULL, work, &workers[t]) != 0)
			return 2;
	}
	while (forks < FORKS || running > 0) {
		int status;
		if (forks < FORKS && running < PARALLEL) {
			fflush(NULL);
			pid_t pid = fork();
			if (pid < 0) {
				perror("fork");
				return 2;
			}
			if (pid == 0)
				child();
			atomic_store_explicit(&forked, ++forks, memory_order_relaxed);
			running++;
			continue;
		}
		pid_t pid = wait(&status);
		if (pid < 0) {
			perror("wait");
			return 2;
		}
		running--;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			clean++;
		else if (WIFSIGNALED(status))
			fprintf(stderr, "child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
	}
	/* The threads fill their records before they stop, so the cap is
	 * reached on a loaded machine too. */
	for (int t = 0; t < THREADS; t++)
		for (int k = 0; k < KINDS; k++)
			while (atomic_load(&workers[t].n[k]) < RECORD_MAX)
				sched_yield();
	atomic_store(&stop, 1);
	for (int t = 0; t < THREADS; t++)
		pthread_join(workers[t].t, NULL);
	size_t storm = 0;
	for (int t = 0; t < THREADS; t++)
		storm += workers[t].n[STORM];
	if (pmalloc_protect_named("storm") != 0)
		fail("parent: pmalloc_protect_named(\"storm\") failed");
	pmalloc_protect_pool(api_pool);
	check("parent");
	printf("forks %d, clean exits %d, storm objects %s\n", forks, clean,
	       storm >= THREADS ? "enough" : "too few");
	if (clean != forks)
		return 1;
	printf("ok\n");
	return 0;
}
