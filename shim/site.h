/*
 * site.h - call sites: a return address seen by an allocator, numbered once.
 *
 * A site id (1..SITE_MAX) is what the per-object metadata keeps, and what
 * the interposition caches its routing decision under, so a symbol look-up
 * happens once per call site, never per call.
 */
#ifndef PMALLOC_SITE_H
#define PMALLOC_SITE_H

#include "common.h"

#define SITE_NONE 0
#define SITE_ROUTE_UNKNOWN (-2)      /* not decided yet */
#define SITE_ROUTE_HEAP (-1)         /* ordinary heap */
#define SITE_ROUTE_WRAPPER (-3)      /* an allocation wrapper: decided per call by its caller */

/* The id of return address ra, inserting it on first sight; SITE_NONE when
 * the table is full.  Lock-free; about 3 ns on a hit. */
uint16_t site_id(uintptr_t ra);
/* The return address of id, 0 for SITE_NONE or an unknown id. AS-safe. */
uintptr_t site_address(uint16_t id);
/* The routing decision cached for id (SITE_ROUTE_*, or a pool index). */
int site_route(uint16_t id);
void site_set_route(uint16_t id, int route);
/* Forget every routing decision (after new symbols appear: dlopen). */
void site_reset_routes(void);
/* "symbol+0xoff" for id when the interposition resolved it, else NULL. AS-safe. */
const char *site_symbol(uint16_t id);
void site_set_symbol(uint16_t id, const char *sym);

#endif
