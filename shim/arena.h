/*
 * arena.h - where pool memory lives, and the lock-free answer to "is this
 * address pool memory, and which pool, object and call site is it?".
 *
 * All pools carve spans out of one reservation (the arena): an address is
 * pool memory iff it falls inside it, one subtraction and one compare, with
 * no lock, which free(), realloc() and the SIGSEGV handler all rely on.  The
 * arena is cut into 64 KiB units; unit_head[] maps a unit to the span that
 * holds it.  Object boundaries and allocation sites are kept in a side
 * mapping of each span (two bitmaps, one bit per 16-byte granule, and a
 * 16-bit site id per granule), never inside pool pages: a heap overflow
 * cannot reach them, and protecting the pool never protects them.
 */
#ifndef PMALLOC_ARENA_H
#define PMALLOC_ARENA_H

#include "common.h"

#define ARENA_UNIT_SHIFT 16
#define ARENA_UNIT ((size_t)1 << ARENA_UNIT_SHIFT)
#define ARENA_GRANULE_SHIFT 4                      /* bitmap granule == PM_ALIGN */

struct pmalloc_pool;

struct span {
	struct pmalloc_pool *_Atomic pool;  /* owner; NULL while free */
	uintptr_t base;
	size_t bytes;                        /* a multiple of ARENA_UNIT */
	size_t cursor;                       /* bytes handed out; owner's lock */
	_Atomic size_t prot;                 /* [base, base+prot) is read-only */
	size_t prot_before;                  /* prot before the protect under way; owner's lock */
	uint64_t *starts;                    /* bit g: an object starts at granule g */
	uint64_t *ends;                      /* bit g: an object ends in granule g */
	uint16_t *sites;                     /* site id of the object starting at g */
	size_t meta_bytes;
	struct span *next, *prev;            /* owner's list, or the free list */
	uint32_t first_unit;
	bool free_run;                       /* on the arena's free list */
	bool is_cur;                         /* a stripe allocates in it; owner's locks */
	_Atomic bool single;                 /* holds one large object: [single_off, +single_size) */
	size_t single_off, single_size;
};

extern uintptr_t arena_base;
extern size_t arena_size;

/* Reserve the arena (once; later calls return the first result). 0 or -errno. */
int arena_init(void);

/* Is p inside the arena?  One compare; false before arena_init(). */
static inline bool arena_contains(const void *p)
{
	return (uintptr_t)p - arena_base < arena_size;
}

/* A committed span of at least bytes, owned by pool; 0 or -ENOMEM. */
int arena_span_alloc(size_t bytes, struct pmalloc_pool *pool, struct span **ret);
/* Give the span's memory back to the system and its units to the arena. */
void arena_span_release(struct span *s);
/* Hand a span to another owner (sealed spans outlive their pool). */
void arena_span_set_owner(struct span *s, struct pmalloc_pool *pool);

/* The live span holding p, or NULL.  Lock-free, async-signal-safe. */
struct span *arena_span_of(const void *p);

/* Record an object [off, off+len) of span s allocated from site; the
 * caller holds the owner's lock. */
void span_mark(struct span *s, size_t off, size_t len, uint16_t site);

struct span_object {
	size_t start;                        /* offset of the object in the span */
	size_t size;                         /* usable size */
	uint16_t site;
};
/* The object containing offset off, if any.  Lock-free, async-signal-safe. */
bool span_object_at(const struct span *s, size_t off, struct span_object *ret);

/* The arena lock, for fork handlers (taken after any pool lock). */
void arena_lock(void);
void arena_unlock(void);

#endif
