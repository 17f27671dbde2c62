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
	size_t requested;                /* since the region was bound */
	/* pmalloc()'s key: pool ^ the return address of the call site whose
	 * id is site, 0 for none (cleared whenever pool changes).  One compare
	 * checks the pool and the site at once; a key matched by chance (two
	 * other addresses xoring alike) is the stamp compare's to catch, for
	 * the stamp is never another pool's.  Forging the key alone cannot
	 * send an allocation to another pool's region: its stamp would have
	 * to be forged too (two words, as pool and stamp before).  The one
	 * thing the chance match costs: a pool argument that is no pool (NULL
	 * included) is read for its stamp before the slow path refuses it, so
	 * pmalloc(NULL) could fault instead of failing with EINVAL, were a
	 * live pool's address the xor of the two call sites' return addresses
	 * (code addresses xor to a pool's only across a non-PIE program and a
	 * library, and then on the 512-byte boundary of a pool struct). */
	uintptr_t key;
	uint64_t site;
	struct span *span;               /* pool's lock */
	/* The bytes handed out: used, and what the cursor moved past mark by
	 * bumps (region_used()): the fast path counts nothing but its cursor.
	 * Every other move of cur (a new span, a protect caught up with,
	 * alignment) folds first (region_set_cur(), pool.c). */
	size_t used;
	uintptr_t mark;
	size_t next_span_bytes;
	uintptr_t touched;               /* span's pages below: populated, or the fast path's to fault */
	struct pool_region *next, *prev; /* the pool's regions; pool's lock */
	bool first_span_done;
	bool shared;                     /* no thread's: pool_alloc_in's caller owns it */
};
/* The offsets pmalloc()'s x86-64 fast path (api.c) uses. */
#define POOL_R_STAMP 8
#define POOL_R_CUR 16
#define POOL_R_END 24
#define POOL_R_REC 32
#define POOL_R_REQUESTED 40
#define POOL_R_KEY 48
#define POOL_R_SITE 56
static_assert(offsetof(struct pool_region, stamp) == POOL_R_STAMP &&
	      offsetof(struct pool_region, cur) == POOL_R_CUR && offsetof(struct pool_region, end) == POOL_R_END &&
	      offsetof(struct pool_region, rec) == POOL_R_REC &&
	      offsetof(struct pool_region, requested) == POOL_R_REQUESTED &&
	      offsetof(struct pool_region, key) == POOL_R_KEY && offsetof(struct pool_region, site) == POOL_R_SITE,
	      "api.c's fast path knows the region's layout");

/* The bytes r handed out (its thread, or a reader under the pool's lock:
 * the fast path only bumps cur, never below mark). */
static inline size_t region_used(const struct pool_region *r)
{
	return r->used + (__atomic_load_n(&r->cur, __ATOMIC_RELAXED) - r->mark);
}

#define POOL_SLOTS 4
#define POOL_REGION_SHIFT 7
static_assert(sizeof(struct pool_region) == 1u << POOL_REGION_SHIFT, "a region is a power of two");

struct pool_thread {
	struct pool_region slot[POOL_SLOTS]; /* first: a slot's offset is the thread's state's */
	/* The slot used last, as its byte offset in slot[]: masked at each
	 * use, so whatever is written here picks one of this thread's own
	 * slots, never a region elsewhere (a pointer here, overwritten with
	 * the address of a fake region in attacker data, would hand out her
	 * memory with no protect ever checking it: issue 27, row 2).  Cost:
	 * an AND and an address computation from the thread pointer, about
	 * 1 instruction of the fast path (the offset is an index of its
	 * addresses). */
	uintptr_t active;
	uintptr_t last_ra;               /* the last call site seen by the API ... */
	uint64_t last_site;              /* ... and its site id */
	bool registered;                 /* the thread-exit destructor is armed */
};
extern __thread struct pool_thread pool_tls __attribute__((tls_model("initial-exec")));
#define POOL_ACTIVE_MASK ((uintptr_t)(POOL_SLOTS - 1) << POOL_REGION_SHIFT)
#define POOL_T_ACTIVE 0x200
#define POOL_ACTIVE_MASK_IMM 0x180
static_assert(POOL_T_ACTIVE == POOL_SLOTS << POOL_REGION_SHIFT && POOL_ACTIVE_MASK_IMM == POOL_ACTIVE_MASK,
	      "api.c's fast path knows the slots' layout");
static_assert(offsetof(struct pool_thread, slot) == 0 && offsetof(struct pool_thread, active) == POOL_T_ACTIVE,
	      "the fast path adds a slot's offset to the state's");
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

/* The calling thread's pool state, for the fast path.  On x86-64 it is
 * addressed %fs-relative (GCC's __seg_fs), from its offset to the thread
 * pointer (one load, the same as any initial-exec access from a shared
 * object): no add of the thread pointer and no region address computed,
 * 2 instructions of the fast path.  Elsewhere, an ordinary pointer. */
#if defined(__x86_64__) && defined(__SEG_FS)
#define POOL_SEG __seg_fs
static inline __attribute__((always_inline)) POOL_SEG struct pool_thread *pool_tls_seg(void)
{
	uintptr_t off;
	__asm__("movq pool_tls@gottpoff(%%rip), %0" : "=r"(off));
	return (POOL_SEG struct pool_thread *)off;
}
#else
#define POOL_SEG
static inline struct pool_thread *pool_tls_seg(void)
{
	return &pool_tls;
}
#endif

/* span_record(at, next - at, site) from the new cursor next: at << 16 |
 * (next - at) is at * 0xffff + next (at's low 4 bits are zero, so at << 16
 * leaves the length's 20 bits free).  On x86-64 one imul, which the
 * compiler would otherwise turn into a copy, a shift and a subtract. */
static inline __attribute__((always_inline)) uint64_t pool_record_base(uintptr_t at, uintptr_t next)
{
	uint64_t x;
#if defined(__x86_64__)
	__asm__("imulq $0xffff, %1, %0" : "=r"(x) : "rm"(at));
#else
	x = (uint64_t)at * 0xffffu;
#endif
	return (x + next) << (REC_SIZE_SHIFT - ARENA_GRANULE_SHIFT);
}

/* size bytes aligned to align (a power of two >= PM_ALIGN) from pool p, a
 * live pool, for call site site; NULL with errno = ENOMEM.
 *
 * The fast path, about 30 instructions: this thread's region for p (the
 * region it used last: one compare), the size (one compare), room in it
 * (one compare), the cursor published, then p's stamp compared with the
 * region's (one compare: p is alive and nothing was protected since), one
 * record and the requested bytes written (the bytes used are the
 * cursor's moves: region_used()).  The cursor is stored before the stamp
 * is loaded; pool_protect() changes the stamp, then runs a barrier on
 * every thread, then reads the cursors: either it sees this object, or
 * this thread sees the new stamp and starts again.  pmalloc() has its own
 * copy on x86-64 (api.c), with the same checks.
 *
 * The region is always one of this thread's slots (the mask of active),
 * whatever its words say; the slow path and every protect check its span
 * and cursor (pool.c, region_span).
 */
static inline __attribute__((always_inline)) void *pool_alloc_api(struct pmalloc_pool *p, size_t size,
								   size_t align, uint64_t site,
								   const char *api)
{
	POOL_SEG struct pool_thread *t = pool_tls_seg();
	POOL_SEG struct pool_region *r =
		(POOL_SEG struct pool_region *)((POOL_SEG char *)t + (t->active & POOL_ACTIVE_MASK));
	/* last: the object's last byte from its start, its size rounded up
	 * to PM_ALIGN, less one.  size 0 and sizes past POOL_SMALL_MAX (a size
	 * near SIZE_MAX wrapped included) fail the one compare. */
	size_t last = (size - 1) | (PM_ALIGN - 1);
	if (unlikely(r->pool != p || last >= POOL_SMALL_MAX || align != PM_ALIGN))
		return pool_alloc_slow(p, size, align, (uint16_t)site, api);
	uintptr_t at = r->cur;
	uintptr_t next = at + last + 1;
	if (unlikely(next > r->end))
		return pool_alloc_slow(p, size, align, (uint16_t)site, api);
	r->cur = next;
	__asm__ __volatile__("" ::: "memory");     /* the store above, then the load below */
	if (unlikely(atomic_load_explicit(&p->stamp, memory_order_relaxed) != r->stamp)) {
		r->cur = at;
		return pool_alloc_slow(p, size, align, (uint16_t)site, api);
	}
	*r->rec = pool_record_base(at, next) | site;
#if defined(__x86_64__) && defined(__SEG_FS)
	/* The word added to in place (the compiler loads, adds and stores). */
	__asm__("addq %1, %0" : "+m"(r->rec) : "i"(sizeof(uint64_t)));
#else
	r->rec++;
#endif
	r->requested += size;
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
/* Is any byte of [p, p+len) so?  One look a span. */
bool pool_range_protected(const void *p, size_t len);
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
