/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
#include "os.h"                     /* RO_PAGE: the page of state made read-only (fault.c, pool.c, arena.c) */

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
	_Atomic size_t prot;                 /* [base, base+prot) is read-only; with prot_mirror:
					      * span_prot_*() */
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
	/* prot again, kept apart: two writable words that must agree.  A
	 * lookup believes the larger (a write is enforced if either says
	 * protected), a protect starts from the smaller (nothing is skipped
	 * because one says done). */
	_Atomic size_t prot_mirror;
	/* [base, base+prot_done) is read-only now: raised after the mprotect
	 * returns (prot is raised before it, for the fault handler).  Only
	 * pmalloc_is_protected() reads it, so a caller that sees 1 knows its
	 * next write faults; nothing enforces by it. */
	_Atomic size_t prot_done;
};

static inline size_t span_prot_hi(const struct span *s)
{
	size_t a = atomic_load_explicit(&s->prot, memory_order_acquire);
	size_t b = atomic_load_explicit(&s->prot_mirror, memory_order_acquire);
	return a > b ? a : b;
}

static inline size_t span_prot_lo(const struct span *s)
{
	size_t a = atomic_load_explicit(&s->prot, memory_order_relaxed);
	size_t b = atomic_load_explicit(&s->prot_mirror, memory_order_relaxed);
	return a < b ? a : b;
}

/* The owner's lock held; before the mprotect when raising it. */
static inline void span_set_prot(struct span *s, size_t v)
{
	atomic_store_explicit(&s->prot, v, memory_order_release);
	atomic_store_explicit(&s->prot_mirror, v, memory_order_release);
}

/* The arena's range, and the units of interposition pools' spans, a bit
 * each: read-only from arena_init() on, but for the page a span
 * allocation or release changes (arena_mutex held), for the length of the
 * change.  Whether an address is pool memory (free(), realloc(), the
 * SIGSEGV handler) and whether it may ever be audited or learned (fault.c)
 * are read here, never from a writable word.  Hidden: free() reads the
 * range PC-relative, without a GOT load. */
#define ARENA_UNITS_MAX (((size_t)32 << 30) >> ARENA_UNIT_SHIFT)
struct span;
struct unit_map {
	uintptr_t base;
	size_t size;                         /* 0 before arena_init() */
	_Atomic uint32_t *unit_head;         /* per unit: its span's first unit + 1; 0: none */
	struct span *spans;                  /* per unit; only a span's first unit's is used */
	uint32_t n_units;
	/* Per 64 units, two words side by side (one page opened for both):
	 * [0] the units of interposition pools' spans, [1] the units of every
	 * live span (any pool's).  The second is what a span handed out is
	 * checked against before it is made writable: a free list or a
	 * next-unit index overwritten cannot hand out memory a protect
	 * covers (arena_span_alloc). */
	uint64_t bits[ARENA_UNITS_MAX / 64][2];
};
union arena_ro_page {
	struct unit_map m;
	unsigned char pages[ALIGN_UP(sizeof(struct unit_map), RO_PAGE)];
};
extern union arena_ro_page units_ro __attribute__((visibility("hidden")));
#define arena_base (units_ro.m.base)
#define arena_size (units_ro.m.size)

/* Reserve the arena.  0 or -errno.  Called once, from pool.c's global
 * initialisation (which its pthread_once serialises).  extra bytes more
 * (page-rounded), writable and present only where touched, come with the
 * side tables' mapping, at *extra_mem: the pool structs' (one mmap fewer
 * at the first pool, some 2.5 us). */
int arena_init(size_t extra, void **extra_mem);

/* ARENA_SIDE bytes more come with that mapping, for the tables of the
 * layers above that live as long as the process (resolve's range tables)
 * and for the first spans' records: no mapping of their own at arming or
 * at those spans (some 2.6 us an mmap here).  Not site.c's call-site table:
 * site.c is the arena's neighbour in the core, and includes go one way.
 * arena_side_take() hands out len bytes of it (page-rounded), zero,
 * writable, present only where touched, never handed out again (a span's
 * records are unmapped at its release: a hole); NULL before arena_init()
 * or once it is used up (the caller maps its own then).  Any thread. */
#define ARENA_SIDE ((size_t)20 << 20)
void *arena_side_take(size_t len);

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
/* Is s a span of the arena's table (the first unit's entry of a span,
 * its base and size where that entry says)?  A pointer read from writable memory (a pool's
 * list, a region) is checked so before it is followed.  Lock-free. */
bool arena_span_valid(const struct span *s);

/* The record of an object of len bytes at address at, from site: shifts
 * and ors only, for the allocation fast path.  at and len are granules
 * (at's low bits are zero, len's field holds it whole): at shifted up to
 * len's place first, or'ed, then both shifted at once, one shift and a
 * register copy fewer than apart (the same bits). */
static inline uint64_t span_record(uintptr_t at, size_t len, uint64_t site)
{
	return ((uint64_t)at << (REC_START_SHIFT - REC_SIZE_SHIFT) | (uint64_t)len)
		       << (REC_SIZE_SHIFT - ARENA_GRANULE_SHIFT) | site;
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
