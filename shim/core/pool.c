/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool.c - protectable pools: per-thread bump regions inside spans of the
 * arena, protection of what is new, and destruction.
 *
 * Costs: an allocation normally takes the inline fast path of pool.h (no
 * lock, no atomic instruction, one record and three counters written); this
 * file does the rest under the pool's lock: binding a thread's region, a
 * new span (one per 64 KiB .. 4 MiB of a thread's objects), past a
 * region's first MiB its memory made present 256 KiB ahead (one system
 * call, after the lock), catching up after a protect, caps, alignment,
 * large objects.  pool_protect() changes the pool's stamp, runs one
 * process-wide barrier (see pool.h for why), then reads every region's
 * cursor and makes one mprotect per contiguous range of new spans, none
 * when nothing is new.  Statistics are kept per region and summed when
 * read.
 *
 * Lock order (pool.h): registry_lock, a pool's lock, the arena's.  No lock
 * is held while calling anything outside the shim.  Never calls malloc.
 * Pool structs live in their own mapping, apart from the heap and from the
 * pages that get protected, and are validated on every API call.
 */
#define _GNU_SOURCE
#include "pool.h"
#include "stderr.h"
#include "pmalloc.h"
#include "dlist.h"
#include "fmt.h"
#include "os.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define POOL_MAGIC UINT64_C(0x706d616c6c6f6331)
#define POOL_MAX 65536u
#define POOL_CAPS_MAX 64u
#define SPAN_FIRST ((size_t)64 << 10)
#define SPAN_MAX ((size_t)4 << 20)
#define PARTIAL_MIN ((size_t)4 << 10)        /* a span left with less room is not reused */
#define POPULATE_AFTER ((size_t)1 << 20)     /* see region_ahead() */
#define POPULATE_AHEAD ((size_t)256 << 10)

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
static_assert(PMALLOC_POOL_SEAL <= 0xff && POOL_INTERPOSED <= 0xff && POOL_CLOSED <= 0xff, "flags fit a byte");
static bool pool_ro_locked;                 /* registry_lock */

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
static uint64_t cap_of(const struct pmalloc_pool *p)
{
	uint32_t slot = (uint32_t)(p - pool_ro.s.slab) + 1;
	for (size_t i = 0; i < POOL_CAPS_MAX && pool_ro.s.caps[i].slot; i++)
		if (pool_ro.s.caps[i].slot == slot)
			return pool_ro.s.caps[i].bytes;
	return 0;
}

/* What p's cap leaves, under p's lock: false when need bytes more would
 * pass it.  *ret_max is the cap (0: none), *ret_capped the bytes counted
 * so far: the smaller of the two counts, so a forged count never lets
 * more in (a pool of the API has no cap). */
static bool cap_room(const struct pmalloc_pool *p, size_t need, uint64_t *ret_max, size_t *ret_capped)
{
	uint64_t max_bytes = pool_interposed(p) ? cap_of(p) : 0;
	size_t capped = atomic_load_explicit(&p->capped_used, memory_order_relaxed);
	size_t mirror = atomic_load_explicit(&p->capped_mirror, memory_order_relaxed);
	capped = mirror < capped ? mirror : capped;
	*ret_max = max_bytes;
	*ret_capped = capped;
	return !max_bytes || capped + need <= max_bytes;
}

/* Count need more bytes against p's cap (cap_room() said there was room). */
static void cap_count(struct pmalloc_pool *p, uint64_t max_bytes, size_t capped, size_t need)
{
	if (!max_bytes)
		return;
	atomic_store_explicit(&p->capped_used, capped + need, memory_order_relaxed);
	atomic_store_explicit(&p->capped_mirror, capped + need, memory_order_relaxed);
}

static struct span *region_span(const struct pmalloc_pool *p, const struct pool_region *r, size_t *ret_end,
				const char *api);

/* A pool's lock: its words are the pool struct's, writable.  One forged
 * to "held" must not hang the program (nor a trigger) for good: after
 * POOL_LOCK_WAIT_S, far longer than any holder keeps it, the state is
 * taken as corrupt (fatal, with api's name). */
#define POOL_LOCK_WAIT_S 5
static void pool_lock(struct pmalloc_pool *p, const char *api)
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

static uint64_t new_stamp(void)
{
	return atomic_fetch_add_explicit(&stamp_seq, 1, memory_order_relaxed);
}

/* Move r's cursor other than by an allocation (p's lock held, or r's
 * thread with r not yet in a list): what it handed out is counted first. */
static void region_set_cur(struct pool_region *r, uintptr_t cur)
{
	r->used = region_used(r);
	r->cur = r->mark = cur;
}

/* This thread's slot for p: the one bound to it, else the one its address
 * picks (whose pool, if any, is unbound by region_bind). */
static struct pool_region *slot_of(const struct pmalloc_pool *p)
{
	for (int i = 0; i < POOL_SLOTS; i++)
		if (pool_tls.slot[i].pool == p)
			return &pool_tls.slot[i];
	return &pool_tls.slot[((uintptr_t)p >> POOL_SHIFT) % POOL_SLOTS];
}

/* The region stops allocating in its span (pool's lock held): what it
 * handed out is recorded in the span, which is offered to the next region
 * that needs one when keep and it has room left. */
static void region_leave_span(struct pmalloc_pool *p, struct pool_region *r, bool keep)
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
	region_set_cur(r, 0);
	r->end = 0;
	r->rec = NULL;
}

/* Unlink r from p (p's lock held), its counts folded into the pool's. */
static void region_unlink(struct pmalloc_pool *p, struct pool_region *r, bool keep)
{
	region_leave_span(p, r, keep);
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
static bool region_bind(struct pmalloc_pool *p, struct pool_region *r)
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
	if (os_init() < 0 || arena_init() < 0)
		return;
	size_t len = ALIGN_UP(POOL_MAX * sizeof(struct pmalloc_pool), os_page_size);
	if (os_map_lazy(len, &p) < 0)
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
		if (os_protect_ro(&pool_ro, sizeof(pool_ro)) < 0) {
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
	atomic_store_explicit(&p->stamp, new_stamp(), memory_order_relaxed);
	p->magic = POOL_MAGIC ^ (uintptr_t)p;
	DLIST_PUSH(registry, p, reg_prev, reg_next);
	pthread_mutex_unlock(&registry_lock);
	return p;
}

/* Append span s to p's list (the pool's lock held). */
static void list_add(struct pmalloc_pool *p, struct span *s)
{
	DLIST_PUSH_BACK(p->first, p->last, s, prev, next);
	p->mapped += s->bytes;
}

/* A span of its own for one large object (the pool's lock held). */
static void *alloc_single(struct pmalloc_pool *p, size_t need, size_t align, uint16_t site)
{
	struct span *s;
	if (arena_span_alloc(need + align, true, pool_interposed(p), p, &s) < 0)
		return NULL;
	size_t off = ALIGN_UP(s->base, align) - s->base;
	s->cursor = off + need;
	s->single_off = off;
	s->single_size = need;
	s->single_site = site;
	atomic_store_explicit(&s->single, true, memory_order_release);
	list_add(p, s);
	return (void *)(s->base + off);
}

/* alloc_single() with the pool's counts of a served object.  Lock held. */
static void *alloc_single_counted(struct pmalloc_pool *p, size_t size, size_t need, size_t align, uint16_t site)
{
	void *ret = alloc_single(p, need, align, site);
	if (ret) {
		p->objects++;
		p->requested += size;
		p->used += need;
	}
	return ret;
}

/* Give region r a span with room for need bytes at align (p's lock held):
 * a partial one if the first on the list has the room, else a new one. */
static bool region_new_span(struct pmalloc_pool *p, struct pool_region *r, size_t need, size_t align)
{
	struct span *s = p->partial;
	if (s) {
		size_t prot = span_prot_hi(s);
		if (s->cursor < prot)
			s->cursor = prot;
		size_t at = ALIGN_UP(s->base + s->cursor, align);
		if (at + need <= s->base + s->bytes) {
			p->partial = s->partial_next;
			s->partial_next = NULL;
		} else {
			s = NULL;
		}
	}
	if (!s) {
		while (r->next_span_bytes < need + align)
			r->next_span_bytes *= 2;
		if (arena_span_alloc(r->next_span_bytes, false, pool_interposed(p), p, &s) < 0)
			return false;
		/* 64 KiB twice, then doubling: the spans before the first
		 * huge-page one add up to 2 MiB, so it can follow without a gap. */
		if (r->next_span_bytes < SPAN_MAX && !r->first_span_done)
			r->first_span_done = true;
		else if (r->next_span_bytes < SPAN_MAX)
			r->next_span_bytes *= 2;
		list_add(p, s);
	}
	region_leave_span(p, r, false);
	s->is_cur = true;
	r->span = s;
	region_set_cur(r, s->base + s->cursor);
	r->touched = 0;
	r->rec = s->rec_next;
	return true;
}

/* Huge pages were found mapped ahead of a region's cursor: spans advised
 * for them are not populated ahead any more (the kernel's first touch of
 * each 2 MiB maps it all already). */
static _Atomic bool huge_mapped;

/* Where the fast path of region r stops (p's lock held): the end of its
 * span, or, once the region has handed out POPULATE_AFTER, the end of the
 * memory made present ahead of its cursor, POPULATE_AHEAD at a time in one
 * system call instead of a page fault per 4 KiB (~2 us each on a VM; the
 * alloc+write bench without huge pages: 75..99 ns per object instead of
 * 101..121, medians of six runs).  So the memory present but not yet
 * handed out is, per thread and pool, at most 256 KiB and at most a
 * quarter of what it already uses: none in a small pool.  Only when the
 * object that reached the end is at most a page: one larger may be written
 * sparsely, its pages only where it is.  Where the memory ahead is present
 * already, a huge page mapped it: the span is left to the kernel's first
 * touches.  [*lo, *hi): what to populate once the lock is released;
 * empty: nothing. */
static uintptr_t region_ahead(struct pool_region *r, size_t need, uintptr_t *lo, uintptr_t *hi)
{
	struct span *s = r->span;
	uintptr_t span_end = s->base + s->bytes, from = ALIGN_UP(r->cur, os_page_size);
	bool huge = s->bytes >= ARENA_HUGE, present;
	*lo = *hi = 0;
	if (region_used(r) < POPULATE_AFTER || (huge && atomic_load_explicit(&huge_mapped, memory_order_relaxed)))
		return span_end;
	uintptr_t end = span_end - from > POPULATE_AHEAD ? from + POPULATE_AHEAD : span_end;
	if (end <= r->touched)
		return r->touched;
	uintptr_t start = r->touched > from ? r->touched : from;
	if (start < end && os_present((void *)start, &present) == 0 && present) {
		if (huge)
			atomic_store_explicit(&huge_mapped, true, memory_order_relaxed);
		r->touched = span_end;
		return span_end;
	}
	r->touched = end;
	if (need <= os_page_size) {
		*lo = start;
		*hi = end;
	}
	return end;
}

static cold void *cap_reached(struct pmalloc_pool *p)
{
	if (!atomic_exchange(&p->capped_said, 1))
		debug_printf("pool \"%s\" reached max_bytes: further allocations go to the heap", p->name);
	errno = ENOMEM;
	return NULL;
}

void *pool_alloc_slow(struct pmalloc_pool *p, size_t size, size_t align, uint16_t site, const char *api)
{
	if (unlikely(!p)) {
		errno = EINVAL;
		return NULL;
	}
	pool_check(p, api);
	size_t need = ALIGN_UP(size ? size : 1, PM_ALIGN);
	if (unlikely(need < size || need > ((size_t)1 << 46))) {
		errno = ENOMEM;
		return NULL;
	}
	bool single = need + align - PM_ALIGN > POOL_SMALL_MAX;
	struct pool_region *r = slot_of(p);
	if (!single && r->pool == p && r != pool_active()) {
		/* Another pool was used last: switch, no lock, and try again. */
		pool_set_active(r);
		return pool_alloc_api(p, size, align, site, api);
	}
	if (!single && r->pool != p && !region_bind(p, r)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!single)
		pool_set_active(r);
	void *ret = NULL;
	uintptr_t pop_lo = 0, pop_hi = 0;
	pool_lock(p, api);
	if (unlikely(pool_closed(p))) {
		pthread_mutex_unlock(&p->lock);
		errno = ENOMEM;
		return NULL;
	}
	/* The cap is counted under the lock: never passed, not even by racing
	 * threads. */
	uint64_t max_bytes;
	size_t capped;
	if (!cap_room(p, need, &max_bytes, &capped)) {
		pthread_mutex_unlock(&p->lock);
		return cap_reached(p);
	}
	if (single) {
		ret = alloc_single_counted(p, size, need, align, site);
	} else {
		/* Catch up with a protect: the page it gave up is not ours.  The
		 * region (its thread's TLS, writable) is checked first. */
		size_t checked_end;
		struct span *s = region_span(p, r, &checked_end, api);
		if (s && r->cur < s->base + span_prot_hi(s))
			region_set_cur(r, s->base + span_prot_hi(s));
		r->stamp = atomic_load_explicit(&p->stamp, memory_order_relaxed);
		uintptr_t at = ALIGN_UP(r->cur, align);
		if (!s || at + need > s->base + s->bytes) {
			if (region_new_span(p, r, need, align))
				at = ALIGN_UP(r->cur, align);
			else
				r = NULL;
		}
		if (r) {
			region_set_cur(r, at);
			r->cur = at + need;
			*r->rec++ = span_record(at, need, site);
			r->requested += size;
			/* A capped pool counts every byte here, so its fast path never has room. */
			uintptr_t end = region_ahead(r, need, &pop_lo, &pop_hi);
			r->end = max_bytes ? r->cur : end;
			ret = (void *)at;
		}
	}
	if (ret)
		cap_count(p, max_bytes, capped, need);
	pthread_mutex_unlock(&p->lock);
	/* The region's own memory, which no other thread bumps in: no lock. */
	if (pop_hi > pop_lo)
		os_populate((void *)pop_lo, pop_hi - pop_lo);
	if (!ret)
		errno = ENOMEM;
	return ret;
}

static void *alloc_in(struct pmalloc_pool *p, struct pool_region *r, size_t size, size_t align, uint16_t site,
		      bool fresh_page, bool reopened)
{
	size_t need = ALIGN_UP(size ? size : 1, PM_ALIGN);
	if (unlikely(need < size || need > ((size_t)1 << 46))) {
		errno = ENOMEM;
		return NULL;
	}
	bool single = need + align - PM_ALIGN > POOL_SMALL_MAX;
	void *ret = NULL;
	pool_lock(p, "malloc");
	uint64_t max_bytes;
	size_t capped;
	if ((pool_closed(p) && !reopened) || !cap_room(p, need, &max_bytes, &capped)) {
		pthread_mutex_unlock(&p->lock);
		errno = ENOMEM;
		return NULL;
	}
	if (single) {
		ret = alloc_single_counted(p, size, need, align, site);
	} else {
		if (r->pool != p) {
			r->pool = p;
			r->shared = true;
			r->next_span_bytes = SPAN_FIRST;
			r->first_span_done = false;
			DLIST_PUSH(p->regions, r, prev, next);
		}
		struct span *s = r->span;
		if (s && r->cur < s->base + span_prot_hi(s))
			region_set_cur(r, s->base + span_prot_hi(s));
		if (s && fresh_page)
			region_set_cur(r, ALIGN_UP(r->cur, os_page_size));
		uintptr_t at = ALIGN_UP(r->cur, align);
		if (!s || at + need > s->base + s->bytes) {
			/* A new span starts on a page of its own whatever fresh_page
			 * says: a partial one may start mid-page, on a page whose
			 * objects are another owner's (learn.c: one context a page).
			 * Room for the page skipped too. */
			if (!region_new_span(p, r, need + os_page_size, align)) {
				pthread_mutex_unlock(&p->lock);
				errno = ENOMEM;
				return NULL;
			}
			region_set_cur(r, ALIGN_UP(r->cur, os_page_size));
			at = ALIGN_UP(r->cur, align);
		}
		region_set_cur(r, at);
		r->cur = r->end = at + need;     /* end == cur: no fast path ever uses r */
		*r->rec++ = span_record(at, need, site);
		r->requested += size;
		ret = (void *)at;
	}
	if (ret)
		cap_count(p, max_bytes, capped, need);
	pthread_mutex_unlock(&p->lock);
	return ret;
}

void *pool_alloc_in(struct pmalloc_pool *p, struct pool_region *r, size_t size, size_t align, uint16_t site,
		    bool fresh_page)
{
	return alloc_in(p, r, size, align, site, fresh_page, false);
}

void *pool_alloc_reopened(struct pmalloc_pool *p, struct pool_region *r, size_t size, size_t align,
			  uint16_t site, bool fresh_page)
{
	return alloc_in(p, r, size, align, site, fresh_page, true);
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
	atomic_store_explicit(&p->stamp, new_stamp(), memory_order_relaxed);
	pthread_mutex_unlock(&p->lock);
}

/* mprotect (and mseal) one contiguous range: 0, or -ENOMEM when the
 * process is out of memory mappings (vm.max_map_count). */
static int protect_range(struct pmalloc_pool *p, uintptr_t a, uintptr_t b, const char *api)
{
	if (a == b)
		return 0;
	int r = os_protect_ro((void *)a, b - a);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		fatal(api, "mprotect of pool memory failed");
	if (pool_seals(p) && os_have_mseal && os_seal((void *)a, b - a) < 0)
		fatal(api, "mseal of pool memory failed");
	return 0;
}

/* The spans [first, last] of a range that could not be protected: their
 * marks go back, so the next protect tries them again and nothing claims
 * to be read-only that is not. */
static size_t protect_undo(struct span *first, struct span *last)
{
	size_t undone = 0;
	for (struct span *s = first; s; s = s->next) {
		undone += span_prot_lo(s) - s->prot_before;
		span_set_prot(s, s->prot_before);
		if (s == last)
			break;
	}
	return undone;
}

/* A region's span and where its objects end (p's lock held), checked
 * before they are believed: the region's words are its thread's TLS,
 * writable by anyone who can write memory.  The span must be one of the
 * arena's, owned by p, and the cursor inside it; anything else is a
 * corrupt region, fatal (api's name): allocating on from it could hand out
 * memory that no protect covers.  NULL for a region without a span. */
static struct span *region_span(const struct pmalloc_pool *p, const struct pool_region *r, size_t *ret_end,
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

/* Every region of p a protect reads (p's lock held): those linked into the
 * pool, then this thread's own slots bound to it, so that a list head
 * overwritten cannot hide the region of the thread that protects (a
 * trigger runs on the thread that allocated, most often).  fn(s, end). */
#define REGIONS_MAX (1u << 20)   /* a longer list is a corrupt one (a cycle) */
static bool for_each_region(struct pmalloc_pool *p, const char *api, bool (*fn)(struct span *, size_t, void *),
			    void *ctx)
{
	size_t end, n = 0;
	for (struct pool_region *r = p->regions; r; r = r->next) {
		struct span *s = region_span(p, r, &end, api);
		if (s && !fn(s, end, ctx))
			return false;
		if (++n > REGIONS_MAX)
			fatal(api, "a pool's region list does not end (corrupt pool state)");
	}
	for (int i = 0; i < POOL_SLOTS; i++) {
		struct span *s = pool_tls.slot[i].pool == p ? region_span(p, &pool_tls.slot[i], &end, api) : NULL;
		if (s && !fn(s, end, ctx))
			return false;
	}
	return true;
}

/* The spans of p, by age, each checked like a region's (fn false stops). */
static void for_each_span(struct pmalloc_pool *p, const char *api, bool (*fn)(struct span *, void *), void *ctx)
{
	size_t n = 0;
	for (struct span *s = p->first; s; s = s->next) {
		if (!arena_span_valid(s) || atomic_load_explicit(&s->pool, memory_order_relaxed) != p ||
		    ++n > ARENA_UNITS_MAX)
			fatal(api, "a pool's span list is corrupt");
		if (!fn(s, ctx))
			return;
	}
}

/* Where the protect of s stops: its objects' end (a region's span, or one
 * on the partial list), else all of it. */
static size_t span_protect_end(const struct span *s)
{
	/* A cursor past the span is corrupt (and would wrap when rounded up):
	 * all of it then, the safe side. */
	if (!s->is_cur || s->cursor >= s->bytes)
		return s->bytes;
	size_t end = ALIGN_UP(s->cursor, os_page_size);
	return end < s->bytes ? end : s->bytes;
}

static bool region_new(struct span *s, size_t end, void *ctx)
{
	(void)ctx;
	return end <= span_prot_lo(s);
}

static bool span_new(struct span *s, void *ctx)
{
	bool *any = ctx;
	*any = span_protect_end(s) > span_prot_lo(s);
	return !*any;
}

/* Nothing to protect (p's lock held), judged without the barrier: a cursor
 * this misses belongs to an allocation that did not happen before this
 * protect, so it may as well come after it.  Keeps a protect with nothing
 * new free of system calls (a walk over the pool's spans and regions). */
static bool nothing_new(struct pmalloc_pool *p, const char *api)
{
	bool any = false;
	for_each_span(p, api, span_new, &any);
	return !any && for_each_region(p, api, region_new, NULL);
}

static bool region_cursor(struct span *s, size_t end, void *ctx)
{
	(void)ctx;
	if (end > s->cursor)
		s->cursor = end;
	return true;
}

struct protect_run {
	struct pmalloc_pool *p;
	const char *api;
	size_t fresh;
	uintptr_t a, b;                  /* the contiguous range being gathered */
	struct span *range_first, *range_last, *failed;
};

static void run_flush(struct protect_run *pr)
{
	if (protect_range(pr->p, pr->a, pr->b, pr->api) < 0) {
		pr->fresh -= protect_undo(pr->range_first, pr->range_last);
		pr->failed = pr->failed ? pr->failed : pr->range_first;
	} else if (pr->a < pr->b) {
		/* Read-only now: the public query may say so. */
		for (struct span *s = pr->range_first; s; s = s->next) {
			atomic_store_explicit(&s->prot_done, span_prot_lo(s), memory_order_release);
			if (s == pr->range_last)
				break;
		}
	}
	pr->a = pr->b = 0;
}

static bool span_protect(struct span *s, void *ctx)
{
	struct protect_run *pr = ctx;
	size_t start = span_prot_lo(s);
	size_t end = span_protect_end(s);
	s->prot_before = start;       /* what protect_undo() restores */
	if (end <= start)
		return true;
	if (s->is_cur)
		s->cursor = end;          /* the page's tail is given up */
	if (s->base + start != pr->b) {
		run_flush(pr);
		pr->a = s->base + start;
		pr->range_first = s;
	}
	/* Published before the mprotect, so a fault can never find memory
	 * read-only yet not known to be protected. */
	span_set_prot(s, end);
	pr->fresh += end - start;
	pr->b = s->base + end;
	pr->range_last = s;
	return true;
}

/* A region's span the list walk did not reach (the pool's span list
 * overwritten): protected alone. */
static bool region_protect(struct span *s, size_t end, void *ctx)
{
	struct protect_run *pr = ctx;
	(void)end;
	if (span_protect_end(s) > span_prot_lo(s)) {
		span_protect(s, pr);
		run_flush(pr);
	}
	return true;
}

size_t pool_protect(struct pmalloc_pool *p, const char *api)
{
	struct protect_run pr = { .p = p, .api = api };
	pool_lock(p, api);
	if (nothing_new(p, api)) {
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	/* Every fast path from here on fails its stamp compare; after the
	 * barrier every cursor a fast path stored before that is visible. */
	atomic_store_explicit(&p->stamp, new_stamp(), memory_order_relaxed);
	if (p->regions && os_process_barrier() < 0)
		fatal(api, "no memory barrier across threads (out of memory)");
	for_each_region(p, api, region_cursor, NULL);
	for_each_span(p, api, span_protect, &pr);
	run_flush(&pr);
	for_each_region(p, api, region_protect, &pr);
	if (pr.fresh) {
		p->protected_bytes += pr.fresh;
		p->protect_calls++;
	}
	if (pr.failed)
		p->protect_failures++;
	pthread_mutex_unlock(&p->lock);
	if (pr.failed)
		debug_printf("cannot protect all of pool \"%s\": out of memory mappings (vm.max_map_count); "
			     "will retry at the next protect", p->name);
	return pr.fresh;
}

struct reprotect_run {
	struct pmalloc_pool *p;
	const char *api;
	uintptr_t a, b;
};

static void reprotect_flush(struct reprotect_run *rr)
{
	if (rr->a < rr->b && os_protect_ro((void *)rr->a, rr->b - rr->a) < 0)
		fatal(rr->api, "cannot make pool memory read-only again");
	rr->a = rr->b = 0;
}

static bool span_reprotect(struct span *s, void *ctx)
{
	struct reprotect_run *rr = ctx;
	size_t done = atomic_load_explicit(&s->prot_done, memory_order_acquire);
	if (!done)
		return true;
	if (s->base != rr->b) {
		reprotect_flush(rr);
		rr->a = s->base;
	}
	rr->b = s->base + done;
	if (done < s->bytes)
		reprotect_flush(rr);
	return true;
}

void pool_reprotect(struct pmalloc_pool *p, const char *api)
{
	struct reprotect_run rr = { .p = p, .api = api };
	pool_lock(p, api);
	for_each_span(p, api, span_reprotect, &rr);
	reprotect_flush(&rr);
	pthread_mutex_unlock(&p->lock);
}

static bool span_reopen(struct span *s, void *ctx)
{
	size_t *reopened = ctx;
	size_t hi = span_prot_hi(s);
	if (!hi)
		return true;
	/* Out of memory mappings: this span and those after it stay
	 * read-only, as the parent made them (the marks still say so). */
	if (os_protect_rw((void *)s->base, hi) < 0)
		return false;
	/* Not protected now: the marks say so, for the fault handler, for
	 * pmalloc_is_protected() and for the next protect, which takes it
	 * all again. */
	atomic_store_explicit(&s->prot_done, 0, memory_order_release);
	span_set_prot(s, 0);
	s->prot_before = 0;
	*reopened += hi;
	return true;
}

size_t pool_reopen(struct pmalloc_pool *p)
{
	if (pool_seals(p) && os_have_mseal)
		return 0;                 /* the kernel keeps sealed memory read-only */
	size_t reopened = 0;
	pool_lock(p, "fork");
	atomic_store_explicit(&p->stamp, new_stamp(), memory_order_relaxed);
	for_each_span(p, "fork", span_reopen, &reopened);
	p->protected_bytes = 0;
	pthread_mutex_unlock(&p->lock);
	return reopened;
}

void pool_totals(struct pmalloc_pool *p, struct pool_totals *ret)
{
	struct pool_totals t = { 0 };
	pool_lock(p, "pmalloc_pool_stats");
	t.objects = p->objects;
	t.requested = p->requested;
	t.used = p->used;
	/* The regions' counters are their threads' to write, without a lock:
	 * each word is read whole, the sum is as of some moment per region.
	 * Objects are counted by their records. */
	for (struct pool_region *r = p->regions; r; r = r->next) {
		t.requested += __atomic_load_n(&r->requested, __ATOMIC_RELAXED);
		t.used += region_used(r);
		if (r->span)
			r->span->rec_next = __atomic_load_n(&r->rec, __ATOMIC_RELAXED);
	}
	for (struct span *s = p->first; s; s = s->next)
		if (s->recs)
			t.objects += (size_t)(s->rec_next - s->recs);
	t.protected_bytes = p->protected_bytes;
	t.mapped = p->mapped;
	t.protect_calls = p->protect_calls;
	t.protect_failures = p->protect_failures;
	t.freed_protected = atomic_load_explicit(&p->freed_protected, memory_order_relaxed);
	pthread_mutex_unlock(&p->lock);
	*ret = t;
}

void pool_destroy(struct pmalloc_pool *p)
{
	pthread_mutex_lock(&registry_lock);
	DLIST_UNLINK(registry, p, reg_prev, reg_next);
	pthread_mutex_lock(&p->lock);
	p->magic = 0;
	atomic_store_explicit(&p->stamp, new_stamp(), memory_order_relaxed);
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

bool pool_lookup(const void *addr, struct pool_hit *ret)
{
	struct span *s = arena_span_of(addr);
	if (!s)
		return false;
	size_t off = (uintptr_t)addr - s->base;
	struct span_object o;
	memset(ret, 0, sizeof(*ret));
	ret->pool = atomic_load_explicit(&s->pool, memory_order_acquire);
	ret->span = s;
	ret->addr = (uintptr_t)addr;
	ret->is_protected = off < span_prot_hi(s);
	if (span_object_at(s, off, &o)) {
		ret->in_object = true;
		ret->object = s->base + o.start;
		ret->object_size = o.size;
		ret->site = o.site;
	}
	return ret->pool != NULL;
}

static struct pool_hit object_of(const void *p, const char *api)
{
	struct pool_hit hit;
	if (!pool_lookup(p, &hit) || !hit.in_object || hit.object != (uintptr_t)p)
		fatal(api, "invalid pointer into pool memory");
	return hit;
}

void pool_note_free(void *p, const char *api)
{
	struct pool_hit hit = object_of(p, api);
	atomic_fetch_add_explicit(&hit.pool->frees, 1, memory_order_relaxed);
	if (hit.is_protected)
		atomic_fetch_add_explicit(&hit.pool->freed_protected, hit.object_size, memory_order_relaxed);
}

size_t pool_usable_size(const void *p, const char *api)
{
	return object_of(p, api).object_size;
}

bool pool_is_protected(const void *p)
{
	/* O(1): the span and its mark, not the object. */
	struct span *s = arena_span_of(p);
	return s && (uintptr_t)p - s->base < span_prot_hi(s);
}

bool pool_is_read_only(const void *p)
{
	struct span *s = arena_span_of(p);
	return s && (uintptr_t)p - s->base < atomic_load_explicit(&s->prot_done, memory_order_acquire);
}
