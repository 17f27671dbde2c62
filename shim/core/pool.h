/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool.h - pools: the seed API's objects, shared by the public API
 * (api.c) and the interposition, which creates one pool per policy pool.
 *
 * Each thread allocates from its own region of a pool (a span it alone
 * bumps in), found in a small per-thread table indexed by the pool's
 * address: the fast path below takes no lock and no atomic instruction.
 */
#ifndef PMALLOC_POOL_H
#define PMALLOC_POOL_H

#include "common.h"
#include "arena.h"

#include <pthread.h>
#include "ro.h"

#define POOL_NAME 64

/* Objects of at most this many bytes are bump-allocated in a region; larger
 * ones get a span of their own. */
#define POOL_SMALL_MAX ((size_t)256 << 10)
static_assert(POOL_SMALL_MAX >> ARENA_GRANULE_SHIFT <= REC_MAX_GRANULES, "sizes fit a record");

/* One thread's bump region in one pool.  It lives in that thread's TLS (a
 * few slots, the one used last first), writable: the fast path believes
 * its cursor, but the slow path and every protect check that its span is
 * the pool's and the cursor inside it (fatal otherwise), so objects handed
 * out elsewhere end the process at the next trigger at the latest.  It
 * is linked into the pool's list, so pool_protect() can read its cursor;
 * it is unlinked (its statistics folded into the pool) when the thread
 * exits, when the slot is needed for another pool, and in a forked child
 * for every thread but the one that forked. */
struct pool_region {
	struct pmalloc_pool *pool;       /* &pool_unbound when the slot is free */
	uint64_t stamp;                  /* pool->stamp when last seen (pool's lock) */
	uintptr_t cur, end;              /* free room [cur, end) of span, up to touched; end == cur: always slow */
	uint64_t *rec;                   /* where the next record goes */
	size_t requested;                /* since the region was bound ... */
	struct span *span;               /* pool's lock */
	size_t used;                     /* ... (apart: no vector code for two adds) */
	size_t next_span_bytes;
	bool first_span_done;
	uintptr_t touched;               /* span's pages below: populated, or the fast path's to fault */
	struct pool_region *next, *prev; /* the pool's regions; pool's lock */
	bool shared;                     /* no thread's: pool_alloc_in's caller owns it */
	uint64_t pad[2];
};
#define POOL_SLOTS 4
#define POOL_REGION_SHIFT 7
static_assert(sizeof(struct pool_region) == 1u << POOL_REGION_SHIFT, "a region is a power of two");

struct pool_thread {
	/* The slot used last, as its byte offset in slot[]: masked at each
	 * use, so whatever is written here picks one of this thread's own
	 * slots, never a region elsewhere (a pointer here, overwritten with
	 * the address of a fake region in attacker data, would hand out her
	 * memory with no protect ever checking it: issue 27, row 2).  Cost:
	 * an AND and an address computation from the thread pointer, about
	 * 2 instructions of the fast path. */
	uintptr_t active;
	uintptr_t last_ra;               /* the last call site seen by the API ... */
	uint64_t last_site;              /* ... and its site id */
	bool registered;                 /* the thread-exit destructor is armed */
	struct pool_region slot[POOL_SLOTS];
};
extern __thread struct pool_thread pool_tls __attribute__((tls_model("initial-exec")));
#define POOL_ACTIVE_MASK ((uintptr_t)(POOL_SLOTS - 1) << POOL_REGION_SHIFT)
static_assert((POOL_SLOTS & (POOL_SLOTS - 1)) == 0, "the slot index is masked");

/* This thread's slot used last: always one of its slots. */
static inline struct pool_region *pool_active(void)
{
	return (struct pool_region *)((char *)pool_tls.slot + (pool_tls.active & POOL_ACTIVE_MASK));
}

static inline void pool_set_active(const struct pool_region *r)
{
	pool_tls.active = (uintptr_t)((const char *)r - (const char *)pool_tls.slot);
}

struct pool_totals {
	size_t objects, requested, used, protected_bytes, mapped, protect_calls, protect_failures;
	size_t freed_protected;
};

#define POOL_SHIFT 9

/* A pool struct is writable memory, and holds no decision that is
 * believed unchecked: whether a write into it is enforced, audited or
 * learned is fault.c's read-only state's to say (fault_arm), whether it
 * seals and its cap pool.c's read-only table's; the lists a protect walks
 * are checked span by span (arena_span_valid, the span's owner), and the
 * protecting thread's own regions are read from its TLS as well, so a
 * list head overwritten hides nothing from the protect.  Nothing here is
 * read to let a write through. */
struct pmalloc_pool {
	uint64_t magic;                  /* POOL_MAGIC ^ address while alive */
	_Atomic uint64_t stamp;          /* changes on every protect and on destroy */
	pthread_mutex_t lock;            /* everything below but the atomics */
	struct span *first, *last;       /* every span, by age */
	struct span *partial;            /* spans with room that no region has */
	struct pool_region *regions;     /* the threads' regions */
	size_t objects;                  /* large objects (spans of their own) */
	size_t requested, used;          /* of large objects, and of regions that left */
	size_t protected_bytes, mapped, protect_calls, protect_failures;
	_Atomic size_t capped_used;      /* bytes handed out, kept only under a cap (pool.c's
					  * read-only table has the cap); with capped_mirror */
	_Atomic size_t frees;            /* free()/realloc() of its objects, accepted and ignored */
	_Atomic size_t freed_protected;  /* bytes of those objects that lay in protected memory (a
					  * reload's old configuration): what protected_bytes holds
					  * that the program no longer uses */
	_Atomic int capped_said;         /* max_bytes reached, said once */
	int index;                       /* interposition pool number, -1 for API pools */
	char name[POOL_NAME];
	char policy[POOL_NAME];          /* "" for API pools */
	struct pmalloc_pool *reg_next, *reg_prev;
	/* capped_used again, kept apart: the cap believes the smaller of the
	 * two, so one word forged high cannot send allocations to the heap. */
	_Atomic size_t capped_mirror;
} __attribute__((aligned(1u << POOL_SHIFT)));
static_assert(sizeof(struct pmalloc_pool) == 1u << POOL_SHIFT, "a pool is a power of two");

/* Lock order: registry, then a pool's lock, then the arena's. */

/* Consistent totals of p (takes its lock). */
void pool_totals(struct pmalloc_pool *p, struct pool_totals *ret);

/* A pool of the interposition (init.c): pool_create's flag, never the API's. */
#define POOL_INTERPOSED 0x80u
/* A pool closed (pool_close()): kept with the flags, read-only, because it
 * decides where allocations go (the heap once closed). */
#define POOL_CLOSED 0x40u

/* A new pool (flags: PMALLOC_POOL_SEAL, POOL_INTERPOSED), with a cap on
 * the bytes it hands out (0: none; interposition pools only), both kept
 * in pool.c's read-only table; NULL with errno = ENOMEM. */
struct pmalloc_pool *pool_create(const char *name, unsigned int flags, uint64_t max_bytes);
/* p's flags, from pool.c's read-only table (never the pool struct): a
 * pointer that is no live pool's is sealed and not interposed. */
bool pool_seals(const struct pmalloc_pool *p);
bool pool_interposed(const struct pmalloc_pool *p);
/* Is p a live pool (or the owner of destroyed sealed spans)?  For a
 * pointer read from writable memory (a span's owner) before it is
 * followed.  Async-signal-safe. */
bool pool_valid(const struct pmalloc_pool *p);
/* Validate a caller's pool pointer: fatal() on anything but a live pool. */
void pool_check(const struct pmalloc_pool *p, const char *api);

/* Everything but the fast path: binding a region, a new span, a protect or
 * destroy seen since, alignment, a cap, a large object, a bad pool (fatal
 * with api's name).  NULL with errno = ENOMEM (also past max_bytes). */
void *pool_alloc_slow(struct pmalloc_pool *p, size_t size, size_t align, uint16_t site, const char *api);

/* size bytes aligned to align (a power of two >= PM_ALIGN) from pool p, a
 * live pool, for call site site; NULL with errno = ENOMEM.
 *
 * The fast path, about 35 instructions: this thread's region for p (the
 * region it used last: one compare), room in it (one compare), the cursor published, then p's stamp
 * compared with the region's (one compare: p is alive and nothing was
 * protected since), one record and two counters written.  The cursor is
 * stored before the stamp is loaded; pool_protect() changes the stamp, then
 * runs a barrier on every thread, then reads the cursors: either it sees
 * this object, or this thread sees the new stamp and starts again.
 */
static inline __attribute__((always_inline)) void *pool_alloc_api(struct pmalloc_pool *p, size_t size,
								   size_t align, uint64_t site,
								   const char *api)
{
	struct pool_region *r = pool_active();
	if (unlikely(r->pool != p || size - 1 >= POOL_SMALL_MAX || align != PM_ALIGN))
		return pool_alloc_slow(p, size, align, (uint16_t)site, api);
	size_t need = ALIGN_UP(size, PM_ALIGN);
	uintptr_t at = r->cur;
	if (unlikely(at + need > r->end))
		return pool_alloc_slow(p, size, align, (uint16_t)site, api);
	r->cur = at + need;
	__asm__ __volatile__("" ::: "memory");     /* the store above, then the load below */
	if (unlikely(atomic_load_explicit(&p->stamp, memory_order_relaxed) != r->stamp)) {
		r->cur = at;
		return pool_alloc_slow(p, size, align, (uint16_t)site, api);
	}
	uint64_t *rec = r->rec;
	*rec = span_record(at, need, site);
	r->rec = rec + 1;
	r->requested += size;
	r->used += need;
	return (void *)at;
}

static inline void *pool_alloc(struct pmalloc_pool *p, size_t size, size_t align, uint16_t site)
{
	return pool_alloc_api(p, size, align, site, "malloc");
}

/* size bytes from p in region r, a region no thread's slot holds (learn.c's
 * lanes: one per allocation context, so that a page holds one context's
 * objects); the caller serialises every use of r, which must stay mapped
 * and zeroed until its first use, and is never given back.  fresh_page:
 * start on a page no earlier object of r touches (a new span always starts
 * on a page of its own, so a page holds objects of r only).  Takes p's lock (one
 * uncontended lock: no fast path).  NULL with errno = ENOMEM, also once p
 * is closed. */
void *pool_alloc_in(struct pmalloc_pool *p, struct pool_region *r, size_t size, size_t align, uint16_t site,
		    bool fresh_page);

/* pool_alloc_in() for a closed pool: a reload's new generation (reload.c,
 * the main thread in a reload window), in region r of the caller's; never
 * for a page of an earlier protect (the region skips past it). */
void *pool_alloc_reopened(struct pmalloc_pool *p, struct pool_region *r, size_t size, size_t align,
			  uint16_t site, bool fresh_page);

/* The pool takes nothing more (take = "until-trigger", and every pool of a
 * learn policy, at its first trigger): every later pool_alloc and
 * pool_alloc_in returns NULL (the caller goes to the heap).  Decided under
 * the pool's lock with the stamp changed, so an allocation either lands
 * before it (and the protect that follows sees it) or not at all: nothing
 * enters after the first protect.  The closed mark is a flag of pool.c's
 * read-only table, never a word of the pool struct: a stray write can
 * neither close a pool (send its sites to the heap) nor open one. */
void pool_close(struct pmalloc_pool *p);
bool pool_closed(const struct pmalloc_pool *p);

/* Protect what is new; returns the bytes newly made read-only. */
size_t pool_protect(struct pmalloc_pool *p, const char *api);
/* Everything protected so far read-only again (pages a reload window
 * opened, reload.c); fatal() with api's name when mprotect fails.  Not for
 * sealed pools (their memory was never opened). */
void pool_reprotect(struct pmalloc_pool *p, const char *api);
void pool_destroy(struct pmalloc_pool *p);
/* In a forked child only (its private copy of the pages): make what p
 * protected writable again and its marks say unprotected, so the child's
 * own next protect takes it all again.  Returns the bytes reopened; 0 for
 * a sealed pool, which the kernel keeps read-only.  Takes p's lock. */
size_t pool_reopen(struct pmalloc_pool *p);

struct pool_hit {
	uintptr_t addr;                  /* the address looked up */
	struct pmalloc_pool *pool;
	struct span *span;
	bool is_protected;
	bool in_object;
	uintptr_t object;                /* start, when in_object */
	size_t object_size;
	uint16_t site;
};
/* What p is in pool memory; false when it is not pool memory.  Lock-free,
 * async-signal-safe. */
bool pool_lookup(const void *p, struct pool_hit *ret);

/* free() of pool object p: counted, the memory stays; fatal() when p is
 * pool memory but not the start of an object (a corrupt pointer). */
void pool_note_free(void *p, const char *api);
/* Usable size of pool object p; fatal() like pool_note_free. */
size_t pool_usable_size(const void *p, const char *api);
/* 1 if p lies in protected pool memory: from the moment a protect
 * publishes it, before its mprotect (what the fault handler and realloc
 * must believe). */
bool pool_is_protected(const void *p);
/* 1 if p lies in pool memory whose protect has completed: a write into it
 * faults now (pmalloc_is_protected()'s answer). */
bool pool_is_read_only(const void *p);

/* Install fork handlers (once).  The fault handler is not pool.c's: whoever
 * creates a pool (api.c, init.c) installs it (fault_install()) before the
 * pool can be protected, so that fault.c uses pool.c and not the reverse. */
void pool_global_init(void);

/* This file's read-only page, for the one list (ro.h). */
extern const struct ro_span pool_ro_span;

#endif
