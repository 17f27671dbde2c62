/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * armed.h - the interposition's armed state: the policy that applies to this
 * process (its image, policy_image.h) and its pools.  Built once by init.c
 * in a page or mapping of its own, the image copied right after the state,
 * then read-only (mprotect'ed, as OpenBSD's malloc_readonly is; sealed too under
 * protection = "seal"): an attacker who can write the heap cannot rewrite
 * where allocations go or which pools protect.  Nothing here points into
 * writable memory but the pool structs (pool.h).
 */
#ifndef PMALLOC_ARMED_H
#define PMALLOC_ARMED_H

#include "arena.h"
#include "common.h"
#include "life.h"
#include "guard.h"                  /* shim_busy_enter/leave, for the files above */
#include "libc.h"                   /* REAL/LIBC, for the interposers */
#include "fmt.h"
#include "policy.h"
#include "policy_image.h"
#include "pool.h"
#include "site.h"

#define SHIM_POOLS_MAX 32

/* Pool i of the state is pool i of the image. */
struct shim_pool {
	struct pmalloc_pool *pool;
	uint32_t call_mask;              /* bit c: on-call trigger for call c */
	uint32_t wait_mask;              /* bits of call_mask that are on-wait's only: they fire
					  * on the main thread's call alone (trigger.c) */
	uint64_t after_ns;               /* after: trigger, 0 when none */
	bool manual;                     /* manual trigger: pmalloc_protect_named, pmallocctl protect */
	bool until_trigger;              /* take = "until-trigger" (every pool of a learn policy):
					  * closed at its first trigger (pool_close) */
	char after_text[24];             /* "after:2s", for reports */
};

struct shim_state {
	const struct pimg_header *image; /* the policy, validated, in this state's mapping */
	uint64_t generation;             /* the daemon's policy generation; 0 from a file */
	size_t n_pools;
	uint32_t call_mask;              /* union of the pools' on-call triggers */
	uint32_t named_call_mask;        /* those of them named by on-call (not on-wait's) */
	uint32_t wait_pools;             /* bit i: pool i has on-wait */
	int match_all;                   /* pool taking every allocation ("*"), or -1 */
	bool has_manual;                 /* a pool has the manual trigger: read pmallocctl's orders */
	bool lean_waits;                 /* enforce, no orders to read: a wait once every pool is
					  * closed and routing quiet has only the handler's look
					  * (trigger.c's wait_is_lean) */
	uint64_t start_ns;               /* CLOCK_MONOTONIC at start-up */
	void (*rules_changed)(void);     /* resolve.c: a rule that matched nothing matches now (a
					  * dlopen); init.c's, read-only here like the rest */
	struct shim_pool pools[SHIM_POOLS_MAX];
};

/* Does pool i of st protect in this process?  Its roles (the image's, read
 * only) name this process's (life.h); none named: every role. */
static inline bool shim_pool_protects_here(const struct shim_state *st, size_t i)
{
	uint32_t roles = pimg_pool(st->image, i)->roles;
	return !roles || (roles >> life_depth()) & 1u;
}

/* Does it take allocations here: a role of its at this process's depth or
 * below (what a process allocates, the children it forks inherit)? */
static inline bool shim_pool_takes_here(const struct shim_state *st, size_t i)
{
	uint32_t roles = pimg_pool(st->image, i)->roles;
	return !roles || (roles >> life_depth()) != 0;
}

/* The armed state: NULL until a policy with pools is armed.  The pointer
 * itself sits in a page of its own that init.c makes read-only (and seals
 * under protection = "seal") right after setting it, like the state it
 * points to: a write into the shim's .bss cannot point it at a forged
 * state.  Reading it is one load, as from any global.  The state and its
 * image live in the rest of that page when they fit (most policies: one
 * mprotect for all, and no mapping of their own), else in a mapping made
 * read-only apart. */
union shim_ro_page {
	struct {
		const struct shim_state *state;
		/* The site table once a policy is armed, NULL before: malloc's
		 * one test for "armed?" and its table at once (site_arm()). */
		struct site *sites;
		_Alignas(64) unsigned char room[RO_PAGE - 64];
	};
	unsigned char page[RO_PAGE];
};
static_assert(sizeof(union shim_ro_page) == RO_PAGE, "the state's pointer has its page to itself");
extern union shim_ro_page shim_ro;
#define shim (shim_ro.state)
#define site_armed (shim_ro.sites)

/* The armed policy's report limits and generation: false when none is
 * armed.  The pool core's report_limits hook (hooks.h); one load of the
 * read-only pointer, async-signal-safe (state.c). */
bool state_report_limits(unsigned int *burst, unsigned int *interval_s, uint64_t *generation);

#endif
