/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * route.c - the routing decision, its cold part: where an allocation goes
 * when malloc's inline test (wrap/interpose.c) cannot tell from the site
 * table alone.  Reads the site cache (core/site), checks it against the
 * truth (armed/resolve), lets take and learn (modes) have their say, and
 * allocates from the pool.  Never on the fast path (a site seen before
 * that goes to the heap never gets here), never takes a lock of its own,
 * never leaves errno changed by a successful allocation.
 */
#define _GNU_SOURCE
#include "route.h"
#include "resolve.h"
#include "armed.h"
#include "learn.h"
#include "reload.h"
#include "site.h"
#include "rules_msg.h"
#include "take.h"

#include <errno.h>

/* The rare part of routing: a site seen for the first time, an allocation
 * wrapper (whose caller decides), a site that goes to a pool, or the shim
 * allocating for itself.  NULL means "the heap". */
cold void *route_slow(size_t size, size_t align, uintptr_t ra, uintptr_t slot, struct site_hit h, bool move)
{
	const struct shim_state *st = shim;
	if (shim_is_busy())
		return NULL;
	/* Every pool closed (take = "until-trigger", each one's trigger
	 * fired; enforce or audit) and no reload window open (which takes
	 * the main thread's allocations into a new generation, reload.c):
	 * every allocation goes to the heap, so a
	 * heap route is the truth whatever its word says, and an allocation
	 * through a wrapper is resolved to its caller (a few loads from the
	 * stack, or an unwind of some 11,000 instructions where the wrapper's
	 * frame rule cannot be read: resolve.c) only for the first few
	 * through each wrapper call, to count and say their sites (take.c).  The read-only closed byte
	 * (site.h), set when the last pool was protected, says so in one
	 * load: a server's serving then pays nothing here for a heap route
	 * in code the policy names (the range search of
	 * resolve_policy_route) and a few loads for a wrapper, not an
	 * unwind. */
	if (route_heap_is_truth()) {
		if (h.route == SITE_ROUTE_HEAP)
			return NULL;
		/* A wrapper call whose late allocations were counted enough:
		 * its word says heap from now on, which the inline path takes
		 * (interpose.c, route_heap_is_truth) without coming here: an nginx
		 * request's three calls through ngx_alloc and ngx_memalign cost
		 * 300 instructions here before.  A reload window's allocations
		 * come here whatever the word says, and find the wrapper in the
		 * read-only ranges below. */
		if (h.route == SITE_ROUTE_WRAPPER && !take_resolve_late(h.id)) {
			site_set_route(h.id, SITE_ROUTE_HEAP);
			return NULL;
		}
	}
	/* The cached route is a writable word: believed only as far as the
	 * read-only policy agrees.  A heap route for code the policy names
	 * (its filter bit sent it here), a wrapper route for code that is no
	 * wrapper, or a pool number past the state's pools is decided again. */
	if (h.route == SITE_ROUTE_HEAP || h.route == SITE_ROUTE_WRAPPER) {
		int truth = resolve_policy_route(ra);
		if (truth == SITE_ROUTE_HEAP && h.route == SITE_ROUTE_HEAP) {
			/* Sent here by the filter, named by no rule: perhaps by
			 * the code of an object not read yet sharing its
			 * granule; read now, so that the next call is not. */
			int e = errno;
			int busy = shim_busy_enter();
			resolve_read_sharing(ra);
			shim_busy_leave(busy);
			errno = e;
			return NULL;
		}
		if (truth != h.route) {
			h.route = truth;
			site_set_route(h.id, truth);
		}
	} else if (h.route >= (int)st->n_pools) {
		h.route = SITE_ROUTE_UNKNOWN;
	}
	if (h.route == SITE_ROUTE_UNKNOWN || h.route == SITE_ROUTE_WRAPPER) {
		int e = errno;       /* a successful malloc leaves errno alone */
		int busy = shim_busy_enter();
		if (h.route == SITE_ROUTE_UNKNOWN)
			h.route = resolve_route(ra, h.id);
		if (h.route == SITE_ROUTE_WRAPPER)
			h = resolve_through_wrapper(ra, slot);
		shim_busy_leave(busy);
		errno = e;
	}
	if (h.route < 0)
		return NULL;
	/* A heap block moved by realloc (realloc_heap): only into an enforced
	 * pool that takes until its trigger, while it takes. */
	if (move && (!st->pools[h.route].until_trigger || st->image->mode == POLICY_MODE_LEARN ||
		     pool_closed(st->pools[h.route].pool)))
		return NULL;
	align = align < PM_ALIGN ? PM_ALIGN : align;
	/* take = "until-trigger" (learn mode's pools too): the read-only
	 * state's word.  Learning finds each allocation's context (learn.h);
	 * enforce, once the pool closed, counts the site and goes to the heap
	 * (one more load and test per routed allocation while open). */
	if (unlikely(st->pools[h.route].until_trigger)) {
		if (st->image->mode == POLICY_MODE_LEARN && learn_active())
			return learn_alloc((size_t)h.route, size, align, ra, h.id);
		if (pool_closed(st->pools[h.route].pool)) {
			/* A reload's new generation (reload.c). */
			if (unlikely(reload_takes()))
				return reload_alloc((size_t)h.route, size, align, h.id);
			switch (take_note_late((size_t)h.route, h.id, size)) {
			case TAKE_TELL_NOW:
				rules_msg_answer();
				break;
			case TAKE_TELL_RATED:
				rules_msg_send(RULES_MSG_SITES);
				break;
			case TAKE_TELL_NONE:
				break;
			}
			return NULL;
		}
	}
	/* NULL from the pool: it reached max_bytes (said once), or closed
	 * meanwhile; heap it is. */
	return pool_alloc(st->pools[h.route].pool, size, align, h.id);
}
