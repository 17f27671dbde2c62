/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coexist_prog - a program linked against another allocator (built by
 * coexist_allocators.sh with -DNEXT_JEMALLOC, -DNEXT_TCMALLOC or
 * -DNEXT_MIMALLOC and that library), run under the shim.  Every heap route
 * must reach that allocator, checked with the allocator's own API; with
 * "armed", allocations from pool_site() must go to the policy's pool
 * instead (and never to the allocator).
 *
 *   coexist_prog           heap routes only (shim idle, or no pool sites hit)
 *   coexist_prog armed     also the pool route (policy: pool "keys",
 *                          sites ["pool_site"], protect ["manual"])
 *
 * Prints "ok: ..." lines; the first failure prints "FAIL: ..." and exits 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(NEXT_JEMALLOC)
#define NAME "jemalloc"
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
size_t sallocx(void *p, int flags);
/* jemalloc's arena map knows the pointer: only ever asked of heap pointers
 * (asking it about foreign memory is undefined). */
static int owned(void *p)
{
	unsigned int arena;
	size_t sz = sizeof(arena);
	return mallctl("arenas.lookup", &arena, &sz, &p, sizeof(p)) == 0;
}
static size_t own_size(void *p)
{
	return sallocx(p, 0);
}
static int foreign(void *p)
{
	(void)p;
	return -1;    /* no safe question to ask jemalloc */
}
static uint64_t allocated(void)
{
	uint64_t v = 0;
	size_t sz = sizeof(v);
	uint64_t epoch = 1;
	mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch));
	return mallctl("thread.allocated", &v, &sz, NULL, 0) == 0 ? v : 0;
}
#elif defined(NEXT_TCMALLOC)
#define NAME "tcmalloc"
int MallocExtension_GetOwnership(const void *p);   /* 1 owned, 2 not owned */
size_t tc_malloc_size(void *p);
static int owned(void *p)
{
	return MallocExtension_GetOwnership(p) == 1;
}
static size_t own_size(void *p)
{
	return tc_malloc_size(p);
}
static int foreign(void *p)
{
	return MallocExtension_GetOwnership(p) == 2;
}
static uint64_t allocated(void)
{
	return 0;
}
#elif defined(NEXT_MIMALLOC)
#define NAME "mimalloc"
#include <mimalloc.h>
static int owned(void *p)
{
	return mi_is_in_heap_region(p);
}
static size_t own_size(void *p)
{
	return mi_usable_size(p);
}
static int foreign(void *p)
{
	return !mi_is_in_heap_region(p);
}
static uint64_t allocated(void)
{
	return 0;
}
#else
#error "build with -DNEXT_JEMALLOC, -DNEXT_TCMALLOC or -DNEXT_MIMALLOC"
#endif

#define CHECK(cond, ...) do { if (!(cond)) { printf("FAIL: " __VA_ARGS__); printf("\n"); exit(1); } } while (0)

/* A heap pointer: the allocator owns it and agrees on its size with
 * malloc_usable_size (the shim's, which must ask the same allocator). */
static void heap_ok(const char *what, void *p, size_t size)
{
	CHECK(p, "%s returned NULL", what);
	CHECK(owned(p), "%s: %p is not %s's", what, p, NAME);
	size_t u = malloc_usable_size(p);
	CHECK(u >= size && u == own_size(p), "%s: malloc_usable_size %zu, %s says %zu, asked %zu", what, u,
	      NAME, own_size(p), size);
}

__attribute__((noinline)) void *pool_site(size_t n);
__attribute__((noinline)) void *pool_site(size_t n)
{
	return malloc(n);
}

static void *churn(void *arg)
{
	void *slot[64] = { 0 };
	unsigned int r = (unsigned int)(uintptr_t)arg;
	for (int i = 0; i < 20000; i++) {
		r = r * 1103515245u + 12345u;
		void **s = &slot[(r >> 8) % 64];
		if (*s && (r & 1)) {
			void *t = realloc(*s, 16 + (r >> 16) % 2000);
			if (!t)
				return (void *)1;
			*s = t;
		} else {
			free(*s);
			*s = malloc(16 + (r >> 16) % 2000);
		}
		if (!*s || !owned(*s))
			return (void *)1;
		memset(*s, 1, 16);
	}
	for (int i = 0; i < 64; i++)
		free(slot[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	int armed = argc > 1 && strcmp(argv[1], "armed") == 0;
	uint64_t before = allocated();

	void *p = malloc(1000);
	heap_ok("malloc", p, 1000);
	if (before || allocated())
		CHECK(allocated() - before >= 1000, "thread.allocated grew by %llu after malloc(1000)",
		      (unsigned long long)(allocated() - before));
	void *q = realloc(p, 100000);
	heap_ok("realloc", q, 100000);
	free(q ? q : p);
	heap_ok("calloc", calloc(10, 100), 1000);
	void *a = NULL;
	CHECK(posix_memalign(&a, 256, 300) == 0 && ((uintptr_t)a & 255) == 0, "posix_memalign %p", a);
	heap_ok("posix_memalign", a, 300);
	free(a);
	a = aligned_alloc(64, 128);
	CHECK(((uintptr_t)a & 63) == 0, "aligned_alloc %p", a);
	heap_ok("aligned_alloc", a, 128);
	free(a);
	a = memalign(4096, 10);
	CHECK(((uintptr_t)a & 4095) == 0, "memalign %p", a);
	heap_ok("memalign", a, 10);
	free(a);
	a = valloc(10);
	heap_ok("valloc", a, 10);
	free(a);
	if (dlsym(RTLD_DEFAULT, "pmalloc_is_protected")) {
		/* jemalloc has no pvalloc: alone, the program gets glibc's; under
		 * the shim, the allocator's memalign. */
		a = pvalloc(10);
		heap_ok("pvalloc", a, 10);
		free(a);
	}
	char *s = strdup("coexisting");
	heap_ok("strdup", s, 11);
	CHECK(strcmp(s, "coexisting") == 0, "strdup copied '%s'", s);
	free(s);
	s = strndup("coexisting", 3);
	heap_ok("strndup", s, 4);
	free(s);
	a = reallocarray(NULL, 10, 10);
	heap_ok("reallocarray", a, 100);
	free(a);
	/* glibc's own allocations (stdio, getline) are freed by the program. */
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fmemopen((char *)"one line\n", 9, "r");
	CHECK(f && getline(&line, &cap, f) == 9, "getline");
	heap_ok("getline", line, 9);
	free(line);
	fclose(f);
	printf("ok: heap routes go to %s\n", NAME);

	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, (void *)(i + 1));
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		CHECK(!r, "thread %d got a pointer %s does not own", i, NAME);
	}
	printf("ok: 4 threads churned on %s\n", NAME);

	if (!armed)
		return 0;
	int (*protect_named)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "pmalloc_protect_named");
	int (*is_protected)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "pmalloc_is_protected");
	CHECK(protect_named && is_protected, "not under the shim");
	char *k = pool_site(100);
	CHECK(k, "pool_site returned NULL");
	strcpy(k, "pool object");
	CHECK(foreign(k) != 0, "pool object %p is %s's", (void *)k, NAME);
	CHECK(malloc_usable_size(k) >= 100, "malloc_usable_size of a pool object: %zu", malloc_usable_size(k));
	CHECK(protect_named("keys") == 0 && is_protected(k) == 1, "pool \"keys\" not protected");
	printf("ok: pool route: %p protected, not %s's\n", (void *)k, NAME);
	/* A protected pool object realloc'ed from a heap site moves to the heap. */
	char *h = realloc(k, 5000);
	heap_ok("realloc out of the pool", h, 5000);
	CHECK(strcmp(h, "pool object") == 0, "realloc lost the contents: '%s'", h);
	free(h);
	free(pool_site(50));   /* a pool object: kept by the pool, never given to the allocator */
	printf("ok: pool and heap objects each went back where they came from\n");
	return 0;
}
