/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool.c - protectable pools: the registry of pool structs and their
 * read-only table (flags, caps), creation, closing and destruction, each
 * thread's slots bound to a pool's regions, and fork.  The allocation slow
 * path is pool_alloc.c's, protect pool_protect.c's, the queries
 * pool_query.c's; what they take from this file is in pool_inner.h.
 *
 * Lock order (pool.h): registry_lock, a pool's lock, the arena's.  No lock
 * is held while calling anything outside the shim.  Never calls malloc.
 * Pool structs live in a mapping of the shim's own (its first pages, the
 * arena's side tables after them: one mmap for both), apart from the heap
 * and from the pages that get protected, and are validated on every API
 * call.  The table's first freeze may be held by arming (ro.h) and done
 * with its neighbours' under registry_lock: one mprotect fewer.
 */
#define _GNU_SOURCE
#include "pool.h"
#include "pool_inner.h"
#include "stderr.h"
#include "pmalloc.h"
#include "dlist.h"
#include "os.h"
#include "ro.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define POOL_MAGIC UINT64_C(0x706d616c6c6f6331)
#define POOL_MAX 65536u
#define POOL_CAPS_MAX 64u
#define PARTIAL_MIN ((size_t)4 << 10)        /* a span left with less room is not reused */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pmalloc_pool *registry;       /* live pools */
static struct pmalloc_pool *slab_free;      /* recycled structs (reg_next links) */
static uint32_t slab_next;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_ok;
static pthread_key_t exit_key;
static _Atomic uint64_t stamp_seq = 1;      /* 0 is never a live pool's stamp */

/* Where the pool structs are, and each one's flags (PMALLOC_POOL_SEAL,
 * POOL_INTERPOSED) by slab index: read-only from the first pool's creation
 * on (made so once its flags are written: one mprotect, not three), but
 * for the page pool_create() changes (registry_lock held), for the length
 * of the change.  Whether a
 * pool seals, and whether it is the interposition's, is read here, never
 * from the pool struct's words. */
struct pool_ro {
	struct pmalloc_pool *slab;           /* POOL_MAX pool structs, reserved */
	/* Caps on bytes handed out (the policy's max_bytes), by slab index + 1:
	 * a cap decides where an allocation goes (past it: the heap), so it is
	 * read here, never from the pool struct.  Interposition pools only. */
	struct { uint32_t slot; uint64_t bytes; } caps[POOL_CAPS_MAX];
	uint8_t flags[POOL_MAX];
};
static union {
	struct pool_ro s;
	unsigned char pages[ALIGN_UP(sizeof(struct pool_ro), RO_PAGE)];
} pool_ro __attribute__((aligned(RO_PAGE)));
const struct ro_span pool_ro_span = { &pool_ro, sizeof(pool_ro) };   /* ro.h: init.c lists it */
static_assert(PMALLOC_POOL_SEAL <= 0xff && POOL_INTERPOSED <= 0xff && POOL_CLOSED <= 0xff, "flags fit a byte");
static bool pool_ro_locked;                 /* registry_lock */

/* registry_lock as ro.c takes it to do a held first freeze of the table
 * (ro_freeze_locked): never between another thread's open and write. */
static void registry_take(void)
{
	pthread_mutex_lock(&registry_lock);
}

static void registry_give(void)
{
	pthread_mutex_unlock(&registry_lock);
}

/* What a free slot of pool_tls points to: never a live pool, so the fast
 * path's first compare fails for every pool, NULL included. */
static struct pmalloc_pool pool_unbound;

/* Before a thread's first allocation its active slot (0) is free: the
 * fast path's first compare fails. */
#define FREE_SLOT { .pool = &pool_unbound }
__thread struct pool_thread pool_tls __attribute__((tls_model("initial-exec"))) = {
	.active = 0,
	.slot = { FREE_SLOT, FREE_SLOT, FREE_SLOT, FREE_SLOT },
};
static_assert(POOL_SLOTS == 4, "FREE_SLOT per slot");

/* Owner of sealed spans whose pool was destroyed: the kernel keeps them.
 * Only ever read (by lookups); never allocated from or locked. */
static struct pmalloc_pool sealed_orphans = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .index = -1, .name = "(destroyed sealed pool)",
};

/* p's flags from the read-only table; a pointer that is no slab pool's
 * (sealed_orphans, or a corrupt one) is sealed and not interposed: the
 * stronger protection, and never audited. */
static unsigned int flags_of(const struct pmalloc_pool *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)pool_ro.s.slab;
	if (!pool_ro.s.slab || off >= POOL_MAX * sizeof(*p))
		return PMALLOC_POOL_SEAL;
	return pool_ro.s.flags[off / sizeof(*p)];
}

bool pool_seals(const struct pmalloc_pool *p)
{
	return flags_of(p) & PMALLOC_POOL_SEAL;
}

bool pool_interposed(const struct pmalloc_pool *p)
{
	return flags_of(p) & POOL_INTERPOSED;
}

/* Record p's flags in the read-only table (registry_lock held); 0 or
 * -ENOMEM (out of memory mappings).  Two mprotects (3.7 us measured),
 * none when the slot has those flags already (a plain pool in a fresh or
 * recycled plain slot: pmalloc_create_pool() stays 0.1 us). */
static int set_flags(const struct pmalloc_pool *p, unsigned int flags)
{
	uint8_t *f = &pool_ro.s.flags[(size_t)(p - pool_ro.s.slab)];
	if (*f == flags)
		return 0;
	if (!pool_ro_locked) {          /* the first pool: pool_create() locks the table */
		*f = (uint8_t)flags;
		return 0;
	}
	uintptr_t page = (uintptr_t)f & ~(uintptr_t)(RO_PAGE - 1);
	int r = os_protect_rw((void *)page, RO_PAGE);
	if (r < 0)
		return -ENOMEM;
	*f = (uint8_t)flags;
	if (os_protect_ro((void *)page, RO_PAGE) < 0)
		fatal("pmalloc_create_pool", "cannot make the pools' flags read-only again");
	return 0;
}

/* Record p's cap (registry_lock held), like set_flags; -ENOSPC when every
 * cap slot is taken (a pool recycled keeps its slot). */
static int set_cap(const struct pmalloc_pool *p, uint64_t bytes)
{
	uint32_t slot = (uint32_t)(p - pool_ro.s.slab) + 1;
	size_t i = 0;
	while (i < POOL_CAPS_MAX && pool_ro.s.caps[i].slot && pool_ro.s.caps[i].slot != slot)
		i++;
	if (i == POOL_CAPS_MAX)
		return bytes ? -ENOSPC : 0;
	if (pool_ro.s.caps[i].slot == (bytes ? slot : 0) && pool_ro.s.caps[i].bytes == bytes)
		return 0;
	uintptr_t page = (uintptr_t)&pool_ro.s.caps[i] & ~(uintptr_t)(RO_PAGE - 1);
	static_assert(offsetof(struct pool_ro, flags) <= RO_PAGE, "the caps are in the first page");
	if (pool_ro_locked && os_protect_rw((void *)page, RO_PAGE) < 0)
		return -ENOMEM;
	pool_ro.s.caps[i].slot = bytes || pool_ro.s.caps[i].slot ? slot : 0;
	pool_ro.s.caps[i].bytes = bytes;
	if (pool_ro_locked && os_protect_ro((void *)page, RO_PAGE) < 0)
		fatal("pmalloc_create_pool", "cannot make the pools' caps read-only again");
	return 0;
}

/* p's cap from the read-only table, 0 for none. */
uint64_t pool_cap(const struct pmalloc_pool *p)
{
	uint32_t slot = (uint32_t)(p - pool_ro.s.slab) + 1;
	for (size_t i = 0; i < POOL_CAPS_MAX && pool_ro.s.caps[i].slot; i++)
		if (pool_ro.s.caps[i].slot == slot)
			return pool_ro.s.caps[i].bytes;
	return 0;
}

/* A pool's lock: its words are the pool struct's, writable.  One forged
 * to "held" must not hang the program (nor a trigger) for good: after
 * POOL_LOCK_WAIT_S, far longer than any holder keeps it, the state is
 * taken as corrupt (fatal, with api's name). */
#define POOL_LOCK_WAIT_S 5
void pool_lock(struct pmalloc_pool *p, const char *api)
{
	int r = pthread_mutex_trylock(&p->lock);
	if (likely(r == 0))
		return;
	if (r == EBUSY) {
		uint64_t until = os_monotonic_ns(false) + (uint64_t)POOL_LOCK_WAIT_S * 1000000000u;
		struct timespec ts = { (time_t)(until / 1000000000u), (long)(until % 1000000000u) };
		if (pthread_mutex_clocklock(&p->lock, CLOCK_MONOTONIC, &ts) == 0)
			return;
	}
	fatal(api, "a pool's lock cannot be taken (corrupt pool state)");
}

uint64_t pool_new_stamp(void)
{
	return atomic_fetch_add_explicit(&stamp_seq, 1, memory_order_relaxed);
}

/* The region stops allocating in its span (pool's lock held): what it
 * handed out is recorded in the span, which is offered to the next region
 * that needs one when keep and it has room left. */
void pool_region_leave_span(struct pmalloc_pool *p, struct pool_region *r, bool keep)
{
	struct span *s = r->span;
	if (!s)
		return;
	size_t used = r->cur - s->base;
	if (used > s->cursor)
		s->cursor = used;
	s->rec_next = r->rec;
	/* On the partial list a span stays open (is_cur): a protect takes what
	 * was handed out, not the room the next region will use. */
	s->is_cur = keep && s->bytes - ALIGN_UP(s->cursor, os_page_size) >= PARTIAL_MIN;
	if (s->is_cur) {
		s->partial_next = p->partial;
		p->partial = s;
	}
	r->span = NULL;
	pool_region_set_cur(r, 0);
	r->end = 0;
	r->rec = NULL;
}

/* Unlink r from p (p's lock held), its counts folded into the pool's. */
static void region_unlink(struct pmalloc_pool *p, struct pool_region *r, bool keep)
{
	pool_region_leave_span(p, r, keep);
	p->requested += r->requested;
	p->used += region_used(r);
	r->requested = r->used = 0;
	DLIST_UNLINK(p->regions, r, prev, next);
	r->next = r->prev = NULL;
}

/* Free slot r (registry_lock held). */
static void region_unbind(struct pool_region *r)
{
	struct pmalloc_pool *q = r->pool;
	if (q == &pool_unbound)
		return;
	/* The slot's word is its thread's TLS: a pool it names is checked
	 * before its lock is taken (a forged one would hang or crash here). */
	pool_check(q, "malloc");
	pool_lock(q, "malloc");
	region_unlink(q, r, true);
	pthread_mutex_unlock(&q->lock);
	r->pool = &pool_unbound;
	r->key = 0;
	r->stamp = 0;
}

static void thread_exit(void *arg)
{
	struct pool_thread *t = arg;
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < POOL_SLOTS; i++)
		region_unbind(&t->slot[i]);
	t->registered = false;
	pthread_mutex_unlock(&registry_lock);
}

/* Slot r for pool p, freed first if another pool had it; false (ENOMEM)
 * when the thread-exit destructor cannot be armed, for a region that would
 * outlive its thread must never be linked. */
bool pool_region_bind(struct pmalloc_pool *p, struct pool_region *r)
{
	/* Outside our locks: it may allocate (keys past the first 32). */
	if (!pool_tls.registered) {
		if (pthread_setspecific(exit_key, &pool_tls) != 0)
			return false;
		pool_tls.registered = true;
	}
	pthread_mutex_lock(&registry_lock);
	region_unbind(r);
	pool_lock(p, "malloc");
	r->pool = p;
	r->key = 0;
	r->stamp = 0;                 /* refreshed by the caller, under the lock */
	r->next_span_bytes = SPAN_FIRST;
	r->first_span_done = false;
	DLIST_PUSH(p->regions, r, prev, next);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&registry_lock);
	return true;
}

static void atfork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next)
		pthread_mutex_lock(&p->lock);
	arena_lock();
}

static void atfork_parent(void)
{
	arena_unlock();
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next)
		pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&registry_lock);
}

/* Only this thread lives on in the child: the other threads' regions leave
 * their pools, or protect would keep waiting for them. */
static void atfork_child(void)
{
	arena_unlock();
	uintptr_t mine = (uintptr_t)&pool_tls;
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next) {
		for (struct pool_region *r = p->regions, *next; r; r = next) {
			next = r->next;
			if ((uintptr_t)r - mine >= sizeof(pool_tls) && !r->shared)
				region_unlink(p, r, true);
		}
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&registry_lock);
}

static void global_init_once(void)
{
	void *p;
	/* The pool structs' mapping comes with the arena's side tables. */
	if (os_init() < 0 || arena_init(POOL_MAX * sizeof(struct pmalloc_pool), &p) < 0)
		return;
	if (pthread_key_create(&exit_key, thread_exit) != 0)
		return;
	pool_ro.s.slab = p;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	global_ok = 1;
}

void pool_global_init(void)
{
	pthread_once(&global_once, global_init_once);
}

bool pool_valid(const struct pmalloc_pool *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)pool_ro.s.slab;
	if (p == &sealed_orphans)
		return true;
	return pool_ro.s.slab && off < POOL_MAX * sizeof(*p) && off % sizeof(*p) == 0 &&
	       p->magic == (POOL_MAGIC ^ (uintptr_t)p);
}

void pool_check(const struct pmalloc_pool *p, const char *api)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)pool_ro.s.slab;
	if (unlikely(!pool_ro.s.slab || off >= POOL_MAX * sizeof(*p) || off % sizeof(*p) != 0 ||
		     p->magic != (POOL_MAGIC ^ (uintptr_t)p)))
		fatal(api, "not a live pool (corrupt, or used after pmalloc_destroy_pool)");
}

struct pmalloc_pool *pool_create(const char *name, unsigned int flags, uint64_t max_bytes)
{
	pool_global_init();
	if (!global_ok) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	struct pmalloc_pool *p = slab_free;
	if (p)
		slab_free = p->reg_next;
	else if (slab_next < POOL_MAX)
		p = &pool_ro.s.slab[slab_next++];
	if (p && (set_flags(p, flags) < 0 || set_cap(p, max_bytes) < 0)) {
		p->reg_next = slab_free;          /* back where it came from */
		slab_free = p;
		p = NULL;
	}
	if (p && !pool_ro_locked) {
		/* Put off with arming's other freezes when arming holds them
		 * (ro.h): the filter's pages lie after the table, one mprotect
		 * for all.  A later change opens and closes it as ever. */
		if (ro_freeze_locked(&pool_ro, sizeof(pool_ro), registry_take, registry_give) < 0) {
			pool_ro.s.flags[(size_t)(p - pool_ro.s.slab)] = 0;
			p->reg_next = slab_free;
			slab_free = p;
			p = NULL;
		} else {
			pool_ro_locked = true;
		}
	}
	if (!p) {
		pthread_mutex_unlock(&registry_lock);
		errno = ENOMEM;
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	/* Adaptive: the critical sections are short, so a contending thread
	 * spins briefly instead of sleeping in the kernel. */
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&p->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	p->index = -1;
	if (name) {
		size_t n = strnlen(name, POOL_NAME - 1);
		memcpy(p->name, name, n);
	}
	atomic_store_explicit(&p->stamp, pool_new_stamp(), memory_order_relaxed);
	p->magic = POOL_MAGIC ^ (uintptr_t)p;
	DLIST_PUSH(registry, p, reg_prev, reg_next);
	pthread_mutex_unlock(&registry_lock);
	return p;
}

bool pool_closed(const struct pmalloc_pool *p)
{
	return flags_of(p) & POOL_CLOSED;
}

void pool_close(struct pmalloc_pool *p)
{
	/* The mark first (registry_lock, as every flag's change), then the
	 * stamp under the pool's lock: an allocation holding the lock in
	 * between sees the mark (lock order: registry, then the pool). */
	pthread_mutex_lock(&registry_lock);
	if (set_flags(p, flags_of(p) | POOL_CLOSED) < 0)
		fatal("pmalloc_protect_pool", "cannot mark a pool closed in the pools' read-only table");
	pthread_mutex_unlock(&registry_lock);
	pool_lock(p, "protect");
	/* Every fast path from here on fails its stamp compare and finds the
	 * pool closed under the lock. */
	atomic_store_explicit(&p->stamp, pool_new_stamp(), memory_order_relaxed);
	pthread_mutex_unlock(&p->lock);
}

/* A region's span and where its objects end (p's lock held), checked
 * before they are believed: the region's words are its thread's TLS,
 * writable by anyone who can write memory.  The span must be one of the
 * arena's, owned by p, and the cursor inside it; anything else is a
 * corrupt region, fatal (api's name): allocating on from it could hand out
 * memory that no protect covers.  NULL for a region without a span. */
struct span *pool_region_span(const struct pmalloc_pool *p, const struct pool_region *r, size_t *ret_end,
			      const char *api)
{
	struct span *s = r->span;
	if (!s)
		return NULL;
	if (!arena_span_valid(s) || atomic_load_explicit(&s->pool, memory_order_relaxed) != p)
		fatal(api, "a pool region's span is not its pool's (corrupt pool state)");
	uintptr_t cur = __atomic_load_n(&r->cur, __ATOMIC_RELAXED);
	if (cur < s->base || cur - s->base > s->bytes)
		fatal(api, "a pool region's cursor lies outside its span (corrupt pool state)");
	*ret_end = ALIGN_UP(cur - s->base, os_page_size);
	return s;
}

void pool_destroy(struct pmalloc_pool *p)
{
	pthread_mutex_lock(&registry_lock);
	DLIST_UNLINK(registry, p, reg_prev, reg_next);
	pthread_mutex_lock(&p->lock);
	p->magic = 0;
	atomic_store_explicit(&p->stamp, pool_new_stamp(), memory_order_relaxed);
	/* Regions of any thread: their slots are freed (registry_lock keeps
	 * their threads from rebinding them meanwhile). */
	for (struct pool_region *r = p->regions, *next; r; r = next) {
		next = r->next;
		r->pool = &pool_unbound;
		r->key = 0;
		r->stamp = 0;
		r->span = NULL;
		r->cur = r->end = r->mark = 0;
		r->rec = NULL;
		r->requested = r->used = 0;
		r->next = r->prev = NULL;
	}
	p->regions = NULL;
	bool sealed = pool_seals(p) && os_have_mseal;
	for (struct span *s = p->first, *next; s; s = next) {
		next = s->next;
		if (sealed && span_prot_hi(s) > 0)
			arena_span_set_owner(s, &sealed_orphans);   /* the kernel keeps it */
		else
			arena_span_release(s);
	}
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_destroy(&p->lock);
	p->reg_next = slab_free;
	slab_free = p;
	pthread_mutex_unlock(&registry_lock);
}
