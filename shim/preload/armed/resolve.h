/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve.h - from a call site to a pool (resolve.c): the policy's site
 * and wrapper rules turned into address ranges of the objects loaded.
 */
#ifndef PMALLOC_RESOLVE_H
#define PMALLOC_RESOLVE_H

#include "armed.h"
#include "ro.h"

/* The routing decision for return address ra (cold path). */
int resolve_route(uintptr_t ra, uint16_t id);
/* What the read-only policy says of return address ra, from the ranges
 * read so far (no symbol is read, no lock taken): its pool, a wrapper, or
 * the heap.  What a cached route is checked against before it is believed
 * (interpose.c). */
int resolve_policy_route(uintptr_t ra);
/* A call site at ra whose granule of site.h's filter is marked, but which
 * no rule names: the objects whose symbols are not read yet and whose code
 * shares that granule (the filter folds addresses) have them read now, and
 * their marks narrowed to what the rules name, so that the next call from
 * ra finds its granule clear.  Takes resolve_lock; normal context. */
void resolve_read_sharing(uintptr_t ra);
/* Every pool is closed for good (take = "until-trigger", the last one's
 * trigger fired, not in learn mode): the filter's read-only closed byte is
 * set (site.h), after which interpose.c believes every heap route.  Takes
 * resolve_lock; idempotent.  Normal context only. */
void resolve_pools_closed(void);
/* The site to charge an allocation to, and its route, looking through
 * wrappers from the call at ra: the first caller outside a wrapper.  slot:
 * where the program's call pushed ra (the interposer's CFA less a word),
 * or 0 when not known (then always an unwind). */
struct site_hit resolve_through_wrapper(uintptr_t ra, uintptr_t slot);
/* After dlclose: forget the ranges of objects no longer loaded and decide
 * every call site again (another object may now sit at the same place). */
void resolve_forget_unloaded(void);
/* Read now every symbol table still waiting for its object's first
 * allocation: the program is about to restrict itself (restrict.c). */
void resolve_read_all(void);
/* Read the rules of the policy being armed from its image (and set
 * st->match_all); scans the objects loaded now.  Before st is read-only.
 * exe: the program's path as read at start-up ("" when unknown).  The
 * rules that matched nothing are resolve_rule()'s to tell (init.c logs
 * them); a later match, after a dlopen, is told to st->rules_changed. */
int resolve_init(struct shim_state *st, const char *exe);
/* The rules read (every site and wrapper but the match-all "*"), for
 * pmallocd's status: rule i as written and whether it matched; false past
 * the last.  Read while other threads may resolve: a rule seen unmatched
 * may match a moment later (rules_msg.c says so again then). */
struct resolve_rule_view {
	int pool;                        /* index in shim->pools */
	bool wrapper, by_offset;
	bool looked_up;                  /* false: a pool takes everything, nothing was scanned */
	bool matched;
	bool dropped;                    /* left out of an object: more than
					  * POLICY_OBJECT_NAME_RULES_MAX rules by name fit it */
	bool object_loaded;              /* false: its object glob fits nothing loaded yet */
	const char *object, *function, *build_id;   /* object, build_id may be NULL */
};
size_t resolve_n_rules(void);
/* Can the policy route anything here: a pool takes every site ("*"), or a
 * rule resolved among the objects read?  false: every allocation goes to
 * the heap until a new object comes (interpose.c then stops routing). */
bool resolve_may_route(void);
size_t resolve_unmatched(void);
/* Of those, the rules whose object glob fits no object loaded yet. */
size_t resolve_waiting(void);
bool resolve_rule(size_t i, struct resolve_rule_view *ret);

/* This file's read-only page, for the one list (ro.h). */
extern const struct ro_span resolve_ro_span;

#endif
