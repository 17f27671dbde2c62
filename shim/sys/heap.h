/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * heap.h - the heap the program would have without the shim: the next
 * malloc after ours (glibc's, or an allocator the program links: jemalloc,
 * tcmalloc, mimalloc ...), as one table of entry points found once.  See
 * heap.c.
 */
#ifndef PMALLOC_HEAP_H
#define PMALLOC_HEAP_H

#include "common.h"
#include "os.h"                     /* RO_PAGE */
#include "scratch.h"

struct heap_ops {
	void *(*malloc)(size_t size);
	void (*free)(void *p);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t size);
	void *(*memalign)(size_t align, size_t size);
	size_t (*usable_size)(void *p);
};

/* What the exported malloc, free, calloc and realloc jump to (interpose.c:
 * on x86-64 each is an endbr64 and this one indirect jump, 2 instructions;
 * the heap's own malloc is then what a call through a PLT costs, plus
 * one): the heap's own functions while no pool memory exists and no
 * policy routes; free and realloc the checked ones (heap_set_checked) once
 * the arena is reserved; all four the routing ones (heap_set_routed) while
 * a policy routes allocations. */
struct heap_entries {
	void *(*malloc)(size_t size);
	void (*free)(void *p);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t size);
};

/* The table lives alone in one page, made read-only once the next
 * allocator is known: a stray write cannot point free() elsewhere.  Until
 * then its entries find the allocator on their first call.  Its writers
 * open it for their stores one at a time (a lock of heap.c's). */
/* The allocator's own functions behind the checked entry points (heap.c). */
struct heap_real {
	void (*free)(void *);
	void *(*realloc)(void *, size_t);
	size_t (*usable_size)(void *);
	void *(*aligned_alloc)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	const char *name;
};
union heap_page {
	struct {
		struct heap_ops ops;
		struct heap_entries entry;
		/* The routing entries are in (heap_set_routed): what the shim's
		 * other exported allocators (strdup, memalign ...) test before
		 * routing, one load. */
		bool routed;
		/* heap.c's own code pointers, in the same page so that none is
		 * left writable once the table is (issue 27: no writable code
		 * pointer the host did not have; tests/integration/relro.sh):
		 * the allocator's functions, glibc's while it was being found,
		 * and what heap_set_checked and heap_set_routed asked for. */
		struct heap_real real;
		struct heap_ops found;
		struct heap_entries want_checked, want_routed;
		bool want_is_routed;
	};
	char page[RO_PAGE];
};
extern union heap_page heap_page __attribute__((visibility("hidden")));
/* Offsets the entry stubs' assembly jumps through (interpose.c). */
#define HEAP_ENTRY_MALLOC 48
#define HEAP_ENTRY_FREE 56
#define HEAP_ENTRY_CALLOC 64
#define HEAP_ENTRY_REALLOC 72

/* The heap's entry points.  Calling one costs what calling the allocator
 * through a PLT does: one indirect jump. */
#define heap_next (heap_page.ops)

/* The shim's own allocations, by name: straight to the heap, never through
 * the malloc family the shim exports to the program (interpose.c), whose
 * routing would otherwise have to be told to keep out; on the thread that
 * loads the policy, from the load's own memory instead (scratch.h).  What
 * they return is freed with heap_free. */
static inline void *heap_malloc(size_t size)
{
	void *p = unlikely(scratch_here) ? scratch_alloc(size) : NULL;
	return p ? p : heap_next.malloc(size);
}

static inline void *heap_calloc(size_t n, size_t size)
{
	size_t total;
	if (unlikely(scratch_here) && !__builtin_mul_overflow(n, size, &total)) {
		void *p = scratch_alloc(total);
		if (p)
			return p;
	}
	return heap_next.calloc(n, size);
}

/* A block of the load's scratch grown where the scratch cannot: moved to
 * the heap (heap.c). */
void *heap_realloc_from_scratch(void *p, size_t size);

static inline void *heap_realloc(void *p, size_t size)
{
	if (unlikely(scratch_owns(p)))
		return heap_realloc_from_scratch(p, size);
	if (unlikely(scratch_here) && !p)
		return heap_malloc(size);
	return heap_next.realloc(p, size);
}

static inline void heap_free(void *p)
{
	if (unlikely(scratch_owns(p)))
		scratch_free(p);
	else
		heap_next.free(p);
}

char *heap_strdup(const char *s);
char *heap_strndup(const char *s, size_t n);

/* The arena is being reserved: from now on free() and realloc() must check
 * for pool pointers (e's free and realloc, the interposer's, which this
 * layer cannot know by name).  Called from the arena's reserve hook
 * (init.c), before any pool memory is handed out; idempotent. */
void heap_set_checked(const struct heap_entries *e);
/* A policy routes allocations (e: all four entries), or no longer does
 * (NULL: the heap's own, or the checked ones).  Normal context; a mutex
 * orders the writers (the page is opened for the stores). */
void heap_set_routed(const struct heap_entries *e);

/* Find the next allocator now (idempotent; shim_init calls it so that the
 * table is read-only before main).  Safe before constructors have run. */
void heap_init(void);

/* Which allocator serves the heap: the file name of the object defining
 * the next malloc (libc.so.6, libjemalloc.so.2 ...); for PMALLOC_DEBUG. */
const char *heap_name(void);
/* How many allocations glibc served while the next allocator was being
 * found (dlsym allocating, or another thread meanwhile). */
unsigned int heap_bootstrap_count(void);

#endif
