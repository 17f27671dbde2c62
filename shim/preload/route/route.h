/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * route.h - the routing decision's cold part (route.c), called by the
 * malloc family's inline fast test (interpose.c) only.
 */
#ifndef PMALLOC_ROUTE_H
#define PMALLOC_ROUTE_H

#include "common.h"
#include "site.h"
#include "reload.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Is a heap route the truth whatever the filter says?  Every pool closed
 * (site.h's read-only closed byte) and no reload window taking the main
 * thread's allocations (reload.h): then every allocation goes to the
 * heap.  A load and, only then, a call that reads the reload page.  The
 * one test of it: interpose.c's inline paths, route_slow and trigger.c's
 * short wait path. */
static inline bool route_heap_is_truth(void)
{
	return site_policy_closed() && !reload_open();
}

/* The rare part of routing: a site seen for the first time, an allocation
 * wrapper (whose caller decides), a site that goes to a pool, or the shim
 * allocating for itself.  size and align (0: PM_ALIGN) of the allocation,
 * ra its return address and slot where its call pushed it (0: not known;
 * resolve.c reads a wrapper's caller from there), h the site table's hit
 * for it; move: a heap
 * block moved by realloc.  A pool object, or NULL for "the heap". */
cold void *route_slow(size_t size, size_t align, uintptr_t ra, uintptr_t slot, struct site_hit h, bool move);

#endif
