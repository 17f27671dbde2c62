/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_pool.c - the pool API of include/pmalloc.h, tested as a user sees
 * it: every function, alignment, zeroing, overflow and NULL arguments,
 * protection (what becomes read-only, what stays writable, what it costs in
 * mappings, what happens when the kernel runs out of mappings), memory use
 * and its return on destroy, misuse that must abort, named and sealed pools,
 * statistics, and a multi-threaded race of allocations against protects.
 *
 * One Check test per behaviour, in fork mode: crash cases either expect the
 * signal (tcase_add_test_raise_signal) or, where the exact stderr line
 * matters, fork themselves and assert on the signal and the text.
 */
#define _GNU_SOURCE
#include "pmalloc.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define OBJ_ALIGN 16u                 /* alignof(max_align_t) on x86-64 and arm64 */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#ifndef __NR_mseal
#define __NR_mseal 462
#endif

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static uintptr_t page_of(const void *p)
{
	return (uintptr_t)p & ~(uintptr_t)(page_size() - 1);
}

/* From /proc/self/statm, in bytes: the address space, or the resident
 * anonymous memory (resident less file-backed: the pages of libc's code that
 * a first call faults in, 64 KiB at a time, are not the pool's).  Read with
 * read(2) into a stack buffer, so that measuring allocates nothing. */
enum statm_what { STATM_SIZE, STATM_ANON };

static size_t statm_bytes(enum statm_what what)
{
	char buf[256];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	unsigned long size, resident, shared;
	ck_assert_int_eq(sscanf(buf, "%lu %lu %lu", &size, &resident, &shared), 3);
	return (what == STATM_SIZE ? size : resident - shared) * page_size();
}

static size_t resident_bytes(void)
{
	return statm_bytes(STATM_ANON);
}

struct mapping {
	uintptr_t start, end;
	char perms[5];
};

/* The /proc/self/maps line holding addr; false when none does. */
static bool mapping_of(const void *addr, struct mapping *ret)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &s, &e, perms) != 3)
			continue;
		if ((uintptr_t)addr >= s && (uintptr_t)addr < e) {
			ret->start = s;
			ret->end = e;
			memcpy(ret->perms, perms, sizeof(perms));
			found = true;
		}
	}
	fclose(f);
	return found;
}

static size_t count_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	size_t n = 0;
	int c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static bool have_mseal(void)
{
	return syscall(__NR_mseal, 0UL, 0UL, 0UL) == 0;
}

static struct pmalloc_stats stats_of(const struct pmalloc_pool *pool)
{
	struct pmalloc_stats st;
	ck_assert_int_eq(pmalloc_pool_stats(pool, &st), 0);
	return st;
}

/* Check's assertions each record their location with a system call: hot
 * loops test with plain code and assert once, through these. */
#define require(cond, ...)                          \
	do {                                        \
		if (!(cond))                        \
			ck_abort_msg(__VA_ARGS__);  \
	} while (0)

/* The index of the first byte of [p, p+n) that is not v, or n. */
static size_t first_not(const unsigned char *p, size_t n, unsigned char v)
{
	size_t i = 0;
	while (i < n && p[i] == v)
		i++;
	return i;
}

/* The child died by SIGABRT after writing exactly one line starting with prefix. */
static void assert_aborted_with(const struct test_child *c, const char *prefix)
{
	ck_assert_msg(WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGABRT,
		      "expected death by SIGABRT, got status 0x%x; stderr: %s", c->status, c->err);
	ck_assert_msg(strncmp(c->err, prefix, strlen(prefix)) == 0,
		      "stderr \"%s\" does not start with \"%s\"", c->err, prefix);
	ck_assert_msg(c->err_len > 0 && c->err[c->err_len - 1] == '\n' &&
		      strchr(c->err, '\n') == c->err + c->err_len - 1,
		      "stderr is not exactly one line: \"%s\"", c->err);
}

/* ---- creation, allocation, alignment ---------------------------------- */

START_TEST(test_create_pool_gives_distinct_pools)
{
	struct pmalloc_pool *a = pmalloc_create_pool();
	struct pmalloc_pool *b = pmalloc_create_pool();
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	char *x = pmalloc(a, 32), *y = pmalloc(b, 32);
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(y);
	ck_assert_ptr_ne(x, y);
	pmalloc_destroy_pool(a);
	pmalloc_destroy_pool(b);
}
END_TEST

static const size_t all_sizes[] = {
	0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 255, 256, 257,
	1000, 4095, 4096, 4097, 8191, 65535, 65536, 65537, 100000, 131072, 200000,
	262127, 262128, 262144, 262145, 1 * MiB, 3 * MiB + 1, 8 * MiB, 20 * MiB + 7,
};

/* Every size, first in a fresh pool and then in one shared pool, is aligned
 * and usable in full (written end to end, read back). */
static void check_object(struct pmalloc_pool *pool, size_t size, unsigned char fill)
{
	unsigned char *p = pmalloc(pool, size);
	ck_assert_msg(p != NULL, "pmalloc(%zu) failed: %s", size, strerror(errno));
	ck_assert_msg((uintptr_t)p % OBJ_ALIGN == 0, "pmalloc(%zu) = %p is not %u-aligned",
		      size, (void *)p, OBJ_ALIGN);
	memset(p, fill, size);
	size_t bad = first_not(p, size, fill);
	ck_assert_msg(bad == size, "byte %zu of pmalloc(%zu) does not read back", bad, size);
}

START_TEST(test_alignment_and_usable_size_for_all_sizes)
{
	struct pmalloc_pool *shared = pmalloc_create_pool();
	ck_assert_ptr_nonnull(shared);
	for (size_t i = 0; i < ARRAY_LEN(all_sizes); i++) {
		struct pmalloc_pool *fresh = pmalloc_create_pool();
		ck_assert_ptr_nonnull(fresh);
		check_object(fresh, all_sizes[i], 0x5a);
		pmalloc_destroy_pool(fresh);
		check_object(shared, all_sizes[i], (unsigned char)i);
	}
	pmalloc_destroy_pool(shared);
}
END_TEST

/* Objects larger than a pool's first span but below the size that gets a
 * span of its own must still get memory of their own. */
START_TEST(test_midsize_objects_do_not_overlap)
{
	static const size_t sizes[] = { 65537, 100000, 200000, 262128 };
	for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
		size_t size = sizes[i];
		struct pmalloc_pool *pool = pmalloc_create_pool();
		ck_assert_ptr_nonnull(pool);
		uintptr_t a = (uintptr_t)pmalloc(pool, size);
		uintptr_t b = (uintptr_t)pmalloc(pool, size);
		ck_assert(a && b);
		ck_assert_msg(a + size <= b || b + size <= a,
			      "two %zu-byte objects overlap: %#lx and %#lx", size,
			      (unsigned long)a, (unsigned long)b);
		struct pmalloc_stats st = stats_of(pool);
		ck_assert_msg(st.mapped_bytes >= 2 * size,
			      "pool maps %zu bytes for two %zu-byte objects", st.mapped_bytes, size);
		pmalloc_destroy_pool(pool);
	}
}
END_TEST

START_TEST(test_size_zero_gives_distinct_objects)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	void *a = pmalloc(pool, 0), *b = pmalloc(pool, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pzalloc_zeroes)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	static const size_t sizes[] = { 1, 24, 4096, 100000, 1 * MiB };
	for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
		unsigned char *p = pzalloc(pool, sizes[i]);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % OBJ_ALIGN, 0);
		size_t bad = first_not(p, sizes[i], 0);
		ck_assert_msg(bad == sizes[i], "byte %zu of pzalloc(%zu) is not zero", bad, sizes[i]);
		memset(p, 0xff, sizes[i]);
	}
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pcalloc_zeroes)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	uint64_t *a = pcalloc(pool, 1000, sizeof(uint64_t));
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq((uintptr_t)a % OBJ_ALIGN, 0);
	ck_assert_uint_eq(first_not((const unsigned char *)a, 1000 * sizeof(uint64_t), 0),
			  1000 * sizeof(uint64_t));
	ck_assert_uint_eq(stats_of(pool).requested_bytes, 1000 * sizeof(uint64_t));
	pmalloc_destroy_pool(pool);
}
END_TEST

/* Fill a pool with 0xff and destroy it; the next pool gets that memory back. */
#define DIRTY_OBJECTS 2000
#define DIRTY_SIZE 48
static uintptr_t dirty_then_destroy(uintptr_t *hi)
{
	struct pmalloc_pool *old = pmalloc_create_pool();
	uintptr_t lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < DIRTY_OBJECTS; i++) {
		unsigned char *p = pmalloc(old, DIRTY_SIZE);
		require(p, "pmalloc failed");
		memset(p, 0xff, DIRTY_SIZE);
		lo = (uintptr_t)p < lo ? (uintptr_t)p : lo;
		*hi = (uintptr_t)p + DIRTY_SIZE > *hi ? (uintptr_t)p + DIRTY_SIZE : *hi;
	}
	pmalloc_destroy_pool(old);
	return lo;
}

START_TEST(test_pzalloc_zeroes_recycled_memory)
{
	uintptr_t hi, lo = dirty_then_destroy(&hi);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	int reused = 0;
	for (int i = 0; i < DIRTY_OBJECTS; i++) {
		unsigned char *p = pzalloc(pool, DIRTY_SIZE);
		require(p, "pzalloc failed");
		reused += (uintptr_t)p >= lo && (uintptr_t)p < hi;
		require(first_not(p, DIRTY_SIZE, 0) == DIRTY_SIZE,
			"pzalloc gave recycled memory that is not zero at %p", (void *)p);
	}
	ck_assert_msg(reused > 0, "premise: the new pool reuses the destroyed pool's addresses");
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pcalloc_zeroes_recycled_memory)
{
	uintptr_t hi, lo = dirty_then_destroy(&hi);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	int reused = 0;
	for (int i = 0; i < DIRTY_OBJECTS; i++) {
		unsigned char *p = pcalloc(pool, DIRTY_SIZE / 4, 4);
		require(p, "pcalloc failed");
		reused += (uintptr_t)p >= lo && (uintptr_t)p < hi;
		require(first_not(p, DIRTY_SIZE, 0) == DIRTY_SIZE,
			"pcalloc gave recycled memory that is not zero at %p", (void *)p);
	}
	ck_assert_msg(reused > 0, "premise: the new pool reuses the destroyed pool's addresses");
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pmalloc_array_gives_n_times_size)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	struct { double d; int i; } *a = pmalloc_array(pool, 333, sizeof(*a));
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq((uintptr_t)a % OBJ_ALIGN, 0);
	for (int i = 0; i < 333; i++)
		a[i].i = i;
	for (int i = 0; i < 333; i++)
		require(a[i].i == i, "element %d reads back %d", i, a[i].i);
	struct pmalloc_stats st = stats_of(pool);
	ck_assert_uint_eq(st.objects, 1);
	ck_assert_uint_eq(st.requested_bytes, 333 * sizeof(*a));
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pmalloc_array_overflow_is_enomem)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	errno = 0;
	ck_assert_ptr_null(pmalloc_array(pool, SIZE_MAX / 2 + 1, 2));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(pmalloc_array(pool, SIZE_MAX, SIZE_MAX));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(stats_of(pool).objects, 0);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pcalloc_overflow_is_enomem)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	errno = 0;
	ck_assert_ptr_null(pcalloc(pool, SIZE_MAX / 16 + 1, 16));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(pcalloc(pool, 3, SIZE_MAX / 2));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(stats_of(pool).objects, 0);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_huge_size_is_enomem)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	errno = 0;
	ck_assert_ptr_null(pmalloc(pool, SIZE_MAX));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(pmalloc(pool, SIZE_MAX - 8));
	ck_assert_int_eq(errno, ENOMEM);
	/* The pool is still usable. */
	ck_assert_ptr_nonnull(pmalloc(pool, 16));
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_null_pool_allocations_are_einval)
{
	errno = 0;
	ck_assert_ptr_null(pmalloc(NULL, 16));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(pzalloc(NULL, 16));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(pmalloc_array(NULL, 4, 4));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(pcalloc(NULL, 4, 4));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(pstrdup(NULL, "x"));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_null_pool_protect_and_destroy_are_noops)
{
	errno = 1234;
	pmalloc_protect_pool(NULL);
	pmalloc_destroy_pool(NULL);
	ck_assert_int_eq(errno, 1234);
}
END_TEST

START_TEST(test_pstrdup_copies)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char src[] = "listen = 0.0.0.0:443";
	char *s = pstrdup(pool, src);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_ne(s, src);
	ck_assert_uint_eq((uintptr_t)s % OBJ_ALIGN, 0);
	ck_assert_str_eq(s, src);
	src[0] = 'X';
	ck_assert_str_eq(s, "listen = 0.0.0.0:443");
	char *e = pstrdup(pool, "");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e, "");
	ck_assert_uint_eq(stats_of(pool).requested_bytes, sizeof(src) + 1);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pstrdup_null_is_einval)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	errno = 0;
	ck_assert_ptr_null(pstrdup(pool, NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(stats_of(pool).objects, 0);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* ---- protection ------------------------------------------------------- */

/* n objects of size bytes, each filled with its index. */
static char **fill_pool(struct pmalloc_pool *pool, size_t n, size_t size)
{
	char **objs = malloc(n * sizeof(*objs));
	ck_assert_ptr_nonnull(objs);
	for (size_t i = 0; i < n; i++) {
		objs[i] = pmalloc(pool, size);
		require(objs[i], "pmalloc(%zu) failed", size);
		memset(objs[i], (int)(i & 0x7f), size);
	}
	return objs;
}

/* Several spans' worth of objects: all read-only after one protect; the
 * first one written to kills the process. */
START_TEST(test_protect_makes_earlier_objects_read_only)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char **objs = fill_pool(pool, 2000, 1000);
	pmalloc_protect_pool(pool);
	for (size_t i = 0; i < 2000; i++)
		require(pmalloc_is_protected(objs[i]), "object %zu is not protected", i);
	TEST_FORCE_WRITE(objs[0], 'x');
	ck_abort_msg("write to a protected object did not fault");
}
END_TEST

START_TEST(test_reads_work_after_protect)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char **objs = fill_pool(pool, 2000, 1000);
	pmalloc_protect_pool(pool);
	for (size_t i = 0; i < 2000; i++)
		require(first_not((const unsigned char *)objs[i], 1000, (unsigned char)(i & 0x7f)) == 1000,
			"object %zu does not read back after protect", i);
	free(objs);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_objects_after_protect_stay_writable)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	free(fill_pool(pool, 10, 100));
	pmalloc_protect_pool(pool);
	char **later = fill_pool(pool, 2000, 100);
	for (size_t i = 0; i < 2000; i++) {
		later[i][99] = 'w';
		require(later[i][99] == 'w' && !pmalloc_is_protected(later[i]),
			"object %zu allocated after protect is not writable", i);
	}
	free(later);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_next_protect_covers_later_objects)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	free(fill_pool(pool, 10, 100));
	pmalloc_protect_pool(pool);
	char *later = pmalloc(pool, 100);
	ck_assert_ptr_nonnull(later);
	later[0] = 'w';
	pmalloc_protect_pool(pool);
	ck_assert_int_eq(pmalloc_is_protected(later), 1);
	TEST_FORCE_WRITE(later, 'x');
	ck_abort_msg("write to an object protected by the second protect did not fault");
}
END_TEST

START_TEST(test_protect_with_nothing_new_changes_nothing)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	free(fill_pool(pool, 100, 300));
	pmalloc_protect_pool(pool);
	struct pmalloc_stats before = stats_of(pool);
	ck_assert_uint_eq(before.protect_calls, 1);
	ck_assert_uint_gt(before.protected_bytes, 0);
	size_t maps = count_mappings();
	pmalloc_protect_pool(pool);
	pmalloc_protect_pool(pool);
	struct pmalloc_stats after = stats_of(pool);
	ck_assert_uint_eq(after.protect_calls, before.protect_calls);
	ck_assert_uint_eq(after.protected_bytes, before.protected_bytes);
	ck_assert_uint_eq(after.mapped_bytes, before.mapped_bytes);
	ck_assert_uint_eq(count_mappings(), maps);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_protect_of_empty_pool_changes_nothing)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	pmalloc_protect_pool(pool);
	struct pmalloc_stats st = stats_of(pool);
	ck_assert_uint_eq(st.protect_calls, 0);
	ck_assert_uint_eq(st.protected_bytes, 0);
	char *p = pmalloc(pool, 10);
	ck_assert_ptr_nonnull(p);
	p[0] = 'w';
	pmalloc_destroy_pool(pool);
}
END_TEST

/* 64 MiB of small objects, protected at once: read-only from the first
 * object to the last with one protect, in at most two mappings (the spans
 * below 2 MiB, and the huge-page spans after them): one mprotect per
 * contiguous range, not one per span. */
START_TEST(test_protected_64mib_pool_is_one_mapping)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	size_t n = 64 * MiB / 64;
	char *first = NULL, *last = NULL;
	for (size_t i = 0; i < n; i++) {
		char *p = pmalloc(pool, 64);
		require(p, "pmalloc failed after %zu objects", i);
		p[0] = 1;
		first = first ? first : p;
		last = p;
	}
	pmalloc_protect_pool(pool);
	ck_assert_uint_eq(stats_of(pool).protect_calls, 1);
	struct mapping m, m2;
	ck_assert(mapping_of(first, &m));
	ck_assert_msg(strcmp(m.perms, "r--p") == 0, "first object's mapping is %s", m.perms);
	ck_assert_msg(m.start <= (uintptr_t)first, "first object %p is not in %#lx-", (void *)first,
		      (unsigned long)m.start);
	if (m.end < (uintptr_t)last + 64) {
		ck_assert(mapping_of((void *)m.end, &m2));
		ck_assert_msg(strcmp(m2.perms, "r--p") == 0 && m2.end >= (uintptr_t)last + 64,
			      "objects span %p..%p but the read-only mappings are %#lx-%#lx and %#lx-%#lx %s",
			      (void *)first, (void *)(last + 64), (unsigned long)m.start,
			      (unsigned long)m.end, (unsigned long)m2.start, (unsigned long)m2.end, m2.perms);
	}
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_protect_gives_up_page_tail)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *a = pmalloc(pool, 16);
	ck_assert_ptr_nonnull(a);
	pmalloc_protect_pool(pool);
	ck_assert_uint_eq(stats_of(pool).protected_bytes, page_size());
	char *b = pmalloc(pool, 16);
	ck_assert_ptr_nonnull(b);
	ck_assert_msg((uintptr_t)b % page_size() == 0, "object after protect at %p", (void *)b);
	ck_assert_uint_ne(page_of(a), page_of(b));
	b[0] = 'w';
	ck_assert_int_eq(pmalloc_is_protected(b), 0);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_is_protected_outside_pools_is_zero)
{
	int on_stack = 0;
	char *on_heap = malloc(64);
	ck_assert_int_eq(pmalloc_is_protected(NULL), 0);
	ck_assert_int_eq(pmalloc_is_protected(&on_stack), 0);
	ck_assert_int_eq(pmalloc_is_protected(on_heap), 0);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	free(fill_pool(pool, 100, 64));
	pmalloc_protect_pool(pool);
	ck_assert_int_eq(pmalloc_is_protected(NULL), 0);
	ck_assert_int_eq(pmalloc_is_protected(&on_stack), 0);
	ck_assert_int_eq(pmalloc_is_protected(on_heap), 0);
	ck_assert_int_eq(pmalloc_is_protected((const void *)(uintptr_t)page_size), 0);
	free(on_heap);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_is_protected_follows_protect)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *a = pmalloc(pool, 100);
	ck_assert_int_eq(pmalloc_is_protected(a), 0);
	pmalloc_protect_pool(pool);
	ck_assert_int_eq(pmalloc_is_protected(a), 1);
	ck_assert_int_eq(pmalloc_is_protected(a + 99), 1);
	char *b = pmalloc(pool, 100);
	ck_assert_int_eq(pmalloc_is_protected(b), 0);
	ck_assert_int_eq(pmalloc_is_protected(a), 1);
	pmalloc_destroy_pool(pool);
	ck_assert_int_eq(pmalloc_is_protected(a), 0);
}
END_TEST

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Fastest of several batches of pmalloc_is_protected(p), in ns per call. */
static double is_protected_ns(const void *p)
{
	double best = 1e18;
	for (int batch = 0; batch < 7; batch++) {
		int sum = 0;
		double t0 = now_ns();
		for (int i = 0; i < 200; i++)
			sum += pmalloc_is_protected(p);
		double per = (now_ns() - t0) / 200;
		ck_assert_int_eq(sum, 200);
		best = per < best ? per : best;
	}
	return best;
}

/* The header promises O(1): asking about the last byte of a 64 MiB object
 * costs about what asking about a 32-byte object does. */
START_TEST(test_is_protected_cost_does_not_depend_on_object_size)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *small = pmalloc(pool, 32);
	char *big = pmalloc(pool, 64 * MiB);
	ck_assert_ptr_nonnull(small);
	ck_assert_ptr_nonnull(big);
	pmalloc_protect_pool(pool);
	double t_small = is_protected_ns(small);
	double t_big = is_protected_ns(big + 64 * MiB - 1);
	ck_assert_msg(t_big <= 50 * t_small + 200,
		      "pmalloc_is_protected takes %.0f ns at the end of a 64 MiB object, "
		      "%.0f ns on a 32-byte object", t_big, t_small);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_large_objects_work_and_are_protected)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	unsigned char *small = pmalloc(pool, 24);
	unsigned char *big8 = pmalloc(pool, 8 * MiB);
	unsigned char *big64 = pmalloc(pool, 64 * MiB);
	ck_assert_ptr_nonnull(small);
	ck_assert_ptr_nonnull(big8);
	ck_assert_ptr_nonnull(big64);
	ck_assert(big8 + 8 * MiB <= big64 || big64 + 64 * MiB <= big8);
	memset(big8, 0x88, 8 * MiB);
	memset(big64, 0x64, 64 * MiB);
	pmalloc_protect_pool(pool);
	ck_assert_int_eq(pmalloc_is_protected(big8), 1);
	ck_assert_int_eq(pmalloc_is_protected(big8 + 8 * MiB - 1), 1);
	ck_assert_int_eq(pmalloc_is_protected(big64), 1);
	ck_assert_int_eq(pmalloc_is_protected(big64 + 64 * MiB - 1), 1);
	ck_assert_int_eq(pmalloc_is_protected(small), 1);
	ck_assert_uint_eq(first_not(big64, 64 * MiB, 0x64), 64 * MiB);
	ck_assert_uint_eq(big8[8 * MiB - 1], 0x88);
	ck_assert_uint_ge(stats_of(pool).protected_bytes, 72 * MiB);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_large_object_write_after_protect_faults)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	unsigned char *big = pmalloc(pool, 64 * MiB);
	ck_assert_ptr_nonnull(big);
	big[64 * MiB - 1] = 1;
	pmalloc_protect_pool(pool);
	TEST_FORCE_WRITE(big + 64 * MiB - 1, 2);
	ck_abort_msg("write to a protected 64 MiB object did not fault");
}
END_TEST

/* ---- running out of memory mappings (vm.max_map_count) ---------------- */

/* Can the kernel write to p?  A read(2) from a pipe into p fails with
 * EFAULT on read-only memory; on writable memory it stores p's own first
 * byte back.  Needs no memory mapping of its own. */
static bool kernel_can_write(char *p, const int fds[2])
{
	char same = *p;
	ck_assert_int_eq(write(fds[1], &same, 1), 1);
	if (read(fds[0], p, 1) == 1)
		return true;
	ck_assert_int_eq(errno, EFAULT);
	char drain;
	ck_assert_int_eq(read(fds[0], &drain, 1), 1);
	return false;
}

/* Use up every memory mapping the process may have: pages of alternating
 * protection, each costing exactly one more mapping, until the kernel says
 * ENOMEM.  Returns the region to munmap. */
static void *hog_mappings(size_t *len)
{
	size_t ps = page_size(), n = 70000, k;
	char *base = mmap(NULL, n * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	ck_assert(base != MAP_FAILED);
	for (k = 0; k < n - 1; k++)
		if (mprotect(base + k * ps, ps, k % 2 ? PROT_READ : PROT_READ | PROT_WRITE) != 0)
			break;
	ck_assert_msg(k < n - 1 && errno == ENOMEM, "could not exhaust memory mappings");
	*len = n * ps;
	return base;
}

/* A protect that the kernel refused for lack of mappings leaves the object
 * writable; pmalloc_is_protected must then not claim it is protected. */
START_TEST(test_is_protected_is_truthful_when_protect_runs_out_of_mappings)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *obj = pmalloc(pool, 64);
	ck_assert_ptr_nonnull(obj);
	memset(obj, 'c', 64);
	size_t len;
	void *hog = hog_mappings(&len);
	pmalloc_protect_pool(pool);
	int claimed = pmalloc_is_protected(obj);
	bool writable = kernel_can_write(obj, fds);
	munmap(hog, len);
	ck_assert_msg(!(claimed && writable),
		      "pmalloc_is_protected() says 1 for an object that is still writable "
		      "(the protect ran out of memory mappings)");
}
END_TEST

/* The protect that could not be done is done by the next protect, once
 * mappings are available again: no object stays writable for good. */
START_TEST(test_protect_retries_after_running_out_of_mappings)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *obj = pmalloc(pool, 64);
	ck_assert_ptr_nonnull(obj);
	memset(obj, 'c', 64);
	size_t len;
	void *hog = hog_mappings(&len);
	pmalloc_protect_pool(pool);
	bool writable_then = kernel_can_write(obj, fds);
	munmap(hog, len);
	ck_assert_msg(writable_then, "premise: the first protect failed for lack of mappings");
	pmalloc_protect_pool(pool);
	ck_assert_msg(!kernel_can_write(obj, fds),
		      "an object whose protect failed stays writable after a later protect");
	ck_assert_int_eq(pmalloc_is_protected(obj), 1);
}
END_TEST

/* ---- memory use ------------------------------------------------------- */

START_TEST(test_small_objects_are_dense)
{
	/* Library start-up (arena, tables) is a one-time cost, not the pool's. */
	pmalloc_destroy_pool(pmalloc_create_pool());
	size_t before = resident_bytes();
	struct pmalloc_pool *pool = pmalloc_create_pool();
	for (int i = 0; i < 10000; i++) {
		char *p = pmalloc(pool, 32);
		require(p, "pmalloc failed");
		memset(p, 0xa5, 32);
	}
	size_t grown = resident_bytes() - before;
	ck_assert_msg(grown <= 320000 * 3 / 2,
		      "10,000 objects of 32 bytes raised resident memory by %zu bytes (> 480,000)",
		      grown);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_destroy_returns_memory)
{
	pmalloc_destroy_pool(pmalloc_create_pool());
	size_t before = resident_bytes();
	struct pmalloc_pool *pool = pmalloc_create_pool();
	for (int i = 0; i < 100000; i++) {
		char *p = pmalloc(pool, 160);
		require(p, "pmalloc failed");
		memset(p, 1, 160);
	}
	char *big = pmalloc(pool, 8 * MiB);
	ck_assert_ptr_nonnull(big);
	memset(big, 2, 8 * MiB);
	pmalloc_protect_pool(pool);
	size_t full = resident_bytes();
	ck_assert_uint_ge(full, before + 20 * MiB);
	pmalloc_destroy_pool(pool);
	size_t after = resident_bytes();
	ck_assert_msg(after <= before + 256 * KiB,
		      "resident: %zu before, %zu with the pool, %zu after destroy", before, full,
		      after);
	unsigned char vec = 0;
	bool resident = mincore((void *)page_of(big), page_size(), &vec) == 0 && (vec & 1);
	ck_assert_msg(!resident, "a page of the destroyed pool is still resident");
}
END_TEST

START_TEST(test_destroyed_memory_is_inaccessible)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *p = pmalloc(pool, 64);
	ck_assert_ptr_nonnull(p);
	p[0] = 'a';
	pmalloc_destroy_pool(pool);
	volatile char c = *(volatile char *)p;
	(void)c;
	ck_abort_msg("read of a destroyed pool's memory did not fault");
}
END_TEST

START_TEST(test_many_pools_memory_does_not_grow)
{
	enum { POOLS = 1000, ROUNDS = 6 };
	static struct pmalloc_pool *pools[POOLS];
	size_t rss0 = 0, vm0 = 0, maps0 = 0;
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < POOLS; i++) {
			pools[i] = pmalloc_create_pool();
			require(pools[i], "pmalloc_create_pool failed");
			for (int j = 0; j < 20; j++) {
				char *p = pmalloc(pools[i], (size_t)(16 + 40 * j));
				require(p, "pmalloc failed");
				p[0] = (char)j;
			}
			if (i % 100 == 0)
				require(pmalloc(pools[i], 300 * KiB), "pmalloc failed");
			pmalloc_protect_pool(pools[i]);
		}
		for (int i = 0; i < POOLS; i++)
			pmalloc_destroy_pool(pools[i]);
		if (round == 0) {
			rss0 = resident_bytes();
			vm0 = statm_bytes(STATM_SIZE);
			maps0 = count_mappings();
		}
	}
	size_t rss = resident_bytes(), vm = statm_bytes(STATM_SIZE), maps = count_mappings();
	ck_assert_msg(rss <= rss0 + 128 * KiB, "resident grew from %zu to %zu", rss0, rss);
	ck_assert_msg(vm <= vm0, "address space grew from %zu to %zu", vm0, vm);
	ck_assert_msg(maps <= maps0 + 2, "mappings grew from %zu to %zu", maps0, maps);
}
END_TEST

/* ---- misuse that must abort ------------------------------------------- */

static void alloc_from_destroyed_pool(void *arg)
{
	(void)arg;
	struct pmalloc_pool *pool = pmalloc_create_pool();
	pmalloc_destroy_pool(pool);
	pmalloc(pool, 16);
}

START_TEST(test_destroyed_pool_use_aborts)
{
	struct test_child c;
	test_run_child(alloc_from_destroyed_pool, NULL, &c);
	assert_aborted_with(&c, "pmalloc: fatal error in pmalloc: not a live pool");
}
END_TEST

static void destroy_twice(void *arg)
{
	(void)arg;
	struct pmalloc_pool *pool = pmalloc_create_pool();
	pmalloc_destroy_pool(pool);
	pmalloc_destroy_pool(pool);
}

START_TEST(test_double_destroy_aborts)
{
	struct test_child c;
	test_run_child(destroy_twice, NULL, &c);
	assert_aborted_with(&c, "pmalloc: fatal error in pmalloc_destroy_pool: not a live pool");
}
END_TEST

static void alloc_from_heap_garbage(void *arg)
{
	(void)arg;
	pmalloc_destroy_pool(pmalloc_create_pool());
	unsigned char *junk = malloc(4096);
	for (int i = 0; i < 4096; i++)
		junk[i] = (unsigned char)(i * 7 + 3);
	pmalloc((struct pmalloc_pool *)(void *)junk, 16);
}

static void alloc_from_inside_pool(void *arg)
{
	(void)arg;
	struct pmalloc_pool *pool = pmalloc_create_pool();
	pmalloc((struct pmalloc_pool *)(void *)((char *)pool + 8), 16);
}

START_TEST(test_garbage_pool_pointer_aborts)
{
	struct test_child c;
	test_run_child(alloc_from_heap_garbage, NULL, &c);
	assert_aborted_with(&c, "pmalloc: fatal error in pmalloc: not a live pool");
	test_run_child(alloc_from_inside_pool, NULL, &c);
	assert_aborted_with(&c, "pmalloc: fatal error in pmalloc: not a live pool");
}
END_TEST

/* ---- named pools, flags, statistics ----------------------------------- */

START_TEST(test_named_pool_stats)
{
	struct pmalloc_pool *pool = pmalloc_create_named_pool("config", 0);
	ck_assert_ptr_nonnull(pool);
	struct pmalloc_stats st = stats_of(pool);
	ck_assert_uint_eq(st.objects, 0);
	ck_assert_uint_eq(st.requested_bytes, 0);
	ck_assert_uint_eq(st.used_bytes, 0);
	ck_assert_uint_eq(st.protected_bytes, 0);
	ck_assert_uint_eq(st.protect_calls, 0);
	ck_assert_int_eq(st.sealed, 0);
	ck_assert_ptr_nonnull(pmalloc(pool, 1));
	ck_assert_ptr_nonnull(pzalloc(pool, 17));
	ck_assert_ptr_nonnull(pcalloc(pool, 10, 10));
	ck_assert_ptr_nonnull(pstrdup(pool, "abc"));
	st = stats_of(pool);
	ck_assert_uint_eq(st.objects, 4);
	ck_assert_uint_eq(st.requested_bytes, 1 + 17 + 100 + 4);
	ck_assert_uint_eq(st.used_bytes, 16 + 32 + 112 + 16);
	ck_assert_uint_ge(st.mapped_bytes, st.used_bytes);
	ck_assert_uint_eq(st.mapped_bytes % page_size(), 0);
	pmalloc_protect_pool(pool);
	st = stats_of(pool);
	ck_assert_uint_eq(st.protect_calls, 1);
	ck_assert_uint_eq(st.protected_bytes, page_size());
	ck_assert_ptr_nonnull(pmalloc(pool, 5000));
	pmalloc_protect_pool(pool);
	st = stats_of(pool);
	ck_assert_uint_eq(st.objects, 5);
	ck_assert_uint_eq(st.protect_calls, 2);
	ck_assert_uint_eq(st.protected_bytes, 3 * page_size());
	pmalloc_destroy_pool(pool);
}
END_TEST

/* free() of a pool object is accepted and counted; the memory stays,
 * readable, and is never handed out again. */
START_TEST(test_free_of_pool_objects_is_counted_and_harmless)
{
	/* Through a volatile pointer: the compiler must not treat these as the
	 * heap's free and the later reads as use after free. */
	void (*volatile release)(void *) = free;
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *a = pstrdup(pool, "first"), *b = pstrdup(pool, "second");
	release(a);
	pmalloc_protect_pool(pool);
	release(b);
	release(b);
	char *c = pmalloc(pool, 8);
	ck_assert_ptr_ne(c, a);
	ck_assert_ptr_ne(c, b);
	ck_assert_str_eq(a, "first");
	ck_assert_str_eq(b, "second");
	struct pmalloc_stats st;
	ck_assert_int_eq(pmalloc_pool_stats(pool, &st), 0);
	ck_assert_uint_eq(st.frees, 3);
	ck_assert_uint_eq(st.objects, 3);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* realloc() of a pool object in a program with no policy: the object
 * moves to the heap, its bytes copied, and the pool object stays intact. */
START_TEST(test_realloc_of_pool_object_without_policy_moves_to_heap)
{
	void *(*volatile resize)(void *, size_t) = realloc;
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *a = pstrdup(pool, "configuration");
	pmalloc_protect_pool(pool);
	char *b = resize(a, 4096);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	ck_assert_str_eq(b, "configuration");
	ck_assert_int_eq(pmalloc_is_protected(b), 0);
	b[4095] = 'x';                       /* writable, on the heap */
	ck_assert_str_eq(a, "configuration");
	free(b);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_named_pool_with_null_name_works)
{
	struct pmalloc_pool *pool = pmalloc_create_named_pool(NULL, 0);
	ck_assert_ptr_nonnull(pool);
	ck_assert_ptr_nonnull(pmalloc(pool, 8));
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_pool_stats_null_is_einval)
{
	struct pmalloc_stats st;
	errno = 0;
	ck_assert_int_eq(pmalloc_pool_stats(NULL, &st), -1);
	ck_assert_int_eq(errno, EINVAL);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	errno = 0;
	ck_assert_int_eq(pmalloc_pool_stats(pool, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_unknown_flags_are_einval)
{
	errno = 0;
	ck_assert_ptr_null(pmalloc_create_named_pool("x", 0x2));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(pmalloc_create_named_pool("x", ~0u));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(pmalloc_create_named_pool("x", PMALLOC_POOL_SEAL | 0x80000000u));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_sealed_pool_cannot_be_unprotected)
{
	if (!have_mseal())
		return;    /* without mseal(2) a sealed pool is only mprotected */
	struct pmalloc_pool *pool = pmalloc_create_named_pool("sealed", PMALLOC_POOL_SEAL);
	ck_assert_ptr_nonnull(pool);
	char *o = pstrdup(pool, "sealed secret");
	pmalloc_protect_pool(pool);
	void *page = (void *)page_of(o);
	errno = 0;
	ck_assert_int_eq(mprotect(page, page_size(), PROT_READ | PROT_WRITE), -1);
	ck_assert_int_eq(errno, EPERM);
	errno = 0;
	ck_assert_int_eq(munmap(page, page_size()), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_str_eq(o, "sealed secret");
}
END_TEST

START_TEST(test_sealed_pool_stats_say_sealed)
{
	struct pmalloc_pool *pool = pmalloc_create_named_pool("sealed", PMALLOC_POOL_SEAL);
	ck_assert_ptr_nonnull(pool);
	ck_assert_ptr_nonnull(pmalloc(pool, 100));
	pmalloc_protect_pool(pool);
	ck_assert_int_eq(stats_of(pool).sealed, have_mseal() ? 1 : 0);
	struct pmalloc_pool *plain = pmalloc_create_named_pool("plain", 0);
	ck_assert_ptr_nonnull(pmalloc(plain, 100));
	pmalloc_protect_pool(plain);
	ck_assert_int_eq(stats_of(plain).sealed, 0);
}
END_TEST

START_TEST(test_sealed_pool_destroy_keeps_memory_readable)
{
	if (!have_mseal())
		return;
	struct pmalloc_pool *pool = pmalloc_create_named_pool("sealed", PMALLOC_POOL_SEAL);
	char *o = pstrdup(pool, "still here");
	char *big = pmalloc(pool, 1 * MiB);
	memset(big, 0x42, 1 * MiB);
	pmalloc_protect_pool(pool);
	pmalloc_destroy_pool(pool);
	ck_assert_str_eq(o, "still here");
	ck_assert_uint_eq((unsigned char)big[1 * MiB - 1], 0x42);
	struct mapping m;
	ck_assert(mapping_of(o, &m));
	ck_assert_str_eq(m.perms, "r--p");
	errno = 0;
	ck_assert_int_eq(mprotect((void *)page_of(o), page_size(), PROT_READ | PROT_WRITE), -1);
	ck_assert_int_eq(errno, EPERM);
	/* A pool created afterwards never gets the sealed addresses. */
	struct pmalloc_pool *next = pmalloc_create_pool();
	for (int i = 0; i < 1000; i++) {
		char *p = pmalloc(next, 64);
		require(p && page_of(p) != page_of(o), "new pool got %p, in sealed page", (void *)p);
		p[0] = 1;
	}
	pmalloc_destroy_pool(next);
}
END_TEST

/* ---- threads ---------------------------------------------------------- */

#define RACE_THREADS 4
#define RACE_ALLOCS 50000

struct race_obj {
	uintptr_t addr;
	size_t size;
};

struct race_thread {
	pthread_t tid;
	struct pmalloc_pool *pool;
	struct race_obj *objs;
	_Atomic size_t published;        /* objs[0, published) are filled in */
	unsigned int seed;
	int errors;
};

static atomic_int race_running;
static pthread_barrier_t race_start;

static size_t race_size(struct race_thread *t, size_t i)
{
	if (i % 10007 == 5000)
		return 300 * KiB + (size_t)(rand_r(&t->seed) % 4096);   /* a span of its own */
	if (i % 64 == 0)
		return 1 + (size_t)(rand_r(&t->seed) % (16 * KiB));
	return 1 + (size_t)(rand_r(&t->seed) % 512);
}

static void *race_alloc(void *arg)
{
	struct race_thread *t = arg;
	pthread_barrier_wait(&race_start);
	for (size_t i = 0; i < RACE_ALLOCS; i++) {
		size_t size = race_size(t, i);
		void *p = pmalloc(t->pool, size);
		if (!p) {
			t->errors++;
			break;
		}
		t->objs[i].addr = (uintptr_t)p;
		t->objs[i].size = size;
		atomic_store_explicit(&t->published, i + 1, memory_order_release);
		if (i % 128 == 0)
			sched_yield();       /* let the protecting thread in, even on 2 CPUs */
	}
	atomic_fetch_sub(&race_running, 1);
	return NULL;
}

static int cmp_obj(const void *a, const void *b)
{
	const struct race_obj *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Four threads allocate while this one protects again and again: every
 * object returned before a protect began is protected when it ends, no two
 * objects overlap, and the pool's counts add up. */
START_TEST(test_threads_allocate_while_protecting)
{
	static struct race_thread threads[RACE_THREADS];
	struct pmalloc_pool *pool = pmalloc_create_named_pool("race", 0);
	ck_assert_ptr_nonnull(pool);
	size_t checked[RACE_THREADS] = { 0 };
	atomic_store(&race_running, RACE_THREADS);
	ck_assert_int_eq(pthread_barrier_init(&race_start, NULL, RACE_THREADS + 1), 0);
	for (int t = 0; t < RACE_THREADS; t++) {
		threads[t].pool = pool;
		threads[t].objs = calloc(RACE_ALLOCS, sizeof(struct race_obj));
		ck_assert_ptr_nonnull(threads[t].objs);
		atomic_store(&threads[t].published, 0);
		threads[t].seed = (unsigned int)t * 7919u + 1;
		threads[t].errors = 0;
		ck_assert_int_eq(pthread_create(&threads[t].tid, NULL, race_alloc, &threads[t]), 0);
	}
	size_t racing_protects = 0;
	bool last = false;
	pthread_barrier_wait(&race_start);
	while (!last) {
		last = atomic_load(&race_running) == 0;
		size_t snap[RACE_THREADS];
		for (int t = 0; t < RACE_THREADS; t++)
			snap[t] = atomic_load_explicit(&threads[t].published, memory_order_acquire);
		pmalloc_protect_pool(pool);
		racing_protects += !last;
		for (int t = 0; t < RACE_THREADS; t++) {
			for (size_t i = checked[t]; i < snap[t]; i++) {
				const struct race_obj *o = &threads[t].objs[i];
				require(pmalloc_is_protected((void *)o->addr) &&
					pmalloc_is_protected((void *)(o->addr + o->size - 1)),
					      "object %zu of thread %d (%p, %zu bytes) returned before a "
					      "protect is not protected after it", i, t,
					      (void *)o->addr, o->size);
			}
			checked[t] = snap[t];
		}
	}
	struct race_obj *all = malloc(RACE_THREADS * RACE_ALLOCS * sizeof(*all));
	ck_assert_ptr_nonnull(all);
	size_t n = 0, requested = 0;
	for (int t = 0; t < RACE_THREADS; t++) {
		ck_assert_int_eq(pthread_join(threads[t].tid, NULL), 0);
		ck_assert_int_eq(threads[t].errors, 0);
		ck_assert_uint_eq(checked[t], RACE_ALLOCS);
		for (size_t i = 0; i < RACE_ALLOCS; i++) {
			all[n++] = threads[t].objs[i];
			requested += threads[t].objs[i].size;
		}
		free(threads[t].objs);
	}
	ck_assert_uint_gt(racing_protects, 1);
	qsort(all, n, sizeof(*all), cmp_obj);
	for (size_t i = 0; i < n; i++) {
		require(all[i].addr % OBJ_ALIGN == 0, "object %p is misaligned", (void *)all[i].addr);
		if (i + 1 < n)
			require(all[i].addr + all[i].size <= all[i + 1].addr,
				      "objects overlap: %p (%zu bytes) and %p", (void *)all[i].addr,
				      all[i].size, (void *)all[i + 1].addr);
	}
	free(all);
	struct pmalloc_stats st = stats_of(pool);
	ck_assert_uint_eq(st.objects, RACE_THREADS * RACE_ALLOCS);
	ck_assert_uint_eq(st.requested_bytes, requested);
	ck_assert_uint_ge(st.used_bytes, requested);
	ck_assert_uint_ge(st.protected_bytes, st.used_bytes);
	char *after = pmalloc(pool, 100);
	ck_assert_ptr_nonnull(after);
	after[99] = 'w';
	ck_assert_int_eq(pmalloc_is_protected(after), 0);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* ---- per-thread regions ----------------------------------------------- */

#define SHORT_THREADS 200

static void *alloc_one(void *arg)
{
	char *p = pmalloc(arg, 48);
	if (p)
		memset(p, 0x5a, 48);
	return p;
}

/* Threads that allocate once and exit leave nothing behind but their
 * objects: their regions leave the pool (counted, protected by the next
 * protect), and the room they did not use goes to the next thread instead
 * of a new span each, protects in between or not. */
START_TEST(test_exited_threads_leave_no_region_behind)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *objs[SHORT_THREADS];
	for (int i = 0; i < SHORT_THREADS; i++) {
		pthread_t t;
		void *ret;
		ck_assert_int_eq(pthread_create(&t, NULL, alloc_one, pool), 0);
		ck_assert_int_eq(pthread_join(t, &ret), 0);
		objs[i] = ret;
		ck_assert_ptr_nonnull(objs[i]);
		if (i % 20 == 19)
			pmalloc_protect_pool(pool);   /* a protect takes what was used, not the room */
	}
	struct pmalloc_stats st = stats_of(pool);
	ck_assert_uint_eq(st.objects, SHORT_THREADS);
	ck_assert_uint_eq(st.requested_bytes, SHORT_THREADS * 48);
	ck_assert_msg(st.mapped_bytes <= 256 * KiB, "%d one-object threads mapped %zu bytes", SHORT_THREADS,
		      (size_t)st.mapped_bytes);
	pmalloc_protect_pool(pool);
	for (int i = 0; i < SHORT_THREADS; i++)
		require(pmalloc_is_protected(objs[i]) && pmalloc_is_protected(objs[i] + 47),
			"object of exited thread %d is not protected", i);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* More pools than a thread has region slots, used in turn: every object is
 * its own, each pool counts only its own, and protecting one pool protects
 * none of the others' objects. */
START_TEST(test_many_pools_used_in_turn)
{
	enum { POOLS = 7, ROUNDS = 300 };
	struct pmalloc_pool *pools[POOLS];
	unsigned char *objs[POOLS][ROUNDS];
	for (int k = 0; k < POOLS; k++)
		pools[k] = pmalloc_create_pool();
	for (int i = 0; i < ROUNDS; i++)
		for (int k = 0; k < POOLS; k++) {
			objs[k][i] = pmalloc(pools[k], 24 + (size_t)k);
			require(objs[k][i], "pmalloc failed");
			memset(objs[k][i], k * ROUNDS + i, 24 + (size_t)k);
		}
	pmalloc_protect_pool(pools[3]);
	for (int k = 0; k < POOLS; k++) {
		struct pmalloc_stats st = stats_of(pools[k]);
		ck_assert_uint_eq(st.objects, ROUNDS);
		ck_assert_uint_eq(st.requested_bytes, ROUNDS * (24 + (size_t)k));
		for (int i = 0; i < ROUNDS; i++) {
			require(first_not(objs[k][i], 24 + (size_t)k, (unsigned char)(k * ROUNDS + i)) ==
					24 + (size_t)k, "object %d of pool %d was overwritten", i, k);
			require(pmalloc_is_protected(objs[k][i]) == (k == 3),
				"object %d of pool %d: protected %d", i, k, pmalloc_is_protected(objs[k][i]));
		}
	}
	for (int k = 0; k < POOLS; k++)
		pmalloc_destroy_pool(pools[k]);
}
END_TEST

struct holder {
	struct pmalloc_pool *pool;
	char *obj;
	pthread_barrier_t ready, done;
};

static void *hold_region(void *arg)
{
	struct holder *h = arg;
	h->obj = pmalloc(h->pool, 100);
	pthread_barrier_wait(&h->ready);
	pthread_barrier_wait(&h->done);
	return NULL;
}

/* fork() while another thread has a region in the pool: in the child that
 * thread is gone, and protect still takes its objects; what the child
 * allocates afterwards is writable. */
/* A thread that sees pmalloc_is_protected() say 1 writes at once: the
 * protect, made by another thread, must be complete by then (the marks
 * the fault handler believes are raised before the mprotect; the query's
 * only after it).  Each run a child that must die by SIGSEGV. */
static char *volatile query_obj;

static void *query_then_write(void *arg)
{
	(void)arg;
	while (pmalloc_is_protected(query_obj) != 1)
		;
	query_obj[0] = 'X';
	return NULL;
}

static void query_child(void *arg)
{
	(void)arg;
	struct pmalloc_pool *p = pmalloc_create_pool();
	pthread_t tid;
	if (!p || !(query_obj = pmalloc(p, 64)))
		_exit(3);
	memset(query_obj, 'a', 64);
	if (pthread_create(&tid, NULL, query_then_write, NULL) != 0)
		_exit(4);
	pmalloc_protect_pool(p);
	pthread_join(tid, NULL);
	_exit(0);                        /* the write went through */
}

START_TEST(test_is_protected_means_read_only)
{
	for (int i = 0; i < 50; i++) {
		struct test_child c;
		test_run_child(query_child, NULL, &c);
		ck_assert_msg(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGSEGV,
			      "run %d: status 0x%x (0: the write after pmalloc_is_protected() == 1 went through); stderr: %s",
			      i, c.status, c.err);
	}
}
END_TEST

START_TEST(test_fork_child_protects_other_threads_objects)
{
	struct holder h = { .pool = pmalloc_create_pool() };
	pthread_barrier_init(&h.ready, NULL, 2);
	pthread_barrier_init(&h.done, NULL, 2);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, hold_region, &h), 0);
	pthread_barrier_wait(&h.ready);
	ck_assert_ptr_nonnull(h.obj);
	char *mine = pmalloc(h.pool, 100);
	ck_assert_ptr_nonnull(mine);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* A new thread may be given the gone one's stack and TLS. */
		pthread_t t2;
		void *other = NULL;
		if (pthread_create(&t2, NULL, alloc_one, h.pool) != 0 || pthread_join(t2, &other) != 0)
			_exit(2);
		pmalloc_protect_pool(h.pool);
		int ok = pmalloc_is_protected(h.obj) && pmalloc_is_protected(h.obj + 99) &&
			 pmalloc_is_protected(mine) && other && pmalloc_is_protected(other);
		char *late = pmalloc(h.pool, 100);
		if (late)
			memset(late, 1, 100);
		ok = ok && late && !pmalloc_is_protected(late);
		struct pmalloc_stats st;
		ok = ok && pmalloc_pool_stats(h.pool, &st) == 0 && st.objects == 4;
		_exit(ok ? 0 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	pthread_barrier_wait(&h.done);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pmalloc_destroy_pool(h.pool);
}
END_TEST

/* The VmFlags of the /proc/self/smaps entry holding addr contain flag. */
static bool vma_has_flag(const void *addr, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	ck_assert_ptr_nonnull(f);
	char line[512], pat[8];
	snprintf(pat, sizeof(pat), " %s", flag);
	bool in = false, found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &s, &e, perms) == 3)
			in = (uintptr_t)addr >= s && (uintptr_t)addr < e;
		else if (in && strncmp(line, "VmFlags:", 8) == 0)
			found = strstr(line, pat) != NULL;
	}
	fclose(f);
	return found;
}

/* A pool that has grown past a few MiB gets transparent huge pages for its
 * new spans; a small one does not (it would cost 2 MiB of memory). */
START_TEST(test_large_spans_use_huge_pages)
{
	struct pmalloc_pool *small = pmalloc_create_pool();
	char *s = pmalloc(small, 64);
	ck_assert_ptr_nonnull(s);
	s[0] = 1;
	ck_assert_msg(!vma_has_flag(s, "hg"), "a one-object pool is advised for huge pages");
	struct pmalloc_pool *big = pmalloc_create_pool();
	char *last = NULL;
	for (size_t total = 0; total < 8 * MiB; total += 128) {
		last = pmalloc(big, 128);
		require(last, "pmalloc failed");
	}
	last[0] = 1;
	ck_assert_msg(vma_has_flag(last, "hg"), "an 8 MiB pool's last span is not advised for huge pages");
	pmalloc_destroy_pool(big);
	pmalloc_destroy_pool(small);
}
END_TEST

/* Pages of [p, p+len) present in memory (mincore). */
static size_t present_pages(const void *p, size_t len)
{
	static unsigned char vec[1024];
	size_t pages = len / page_size();
	ck_assert_uint_le(pages, sizeof(vec));
	ck_assert_int_eq(mincore((void *)page_of(p), len, vec), 0);
	size_t n = 0;
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	return n;
}

/* A pool of one small object costs one page of memory: its 64 KiB span is
 * present only where it was touched (huge pages are for spans of 2 MiB and
 * more).  Counted exactly, page by page (mincore). */
START_TEST(test_one_object_pool_is_one_page)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *p = pmalloc(pool, 16);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 16);
	/* A fresh pool's first object starts its first span, of 64 KiB. */
	ck_assert_uint_eq((uintptr_t)p % (64 * KiB), 0);
	size_t resident = present_pages(p, 64 * KiB);
	ck_assert_msg(resident == 1, "a one-object pool has %zu pages of its span resident", resident);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* Past its first MiB, a thread's pool memory is made present ahead of the
 * objects in one system call per 256 KiB, not a page fault per 4 KiB, and
 * never more than 256 KiB ahead.  A fresh pool's spans grow 64 KiB, 64,
 * 128, 256, 512, then 1 MiB (its first 64 KiB filled here): that one's
 * pages past the last object are present up to 256 KiB past where the span
 * was entered, and none beyond. */
START_TEST(test_memory_is_populated_ahead_within_bound)
{
	/* MADV_POPULATE_WRITE is Linux 5.14's: without it, pages fault. */
	void *probe = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(probe, MAP_FAILED);
	if (madvise(probe, page_size(), MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
		fprintf(stderr, "test_memory_is_populated_ahead_within_bound: no MADV_POPULATE_WRITE in "
				"this kernel: not checked\n");
		return;
	}
	munmap(probe, page_size());
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *p = NULL;
	for (size_t total = 0; total < 1 * MiB + 64 * KiB; total += 128) {
		p = pmalloc(pool, 128);
		require(p, "pmalloc failed");
		memset(p, 1, 128);
	}
	char *next = (char *)page_of(p) + page_size();
	size_t ahead = present_pages(next, 512 * KiB);
	ck_assert_msg(ahead > 0, "no page past the last object is present: not populated ahead");
	ck_assert_msg(ahead * page_size() <= 256 * KiB,
		      "%zu KiB past the last object are present (bound: 256 KiB)", ahead * page_size() / KiB);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* Whether this process can get transparent huge pages: the system's mode
 * is not [never] and the process has not opted out (prctl). */
static bool thp_offered(void)
{
	char buf[128] = "";
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 && !strstr(buf, "[never]") && prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0;
}

/* A pool that grows large takes its fresh memory 2 MiB at a time where the
 * kernel offers huge pages, not one fault per 4 KiB page: filling 32 MiB
 * (8192 pages) with small objects takes fewer than 2048 page faults, the
 * count exact (getrusage).  Expected: 512 for the first 2 MiB of small
 * spans, 512 for the objects' records, one per huge page. */
START_TEST(test_large_pool_first_touches_take_huge_pages)
{
	if (!thp_offered()) {
		fprintf(stderr, "test_large_pool_first_touches_take_huge_pages: no transparent huge pages "
				"on this system (or for this process): not checked\n");
		return;
	}
	struct pmalloc_pool *pool = pmalloc_create_pool();
	struct rusage before, after;
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &before), 0);
	for (size_t total = 0; total < 32 * MiB; total += 128) {
		char *p = pmalloc(pool, 128);
		require(p, "pmalloc failed");
		memset(p, 1, 128);
	}
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &after), 0);
	long faults = after.ru_minflt - before.ru_minflt;
	ck_assert_msg(faults < 2048, "32 MiB of a pool took %ld page faults (4 KiB pages: 8192)", faults);
	pmalloc_destroy_pool(pool);
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");

	TCase *api = test_case(s, "api", 30);
	TEST_ADD(api, test_create_pool_gives_distinct_pools,
		 test_alignment_and_usable_size_for_all_sizes, test_midsize_objects_do_not_overlap,
		 test_size_zero_gives_distinct_objects, test_pzalloc_zeroes, test_pcalloc_zeroes,
		 test_pzalloc_zeroes_recycled_memory, test_pcalloc_zeroes_recycled_memory,
		 test_pmalloc_array_gives_n_times_size, test_pmalloc_array_overflow_is_enomem,
		 test_pcalloc_overflow_is_enomem, test_huge_size_is_enomem,
		 test_null_pool_allocations_are_einval, test_null_pool_protect_and_destroy_are_noops,
		 test_pstrdup_copies, test_pstrdup_null_is_einval);

	TCase *prot = test_case(s, "protect", 30);
	tcase_add_test_raise_signal(prot, test_protect_makes_earlier_objects_read_only, SIGSEGV);
	TEST_ADD(prot, test_reads_work_after_protect, test_objects_after_protect_stay_writable);
	tcase_add_test_raise_signal(prot, test_next_protect_covers_later_objects, SIGSEGV);
	TEST_ADD(prot, test_protect_with_nothing_new_changes_nothing,
		 test_protect_of_empty_pool_changes_nothing, test_protected_64mib_pool_is_one_mapping,
		 test_protect_gives_up_page_tail, test_is_protected_outside_pools_is_zero,
		 test_is_protected_follows_protect, test_is_protected_cost_does_not_depend_on_object_size,
		 test_large_objects_work_and_are_protected);
	tcase_add_test_raise_signal(prot, test_large_object_write_after_protect_faults, SIGSEGV);

	TCase *maps = test_case(s, "mapping exhaustion", 60);
	TEST_ADD(maps, test_is_protected_is_truthful_when_protect_runs_out_of_mappings,
		 test_protect_retries_after_running_out_of_mappings);

	TCase *mem = test_case(s, "memory", 60);
	TEST_ADD(mem, test_small_objects_are_dense, test_destroy_returns_memory);
	tcase_add_test_raise_signal(mem, test_destroyed_memory_is_inaccessible, SIGSEGV);
	TEST_ADD(mem, test_many_pools_memory_does_not_grow, test_one_object_pool_is_one_page,
		 test_memory_is_populated_ahead_within_bound, test_large_pool_first_touches_take_huge_pages);

	TCase *misuse = test_case(s, "misuse", 0);
	TEST_ADD(misuse, test_destroyed_pool_use_aborts, test_double_destroy_aborts,
		 test_garbage_pool_pointer_aborts);

	TCase *ext = test_case(s, "extensions", 0);
	TEST_ADD(ext, test_named_pool_stats, test_named_pool_with_null_name_works,
		 test_free_of_pool_objects_is_counted_and_harmless,
		 test_realloc_of_pool_object_without_policy_moves_to_heap, test_pool_stats_null_is_einval,
		 test_unknown_flags_are_einval, test_sealed_pool_cannot_be_unprotected,
		 test_sealed_pool_stats_say_sealed, test_sealed_pool_destroy_keeps_memory_readable);

	TCase *threads = test_case(s, "threads", 120);
	TEST_ADD(threads, test_threads_allocate_while_protecting,
		 test_exited_threads_leave_no_region_behind, test_many_pools_used_in_turn,
		 test_is_protected_means_read_only, test_fork_child_protects_other_threads_objects,
		 test_large_spans_use_huge_pages);
	return s;
}

int main(void)
{
	/* Crash cases must not leave core files; children inherit this. */
	test_no_core_files();
	return test_run_suite(pool_suite());
}
