/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool_query.c - what pool memory an address is (pool_lookup, for the
 * fault handler, free() and realloc()), whether it is protected, and a
 * pool's totals.
 *
 * The address queries are lock-free and async-signal-safe: the arena's
 * span of the address and its marks, never the pool's lock.  The totals
 * take the pool's lock.  Never changes what a pool holds, never allocates.
 */
#define _GNU_SOURCE
#include "pool.h"
#include "pool_inner.h"
#include "stderr.h"

#include <string.h>

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

bool pool_range_protected(const void *p, size_t len)
{
	/* A span's protected part is its start, [base, base+prot): past it,
	 * nothing more of that span is; one look a span, not a page. */
	for (uintptr_t a = (uintptr_t)p, end = a + len; a < end;) {
		struct span *s = arena_span_of((const void *)a);
		if (!s) {
			a = (a | (ARENA_UNIT - 1)) + 1;
			continue;
		}
		if (a - s->base < span_prot_hi(s))
			return true;
		/* Forward only: a forged base or size (its words are
		 * writable) must not walk the loop back (a base of 1 made it
		 * step through the address space, tamper.sh). */
		uintptr_t next = s->base + s->bytes, unit_end = (a | (ARENA_UNIT - 1)) + 1;
		a = next > a ? next : unit_end;
	}
	return false;
}

bool pool_is_read_only(const void *p)
{
	struct span *s = arena_span_of(p);
	return s && (uintptr_t)p - s->base < atomic_load_explicit(&s->prot_done, memory_order_acquire);
}
