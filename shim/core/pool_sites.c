/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool_sites.c - the objects of a pool and the sites that allocated them,
 * read from the records every span keeps (arena.h: one per object, in
 * address order, with its site id).  Learn mode's flush and the per-site
 * table pmallocd shows (rules_msg.c) read them here.
 *
 * Costs one pass over the records under the pool's lock: O(objects).
 * Never allocates, never changes the pool; never in a signal handler.
 */
#include "pool_sites.h"
#include "arena.h"
#include "site.h"

void pool_sites_walk(struct pmalloc_pool *p, bool protected_only, pool_site_fn fn, void *ctx)
{
	pthread_mutex_lock(&p->lock);
	for (struct span *s = p->first; s; s = s->next) {
		size_t limit = protected_only ? span_prot_hi(s) : SIZE_MAX;
		if (atomic_load_explicit(&s->single, memory_order_acquire)) {
			if (s->single_off < limit)
				fn(ctx, s->single_site, s->single_size);
			continue;
		}
		if (!s->recs)
			continue;
		uint32_t g0 = (uint32_t)(s->base >> ARENA_GRANULE_SHIFT);
		for (size_t k = 0; k < s->bytes >> ARENA_GRANULE_SHIFT; k++) {
			uint64_t r = __atomic_load_n(&s->recs[k], __ATOMIC_ACQUIRE);
			if (!r)
				break;           /* the zero-filled tail: no more objects */
			size_t off = (size_t)(uint32_t)((uint32_t)(r >> REC_START_SHIFT) - g0) << ARENA_GRANULE_SHIFT;
			if (off >= limit)
				break;           /* records are in address order */
			fn(ctx, (uint16_t)r, ((r >> REC_SIZE_SHIFT) & REC_MAX_GRANULES) << ARENA_GRANULE_SHIFT);
		}
	}
	pthread_mutex_unlock(&p->lock);
}

struct count_ctx {
	struct pool_site_count *acc;
	int pool;
	uint16_t *seen;
	size_t *n_seen;
};

static void count_object(void *arg, uint16_t id, size_t bytes)
{
	struct count_ctx *c = arg;
	if (id == SITE_NONE || id > SITE_SLOTS)
		return;
	if (c->seen && c->acc[id - 1].objects == 0)
		c->seen[(*c->n_seen)++] = id;
	c->acc[id - 1].objects++;
	c->acc[id - 1].bytes += bytes;
	c->acc[id - 1].pool = c->pool;
}

void pool_sites_count(struct pmalloc_pool *p, int pool_index, bool protected_only,
		      struct pool_site_count *acc, uint16_t *seen, size_t *n_seen)
{
	struct count_ctx c = { acc, pool_index, seen, n_seen };
	pool_sites_walk(p, protected_only, count_object, &c);
}
