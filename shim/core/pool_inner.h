/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool_inner.h - what pool.c lends the other rooms of a pool (pool_alloc.c,
 * pool_protect.c, pool_query.c): the pool's lock, a new stamp, its cap and
 * a thread's region bound, left and checked.  Included by those files
 * only; nothing outside shim/core/pool*.c may take a pool's lock or touch
 * a region through it.
 */
#ifndef PMALLOC_POOL_INNER_H
#define PMALLOC_POOL_INNER_H

#include "pool.h"

/* A region's first span (then 64 KiB again, then doubling). */
#define SPAN_FIRST ((size_t)64 << 10)

/* Take p's lock; fatal (api's name) when it cannot be had in seconds (a
 * forged "held"). */
void pool_lock(struct pmalloc_pool *p, const char *api);
/* A stamp no pool had: the fast paths that saw the old one go slow. */
uint64_t pool_new_stamp(void);
/* p's cap from pool.c's read-only table, 0 for none. */
uint64_t pool_cap(const struct pmalloc_pool *p);
/* Bind this thread's slot r to p (false: ENOMEM, no thread-exit destructor). */
bool pool_region_bind(struct pmalloc_pool *p, struct pool_region *r);
/* Region r stops allocating in its span (p's lock held); keep: offer the
 * span's room to the next region. */
void pool_region_leave_span(struct pmalloc_pool *p, struct pool_region *r, bool keep);
/* Move r's cursor other than by an allocation (p's lock held, or r's
 * thread with r in no list yet): what it handed out is counted first
 * (region_used(), pool.h). */
static inline void pool_region_set_cur(struct pool_region *r, uintptr_t cur)
{
	r->used = region_used(r);
	r->cur = r->mark = cur;
}
/* r's span, checked, and where its objects end (p's lock held); fatal on a
 * corrupt region, NULL for none. */
struct span *pool_region_span(const struct pmalloc_pool *p, const struct pool_region *r, size_t *ret_end,
			      const char *api);

#endif
