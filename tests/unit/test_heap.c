/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_heap.c - white-box tests of shim/sys/heap.c's bootstrap: allocations
 * made by glibc while the next allocator is being found go back to glibc,
 * never to that allocator.  heap.c is compiled into this program, with the
 * shim's own malloc (libpmalloc_shim.so, which this program links) as the
 * "other" allocator in front of glibc; its free is watched.
 */
#include "heap.c"
#include "testutil.h"

#include <malloc.h>

/* What heap.c needs from the rest of the shim, and scratch.c (compiled in
 * too, with a real mapping: a block of the load's scratch grown once the
 * scope is paused moves to the heap, heap_realloc_from_scratch). */
#include "scratch.c"
#include <sys/mman.h>
__thread uintptr_t shim_busy __attribute__((tls_model("initial-exec")));
int pm_debug = 1;
void debug_line(const char *format, ...)
{
	(void)format;
}

int os_map_lazy(size_t len, void **ret)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	*ret = p;
	return 0;
}

int os_unmap(void *p, size_t len)
{
	return munmap(p, len) == 0 ? 0 : -errno;
}
union os_ro_page os_ro;         /* page size 0: the table is never made read-only here */
int os_protect_ro(void *p, size_t len)
{
	(void)p;
	(void)len;
	return 0;
}

int os_protect_rw(void *p, size_t len)
{
	(void)p;
	(void)len;
	return 0;
}
static int checked_frees;
/* The interposer's checked free, as init.c hands it over (heap_set_free). */
static void free_checked(void *p)
{
	checked_frees++;
	heap_next.free(p);
}

static void (*allocator_free)(void *);
static int allocator_frees;
static void watched_free(void *p)
{
	allocator_frees++;
	allocator_free(p);
}

/* Found: the allocator in front of glibc is the shim's (this program does
 * not define malloc).  With a bootstrap pointer outstanding the checked
 * entry points are in place (their allocator's free watched); with none,
 * the allocator's own. */
static void find_now(bool outstanding)
{
	atomic_store(&heap_state, HEAP_UNKNOWN);
	atomic_store(&ops_ready, false);
	heap_init();
	ck_assert_int_eq(atomic_load(&heap_state), HEAP_FOUND);
	allocator_free = real.free;
	if (outstanding) {
		ck_assert_ptr_eq(heap_next.free, checked_free);
		ck_assert_ptr_eq(heap_next.realloc, checked_realloc);
		ck_assert_ptr_eq(heap_next.usable_size, checked_usable_size);
		real.free = watched_free;
	} else {
		ck_assert_ptr_eq(heap_next.free, real.free);
		ck_assert_ptr_eq(heap_next.realloc, real.realloc);
		ck_assert_ptr_eq(heap_next.usable_size, real.usable_size);
		ck_assert_ptr_ne(heap_next.free, __libc_free);
	}
}

START_TEST(test_bootstrap_pointers_go_back_to_glibc)
{
	/* The search under way (dlsym allocating): glibc serves, recorded. */
	atomic_store(&heap_state, HEAP_FINDING);
	char *a = heap_next.malloc(100);
	char *b = heap_next.calloc(3, 10);
	char *c = heap_next.memalign(64, 50);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(((uintptr_t)c & 63), 0);
	ck_assert_int_eq(b[29], 0);
	ck_assert_uint_eq(atomic_load(&boot_live), 3);
	strcpy(a, "from glibc");

	find_now(true);
	/* malloc_usable_size of a bootstrap pointer: what was asked. */
	ck_assert_uint_eq(heap_next.usable_size(a), 100);
	/* free: glibc's, not the allocator's. */
	heap_next.free(b);
	ck_assert_int_eq(allocator_frees, 0);
	ck_assert_uint_eq(atomic_load(&boot_live), 2);
	/* realloc: moved to the allocator, glibc's copy freed. */
	char *a2 = heap_next.realloc(a, 5000);
	ck_assert_ptr_nonnull(a2);
	ck_assert_str_eq(a2, "from glibc");
	ck_assert_int_eq(allocator_frees, 0);
	ck_assert_uint_eq(atomic_load(&boot_live), 1);
	heap_next.free(c);
	ck_assert_uint_eq(atomic_load(&boot_live), 0);
	ck_assert_int_eq(allocator_frees, 0);
	/* The allocator's own pointers reach its free. */
	heap_next.free(a2);
	ck_assert_int_eq(allocator_frees, 1);
	void *d = heap_next.malloc(10);
	heap_next.free(d);
	ck_assert_int_eq(allocator_frees, 2);
}
END_TEST

START_TEST(test_realloc_during_the_search_stays_recorded)
{
	atomic_store(&heap_state, HEAP_FINDING);
	char *a = heap_next.malloc(10);
	strcpy(a, "abc");
	char *a2 = heap_next.realloc(a, 3000);
	ck_assert_ptr_nonnull(a2);
	ck_assert_str_eq(a2, "abc");
	ck_assert_uint_eq(atomic_load(&boot_live), 1);
	find_now(true);
	heap_next.free(a2);
	ck_assert_int_eq(allocator_frees, 0);
	ck_assert_uint_eq(atomic_load(&boot_live), 0);
}
END_TEST

/* Every bootstrap pointer freed before the search ends: no check is left
 * on the heap's free, realloc and malloc_usable_size. */
START_TEST(test_no_pointer_outstanding_no_check)
{
	atomic_store(&heap_state, HEAP_FINDING);
	void *a = heap_next.malloc(100);
	void *b = heap_next.realloc(NULL, 10);
	ck_assert_uint_eq(atomic_load(&boot_live), 2);
	heap_next.free(a);
	heap_next.free(b);
	ck_assert_uint_eq(atomic_load(&boot_live), 0);
	find_now(false);
	void *c = heap_next.malloc(10);
	ck_assert_uint_ge(heap_next.usable_size(c), 10);
	heap_next.free(c);
	ck_assert_uint_eq(heap_bootstrap_count(), 2);
}
END_TEST

/* A thread in a bootstrap allocation when the search ends may be about to
 * record a glibc pointer: the checks stay. */
START_TEST(test_allocation_under_way_keeps_the_check)
{
	atomic_store(&boot_entered, 1);
	find_now(true);
	atomic_store(&boot_entered, 0);
}
END_TEST

/* Once the allocator is known (ops_ready) but before its table is written,
 * a bootstrap allocation is the allocator's, never a glibc pointer, and
 * the bootstrap free and realloc give it back to the allocator. */
START_TEST(test_allocator_known_no_glibc_pointer)
{
	find_now(false);
	allocator_free = real.free;
	found.free = watched_free;
	found.realloc = real.realloc;
	atomic_store(&heap_state, HEAP_FINDING);
	char *a = boot_malloc(100);
	char *b = boot_calloc(2, 8);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(atomic_load(&boot_live), 0);
	ck_assert_uint_eq(heap_bootstrap_count(), 0);
	strcpy(a, "known");
	a = boot_realloc(a, 4000);
	ck_assert_str_eq(a, "known");
	ck_assert_uint_ge(boot_usable_size(a), 4000);
	boot_free(a);
	boot_free(b);
	ck_assert_int_eq(allocator_frees, 2);
	ck_assert_uint_eq(atomic_load(&boot_live), 0);
}
END_TEST

START_TEST(test_found_allocator_is_one_object)
{
	find_now(false);
	/* Every entry point from the shim's object, none from glibc. */
	ck_assert_ptr_eq(object_of((void *)heap_next.malloc), object_of((void *)allocator_free));
	ck_assert_ptr_eq(object_of((void *)heap_next.calloc), object_of((void *)allocator_free));
	ck_assert_ptr_eq(object_of((void *)heap_next.memalign), object_of((void *)allocator_free));
	ck_assert_ptr_ne(object_of((void *)heap_next.malloc), object_of((void *)__libc_malloc));
	ck_assert_ptr_nonnull(strstr(heap_name(), "libpmalloc_shim.so"));
}
END_TEST

/* free() jumps through entry.free: the heap's own free until the arena is
 * reserved (heap_set_checked), the checked free from then on, whichever
 * comes first. */
/* The load's scratch (scratch.c): a block grown while the scope is paused
 * leaves for the heap, its bytes with it, and the scratch counts it freed
 * (the end unmaps). */
START_TEST(test_scratch_block_grown_paused_moves_to_the_heap)
{
	find_now(false);
	scratch_begin();
	char *s = heap_malloc(8);
	ck_assert(scratch_owns(s));
	strcpy(s, "rules");
	scratch_pause(true);
	char *m = heap_realloc(s, 4000);
	ck_assert(m && !scratch_owns(m));
	ck_assert_str_eq(m, "rules");
	heap_free(m);
	scratch_end();
	ck_assert_uint_eq(scratch_len, 0);
}
END_TEST

START_TEST(test_free_entry_checks_once_the_arena_exists)
{
	const struct heap_entries checked = { .free = free_checked };

	find_now(false);
	ck_assert_ptr_eq(heap_page.entry.free, real.free);
	heap_page.entry.free(malloc(10));
	ck_assert_int_eq(checked_frees, 0);
	heap_set_checked(&checked);
	ck_assert_ptr_eq(heap_page.entry.free, free_checked);
	heap_page.entry.free(malloc(10));
	ck_assert_int_eq(checked_frees, 1);
	/* Asked before the allocator is found: found with the check. */
	atomic_store(&heap_state, HEAP_UNKNOWN);
	heap_init();
	ck_assert_ptr_eq(heap_page.entry.free, free_checked);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("heap");
	TEST_ADD(test_case(s, "bootstrap", 0), test_bootstrap_pointers_go_back_to_glibc,
		 test_realloc_during_the_search_stays_recorded, test_no_pointer_outstanding_no_check,
		 test_allocation_under_way_keeps_the_check, test_allocator_known_no_glibc_pointer,
		 test_found_allocator_is_one_object, test_free_entry_checks_once_the_arena_exists,
		 test_scratch_block_grown_paused_moves_to_the_heap);
	return test_run_suite(s);
}
