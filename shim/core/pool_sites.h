/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool_sites.h - the objects a pool holds, by call site (pool_sites.c).
 */
#ifndef PMALLOC_POOL_SITES_H
#define PMALLOC_POOL_SITES_H

#include "common.h"
#include "pool.h"

/* fn(ctx, site, bytes) for each object of p, under p's lock (fn must not
 * take it, nor call into the program); with protected_only, only the
 * objects a protect has made read-only.  bytes: its size rounded up to
 * the pool's granule.  Normal context only. */
typedef void (*pool_site_fn)(void *ctx, uint16_t site, size_t bytes);
void pool_sites_walk(struct pmalloc_pool *p, bool protected_only, pool_site_fn fn, void *ctx);

/* Per site id (acc[id - 1], SITE_SLOTS of them): objects and bytes of p
 * (pool_index) added, as pool_sites_walk() sees them.  With seen (room
 * for SITE_SLOTS ids), each id counted for the first time is appended
 * there (*n_seen), so the caller need not look through every slot. */
struct pool_site_count {
	uint64_t objects, bytes;
	int pool;
};
void pool_sites_count(struct pmalloc_pool *p, int pool_index, bool protected_only,
		      struct pool_site_count *acc, uint16_t *seen, size_t *n_seen);

#endif
