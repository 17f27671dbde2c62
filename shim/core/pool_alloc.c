/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool_alloc.c - a pool's allocation slow path: everything the inline fast
 * path of pool.h leaves, and the regions no thread's slot holds
 * (pool_alloc_in).
 *
 * Costs: an allocation normally takes the inline fast path of pool.h (no
 * lock, no atomic instruction, one record and the requested bytes written); this
 * file does the rest under the pool's lock: binding a thread's region, a
 * new span (one per 64 KiB .. 4 MiB of a thread's objects), past a
 * region's first MiB its memory made present 256 KiB ahead (one system
 * call, after the lock), catching up after a protect, caps, alignment,
 * large objects.  Statistics are kept per region and summed when read
 * (pool_query.c).
 *
 * Lock order (pool.h).  No lock is held while calling anything outside
 * the shim.  Never calls malloc; never hands out a page a protect has
 * taken.
 */
#define _GNU_SOURCE
#include "pool.h"
#include "pool_inner.h"
#include "stderr.h"
#include "dlist.h"
#include "os.h"

#include <errno.h>

#define SPAN_MAX ((size_t)4 << 20)
#define POPULATE_AFTER ((size_t)1 << 20)     /* see region_ahead() */
#define POPULATE_AHEAD ((size_t)256 << 10)

/* What p's cap leaves, under p's lock: false when need bytes more would
 * pass it.  *ret_max is the cap (0: none), *ret_capped the bytes counted
 * so far: the smaller of the two counts, so a forged count never lets
 * more in (a pool of the API has no cap). */
static bool cap_room(const struct pmalloc_pool *p, size_t need, uint64_t *ret_max, size_t *ret_capped)
{
	uint64_t max_bytes = pool_interposed(p) ? pool_cap(p) : 0;
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

/* This thread's slot for p: the one bound to it, else the one its address
 * picks (whose pool, if any, is unbound by pool_region_bind). */
static struct pool_region *slot_of(const struct pmalloc_pool *p)
{
	for (int i = 0; i < POOL_SLOTS; i++)
		if (pool_tls.slot[i].pool == p)
			return &pool_tls.slot[i];
	return &pool_tls.slot[((uintptr_t)p >> POOL_SHIFT) % POOL_SLOTS];
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
	pool_region_leave_span(p, r, false);
	s->is_cur = true;
	r->span = s;
	pool_region_set_cur(r, s->base + s->cursor);
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
	if (!single && r->pool != p && !pool_region_bind(p, r)) {
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
		struct span *s = pool_region_span(p, r, &checked_end, api);
		if (s && r->cur < s->base + span_prot_hi(s))
			pool_region_set_cur(r, s->base + span_prot_hi(s));
		r->stamp = atomic_load_explicit(&p->stamp, memory_order_relaxed);
		uintptr_t at = ALIGN_UP(r->cur, align);
		if (!s || at + need > s->base + s->bytes) {
			if (region_new_span(p, r, need, align))
				at = ALIGN_UP(r->cur, align);
			else
				r = NULL;
		}
		if (r) {
			pool_region_set_cur(r, at);
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
			pool_region_set_cur(r, s->base + span_prot_hi(s));
		if (s && fresh_page)
			pool_region_set_cur(r, ALIGN_UP(r->cur, os_page_size));
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
			pool_region_set_cur(r, ALIGN_UP(r->cur, os_page_size));
			at = ALIGN_UP(r->cur, align);
		}
		pool_region_set_cur(r, at);
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
