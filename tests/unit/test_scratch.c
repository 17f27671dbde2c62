/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_scratch.c - white-box tests of shim/sys/scratch.c, the policy's
 * load in memory of its own: allocations on the scope's thread come from
 * the shim's .bss while they fit there (no mapping made), then from a
 * mapping of their own; in place when they grow last, zeroed; a paused
 * scope or another thread gets nothing from it (heap.h then asks the
 * heap; a block grown paused moves to the heap: test_heap.c); the end
 * unmaps when everything was freed and keeps the mapping when something
 * was not.  scratch.c is compiled into this program with a real mapping;
 * Check forks each test, so each starts with the .bss part unspent.
 */
#include "scratch.c"
#include "testutil.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>

/* What scratch.c needs from the rest of the shim. */
static int debug_lines;
int pm_debug = 1;
void debug_line(const char *format, ...)
{
	(void)format;
	debug_lines++;
}

static int maps, unmaps;
int os_map_lazy(size_t len, void **ret)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	maps++;
	*ret = p;
	return 0;
}

int os_unmap(void *p, size_t len)
{
	unmaps++;
	return munmap(p, len) == 0 ? 0 : -errno;
}

static bool in_first(const void *p)
{
	return (const char *)p >= scratch_first && (const char *)p < scratch_first + sizeof(scratch_first);
}

START_TEST(test_small_load_stays_in_bss)
{
	ck_assert_ptr_null(scratch_alloc(16));        /* no scope: nothing */
	scratch_begin();
	char *a = scratch_alloc(100), *b = scratch_alloc(1000), *s = scratch_alloc(7);
	ck_assert(in_first(a) && in_first(b) && in_first(s) && scratch_owns(s));
	strcpy(s, "policy");
	ck_assert_uint_eq((uintptr_t)a % 16, 0);
	for (size_t i = 0; i < 1000; i++)
		ck_assert_int_eq(b[i], 0);
	/* The last block grows in place, its new bytes zero. */
	char *g = scratch_realloc(s, 5000);
	ck_assert_ptr_eq(g, s);
	ck_assert_str_eq(g, "policy");
	for (size_t i = 7; i < 5000; i++)
		ck_assert_int_eq(g[i], 0);
	/* One before the last moves, its bytes with it. */
	memset(a, 'x', 100);
	char *m = scratch_realloc(a, 200);
	ck_assert(m != a && scratch_owns(m));
	ck_assert_int_eq(m[99], 'x');
	ck_assert_int_eq(m[100], 0);
	scratch_free(b);
	scratch_free(g);
	scratch_free(m);
	scratch_end();
	ck_assert_int_eq(maps, 0);                    /* no system call */
	ck_assert_int_eq(unmaps, 0);
	/* The .bss part serves one scope: the next gets a mapping. */
	scratch_begin();
	char *n = scratch_alloc(16);
	ck_assert(n && !in_first(n) && scratch_owns(n));
	scratch_free(n);
	scratch_end();
	ck_assert_int_eq(maps, 1);
	ck_assert_int_eq(unmaps, 1);
	ck_assert(!scratch_owns(n));
}
END_TEST

START_TEST(test_large_load_spills_into_a_mapping)
{
	scratch_begin();
	char *small = scratch_alloc(64);
	char *big = scratch_alloc(64 << 10);           /* past the .bss part */
	ck_assert(in_first(small) && big && !in_first(big) && scratch_owns(big));
	ck_assert_int_eq(maps, 1);
	memset(big, 'y', 64 << 10);
	/* A .bss block grown moves into the mapping. */
	strcpy(small, "first");
	char *moved = scratch_realloc(small, 32 << 10);
	ck_assert(moved && !in_first(moved) && scratch_owns(moved));
	ck_assert_str_eq(moved, "first");
	scratch_free(big);
	scratch_free(moved);
	scratch_end();
	ck_assert_int_eq(unmaps, 1);
	ck_assert_uint_eq(scratch_len, 0);
}
END_TEST

static void *other_thread(void *arg)
{
	(void)arg;
	return scratch_alloc(64);
}

START_TEST(test_paused_and_other_threads_get_nothing)
{
	scratch_begin();
	void *img = scratch_alloc(4096);
	pthread_t t;
	void *theirs;
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(t, &theirs), 0);
	ck_assert_ptr_null(theirs);                   /* another thread: the heap's */
	char *grown = scratch_alloc(8);
	scratch_pause(true);
	ck_assert_ptr_null(scratch_alloc(64));        /* paused: the heap's */
	ck_assert_ptr_null(scratch_realloc(grown, 16));
	ck_assert(scratch_owns(img));
	scratch_free(img);
	scratch_free(grown);
	scratch_end();
}
END_TEST

START_TEST(test_a_leak_keeps_the_mapping)
{
	scratch_begin();
	char *leaked = scratch_alloc(32 << 10);        /* in the mapping */
	strcpy(leaked, "still read");
	scratch_end();
	ck_assert_int_eq(maps, 1);
	ck_assert_int_eq(unmaps, 0);
	ck_assert_int_eq(debug_lines, 2);             /* the load's size, and the leak */
	ck_assert_str_eq(leaked, "still read");      /* never dangling */
}
END_TEST

START_TEST(test_full_falls_back_to_the_heap)
{
	scratch_begin();
	ck_assert_ptr_null(scratch_alloc(SCRATCH_MAX));   /* more than the mapping holds */
	void *small = scratch_alloc(64);
	ck_assert(in_first(small));
	scratch_free(small);
	scratch_end();
}
END_TEST

TEST_MAIN("scratch", test_small_load_stays_in_bss, test_large_load_spills_into_a_mapping,
	  test_paused_and_other_threads_get_nothing, test_a_leak_keeps_the_mapping, test_full_falls_back_to_the_heap)
