/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
#include "os.h"                     /* RO_PAGE */

#define SITE_NONE 0
#define SITE_ROUTE_UNKNOWN (-2)      /* not decided yet */
#define SITE_ROUTE_HEAP (-1)         /* ordinary heap */
#define SITE_ROUTE_WRAPPER (-3)      /* an allocation wrapper: decided per call by its caller */

/* 8,192 slots in 64 KiB, 16 pages: each page a process's sites reach costs
 * it two faults (malloc's read maps the zero page, the first site's
 * insertion copies it: 3.3 us a page here, most of it the fresh page's).
 * So a site's home slot is among the first 2,048 (4 pages) and its first
 * probes follow it; only when those are taken do the later probes spread
 * over the whole table: python3's first 50 sites touch 4 or 5 pages where
 * homes over the whole table touched 15.  Past some 5,000 sites a new one
 * may find no free slot within its probes: it is then decided at every
 * call (slower, never wrong). */
#define SITE_BITS 13
#define SITE_SLOTS (1u << SITE_BITS)
#define SITE_HOME_BITS 11
#define SITE_HOME_SLOTS (1u << SITE_HOME_BITS)
#define SITE_SYM 48

/* A slot: writable, and so believed only as site.h's filter and
 * interpose.c's slow path allow (a heap route for code the policy names
 * is confirmed by resolve.c's read-only ranges; a wrapper route or an
 * unknown pool is decided again).  What malloc reads, one 8-byte word, so that the slots a process
 * uses touch few pages (each page first written costs a fault: the table
 * is sparse by design): the return address (user-space code addresses fit
 * in 48 bits) above its cached route (16 bits, stored as route -
 * SITE_ROUTE_UNKNOWN: zeroed means unknown).  The symbols, read only by
 * reports, live apart. */
struct site {
	_Atomic uint64_t w;
};
#define SITE_RA_BITS 48

static inline uint64_t site_word(uintptr_t ra, int route)
{
	return (uint64_t)ra << (64 - SITE_RA_BITS) | (uint16_t)(route - SITE_ROUTE_UNKNOWN);
}

static inline uintptr_t site_word_ra(uint64_t w)
{
	return (uintptr_t)(w >> (64 - SITE_RA_BITS));
}

static inline int site_word_route(uint64_t w)
{
	return (int)(int16_t)(uint16_t)w + SITE_ROUTE_UNKNOWN;
}

struct site_sym {
	char sym[SITE_SYM];      /* written before sym_ready */
	_Atomic int sym_ready;
};

/* The table, mapped on first use; NULL before. */
extern struct site *_Atomic site_table __attribute__((visibility("hidden")));

/* ra's home slot, among the first SITE_HOME_SLOTS. */
static inline uint32_t site_hash(uintptr_t ra)
{
	return (uint32_t)(((uint64_t)ra * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - SITE_HOME_BITS));
}

/* The id of return address ra, inserting it on first sight; SITE_NONE when
 * the table is full.  Lock-free. */
uint16_t site_id(uintptr_t ra);

/* A site's id and its cached route, returned in one register. */
struct site_hit {
	int route;
	uint16_t id;
};

/* The fast path of the interposition: ra's id and cached route in one
 * probe when ra sits in its home slot (the common case): a multiply, two
 * loads, a compare.  Anything else goes the long way, through site_id(). */
struct site_hit site_lookup_slow(uintptr_t ra);
/* The probe alone: true with *ret when ra sits in its home slot. */
static inline bool site_lookup_home(uintptr_t ra, struct site_hit *ret)
{
	struct site *t = atomic_load_explicit(&site_table, memory_order_acquire);
	if (likely(t)) {
		uint32_t h = site_hash(ra);
		uint64_t w = atomic_load_explicit(&t[h].w, memory_order_acquire);
		if (likely(site_word_ra(w) == ra)) {
			*ret = (struct site_hit){ site_word_route(w), (uint16_t)(h + 1) };
			return true;
		}
	}
	return false;
}
static inline struct site_hit site_lookup(uintptr_t ra)
{
	struct site_hit h;
	return site_lookup_home(ra, &h) ? h : site_lookup_slow(ra);
}
/* The code the policy names, in 256-byte granules, a byte each, folded
 * modulo 16 MiB: a read-only filter for the heap routes cached in the
 * table (which any write can forge), and, while the policy's rules
 * resolve, what the armed malloc looks at first (interpose.c's filter
 * entries: its index is the return address's bytes 1 and 2, one load).
 * Also marked whole: the code of each object loaded at arming whose
 * symbols are not read yet (narrowed to its ranges once they are,
 * resolve.c).  A call site whose granule's byte is set is looked up in
 * resolve.c's read-only ranges before its cached heap route is believed;
 * one whose byte is clear is no policy site.  Bytes, not bits: one
 * instruction less than a bit test on the armed malloc's path; 64 KiB of
 * .bss, read through the zero page but where marked.
 * Written only between site_policy_open() and site_policy_close()
 * (resolve.c, resolve_lock held, or start-up), whose mprotects fail hard. */
#define SITE_POLICY_SHIFT 8
#define SITE_POLICY_GRANULES (1u << 16)
union site_policy_page {
	struct {
		unsigned char granule[SITE_POLICY_GRANULES];
		/* Every pool of the policy closed (take = "until-trigger",
		 * enforce or audit: each one's trigger fired and its memory
		 * protected): every allocation goes to the heap, so a heap
		 * route, cached or not, is the truth and need not be checked.
		 * Set once (site_policy_mark_closed), never cleared; in the
		 * same read-only pages as the filter, so that no write can set
		 * it early and have a forged heap route believed. */
		unsigned char closed;
	};
	unsigned char pages[SITE_POLICY_GRANULES + RO_PAGE];
};
extern union site_policy_page site_policy __attribute__((visibility("hidden")));
/* Might ra be a call site in code the policy names?  A shift, a
 * truncation and a byte compared. */
static inline bool site_maybe_policy(uintptr_t ra)
{
	return site_policy.granule[(uint16_t)(ra >> SITE_POLICY_SHIFT)] != 0;
}
/* Is every pool closed (the closed byte above)?  One load. */
static inline bool site_policy_closed(void)
{
	return site_policy.closed != 0;
}
/* Are return addresses [lo, hi) all marked already (nothing to open)? */
bool site_policy_marked(uintptr_t lo, uintptr_t hi);
void site_policy_open(void);
/* Return addresses [lo, hi) may be policy sites (cleared only by
 * site_policy_unmark, resolve.c's narrowing). */
void site_policy_mark(uintptr_t lo, uintptr_t hi);
/* Clear the granules of [lo, hi) whose bit in keep (SITE_POLICY_GRANULES
 * of them, indexed as the filter is: granule g is bit g % 64 of word
 * g / 64) is 0: what a narrowing leaves marked
 * is what keep says, and a granule kept is never cleared on the way, so a
 * concurrent reader never sees a site the policy names unmarked.  Between
 * site_policy_open and site_policy_close. */
#define SITE_POLICY_KEEP_WORDS (SITE_POLICY_GRANULES / 64)
void site_policy_unmark(uintptr_t lo, uintptr_t hi, const uint64_t *keep);
/* The filter's index of code address a. */
static inline uint16_t site_policy_index(uintptr_t a)
{
	return (uint16_t)(a >> SITE_POLICY_SHIFT);
}
/* The filter's bytes of addresses [lo, hi), folded: at most two runs of
 * indexes, [run[k].at, run[k].at + run[k].n); their number (0 when hi <=
 * lo).  A range of 16 MiB or more is every byte, once.  So that the
 * filter and the tables that share its indexes (resolve.c's narrowing)
 * are written a run at a time (memset), not a byte and a fold at a time:
 * python3's and libc's code are some 16,000 bytes of it. */
struct site_policy_run {
	size_t at, n;
};
static inline size_t site_policy_runs(uintptr_t lo, uintptr_t hi, struct site_policy_run run[2])
{
	if (hi <= lo)
		return 0;
	uintptr_t g0 = lo >> SITE_POLICY_SHIFT, g1 = (hi - 1) >> SITE_POLICY_SHIFT;
	if (g1 - g0 >= SITE_POLICY_GRANULES) {
		run[0] = (struct site_policy_run){ 0, SITE_POLICY_GRANULES };
		return 1;
	}
	size_t at = (uint16_t)g0, n = (size_t)(g1 - g0) + 1;
	if (at + n <= SITE_POLICY_GRANULES) {
		run[0] = (struct site_policy_run){ at, n };
		return 1;
	}
	run[0] = (struct site_policy_run){ at, SITE_POLICY_GRANULES - at };
	run[1] = (struct site_policy_run){ 0, n - (SITE_POLICY_GRANULES - at) };
	return 2;
}
/* Every pool is closed (between site_policy_open and site_policy_close). */
void site_policy_mark_closed(void);
void site_policy_close(void);
/* Only the filter's pages that hold the bytes of return addresses [lo, hi)
 * opened, and closed again (the whole filter at its first close): a
 * narrowing writes an object's few pages of the 17, and an mprotect costs
 * for each page present besides its 2.5 us.  Between them, only those
 * bytes are written. */
void site_policy_open_range(uintptr_t lo, uintptr_t hi);
void site_policy_close_range(uintptr_t lo, uintptr_t hi);
/* The same with the page(s) [next, next + next_len) of the layer above in
 * the same call, when they lie right after the filter (the Makefile's
 * layout: the rules' page, whose table pointer is stored with a
 * narrowing): one mprotect each way where there were two.  false, nothing
 * opened, when they cannot be one call: the caller then opens the filter's
 * pages and its own apart.  The close closes what the open opened. */
bool site_policy_open_range_next(uintptr_t lo, uintptr_t hi, void *next, size_t next_len);
void site_policy_close_range_next(uintptr_t lo, uintptr_t hi, void *next, size_t next_len);

/* Map the table (shim_init, before the policy is armed): what init.c
 * publishes as malloc's "armed?" word, in its read-only page (armed.h).
 * NULL without memory: malloc then routes nothing. */
struct site *site_arm(void);

/* The armed malloc's fast path: is ra a site seen before whose route is
 * the heap?  In its home slot (the common case): a multiply, a shift, one
 * load and one compare, and no site id to build.  false sends the caller
 * the long way (site_lookup). */
static inline bool site_is_heap(struct site *t, uintptr_t ra)
{
	return atomic_load_explicit(&t[site_hash(ra)].w, memory_order_acquire) == site_word(ra, SITE_ROUTE_HEAP);
}
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
