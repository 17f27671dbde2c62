/*
 * arena.h - where pool memory lives, and the lock-free answer to "is this
 * address pool memory, and which pool, object and call site is it?".
 *
 * All pools carve spans out of one reservation (the arena): an address is
 * pool memory iff it falls inside it, one subtraction and one compare, with
 * no lock, which free(), realloc() and the SIGSEGV handler all rely on.  The
 * arena is cut into 64 KiB units; unit_head[] maps a unit to the span that
 * holds it.  Objects and their allocation sites are recorded in a side
 * mapping of each span, never inside pool pages (a heap overflow cannot
 * reach them, and protecting the pool never protects them): one 64-bit
 * record per object, appended in address order by the one thread that
 * allocates in the span, so a lookup is a binary search.  Spans of 2 MiB
 * and more are 2 MiB-aligned and use transparent huge pages.
 */
#ifndef PMALLOC_ARENA_H
#define PMALLOC_ARENA_H

#include "common.h"

/* The alignment and size of a page of state made read-only after it is
 * written (fault.c, pool.c, arena.c): a static at a link-time address, so
 * no writable pointer leads to it.  The largest page size of the kernels
 * built for: mprotect needs whole pages. */
#if defined(__x86_64__)
#define RO_PAGE 4096u
#else
#define RO_PAGE 65536u
#endif

#define ARENA_UNIT_SHIFT 16
#define ARENA_UNIT ((size_t)1 << ARENA_UNIT_SHIFT)
#define ARENA_GRANULE_SHIFT 4                      /* bitmap granule == PM_ALIGN */
/* Spans of this many bytes and more are advised for transparent huge pages. */
#define ARENA_HUGE ((size_t)2 << 20)

struct pmalloc_pool;

/* A record: the object's first granule (its address / 16, modulo 2^32:
 * a span is far smaller, so the span-relative granule is the difference
 * with the base's), its size in granules, its site.  Never 0 (size >= 1),
 * so the zero-filled tail of the records mapping marks where they end. */
#define REC_START_SHIFT 32
#define REC_SIZE_SHIFT 16
#define REC_MAX_GRANULES 0xffffu

struct span {
	struct pmalloc_pool *_Atomic pool;  /* owner; NULL while free */
	uintptr_t base;
	size_t bytes;                        /* a multiple of ARENA_UNIT */
	size_t cursor;                       /* bytes handed out, as of the last protect or
					      * of its region leaving it; owner's lock */
	_Atomic size_t prot;                 /* [base, base+prot) is read-only */
	size_t prot_before;                  /* prot before the protect under way; owner's lock */
	uint64_t *recs;                      /* bytes / 16 records; NULL for a single object */
	uint64_t *rec_next;                  /* where the next record goes, when no region has it */
	size_t meta_bytes;
	struct span *next, *prev;            /* owner's list, or the free list */
	struct span *partial_next;           /* owner's spans with room and no region */
	uint32_t first_unit;
	bool free_run;                       /* on the arena's free list */
	bool is_cur;                         /* open: a region allocates in it, or it is on the
					      * owner's partial list; owner's lock */
	_Atomic bool single;                 /* holds one large object: [single_off, +single_size) */
	uint16_t single_site;
	size_t single_off, single_size;
};

/* Hidden: free() reads them PC-relative, without a GOT load each. */
extern uintptr_t arena_base __attribute__((visibility("hidden")));
extern size_t arena_size __attribute__((visibility("hidden")));

/* Reserve the arena.  0 or -errno.  Called once, from pool.c's global
 * initialisation (which its pthread_once serialises). */
int arena_init(void);

/* Is p inside the arena?  One compare; false before arena_init(). */
static inline bool arena_contains(const void *p)
{
	return (uintptr_t)p - arena_base < arena_size;
}

/* A committed span of at least bytes, owned by pool, with room for a
 * record per granule unless single (one object); 0 or -ENOMEM.  interposed:
 * pool is one of the interposition's (pool.c's read-only flags say so),
 * and the span's units are marked so in the read-only unit map. */
int arena_span_alloc(size_t bytes, bool single, bool interposed, struct pmalloc_pool *pool, struct span **ret);
/* Is p in a span of an interposition pool?  From read-only state only (the
 * unit map and the arena's range as reserved, not arena_base): a span's
 * owner overwritten cannot make an API pool's memory answer yes.  One
 * compare and a bit test; async-signal-safe. */
bool arena_interposed(const void *p);
/* Give the span's memory back to the system and its units to the arena. */
void arena_span_release(struct span *s);
/* Hand a span to another owner (sealed spans outlive their pool). */
void arena_span_set_owner(struct span *s, struct pmalloc_pool *pool);

/* The live span holding p, or NULL.  Lock-free, async-signal-safe. */
struct span *arena_span_of(const void *p);

/* The record of an object of len bytes at address at, from site: shifts
 * and ors only, for the allocation fast path. */
static inline uint64_t span_record(uintptr_t at, size_t len, uint64_t site)
{
	return (uint64_t)at << (REC_START_SHIFT - ARENA_GRANULE_SHIFT) |
	       (uint64_t)len << (REC_SIZE_SHIFT - ARENA_GRANULE_SHIFT) | site;
}

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
