/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * respawn.c - a process forked after its parent's trigger starts as the
 * children learning saw started, and a process whose role no pool
 * protects in runs unprotected (roles, life.h).
 *
 * The children learning saw were forked before their parent's trigger
 * (nginx's workers, forked before the master waits): they wrote the
 * memory they inherited while they started (ngx_worker_process_init
 * writes the cycle pool's header), and their own trigger protected it.  A
 * child forked after its parent's trigger (a worker respawned after one
 * died, a fork per connection) inherits that memory read-only.  So, in the
 * fork child handler, the pools its own triggers can protect again
 * (on-call, on-wait, after:, counted from the fork) are made writable
 * again in the child only (its private copy-on-write pages; the parent
 * keeps its protection), their marks say so (pool_reopen: the fault
 * handler, pmalloc_is_protected() and the next protect agree), and the
 * child's first trigger protects them again, with a report of its own.
 * Pools with only a manual trigger stay protected: nothing in the child
 * would protect them again.  So do pools protected on-call:fork or
 * on-call:daemon: their policy protects before the fork, so the children
 * learning saw started protected too.
 *
 * What it costs, what an attacker gains: a respawned child is unprotected
 * during its own start-up, exactly as the children learning saw were, and
 * for life if it never reaches its trigger (a child forked only to exec,
 * or one that works without waiting: the same as learning saw).  An
 * attacker who can make the parent fork at will gets a fresh process whose
 * inherited state is writable until it waits; it is the parent's data
 * copied, and the parent's own protection is untouched.  Sealed pools
 * (protection = "seal") cannot be made writable: they stay read-only in
 * the child, whose start-up write into them kills it as before; a sealed
 * policy is only safe for roles whose children do not write inherited
 * pool memory (learning of the child role says so).
 *
 * Roles: a pool protects only in the roles it names; in a child whose
 * role it does not name, what it protected is reopened the same way and
 * never protected again; when no pool names the role, the process runs
 * unprotected, said once in the journal.  A pool takes allocations where
 * a role at that depth or below is named (a child inherits what its parent
 * allocated), none elsewhere.
 *
 * Runs in the fork child handler: only this thread lives, the pools'
 * locks were released by pool.c's handler, which runs first; no
 * allocation, a few system calls per pool.
 */
#define _GNU_SOURCE
#include "respawn.h"
#include "stderr.h"
#include "journal.h"
#include "life.h"

#include <pthread.h>

/* Say once that this process runs unprotected, when no pool protects in
 * its role. */
static void say_role(const struct shim_state *st)
{
	for (size_t i = 0; i < st->n_pools; i++)
		if (shim_pool_protects_here(st, i))
			return;
	debug_printf("no pool of policy \"%s\" names role %s: running unprotected", pimg_policy_name(st->image),
		     life_role());
	journal_role_unprotected(pimg_policy_name(st->image), life_role());
}

/* Pools that take nothing in this process's role: closed (their sites go
 * to the heap), as at a trigger. */
static void close_foreign(const struct shim_state *st)
{
	for (size_t i = 0; i < st->n_pools; i++)
		if (!shim_pool_takes_here(st, i) && !pool_closed(st->pools[i].pool))
			pool_close(st->pools[i].pool);
}

/* Triggers that protect before the child exists. */
#define FORK_CALLS (1u << POLICY_CALL_FORK | 1u << POLICY_CALL_DAEMON)

/* Can a trigger of the child's protect pool sp again? */
static bool reprotected(const struct shim_pool *sp)
{
	return sp->call_mask || sp->after_ns;
}

static void respawn_after_fork_child(void)
{
	const struct shim_state *st = shim;
	if (!st)
		return;
	close_foreign(st);
	size_t reopened = 0;
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct shim_pool *sp = &st->pools[i];
		if (!shim_pool_protects_here(st, i) || (reprotected(sp) && !(sp->call_mask & FORK_CALLS)))
			reopened += pool_reopen(sp->pool);
	}
	if (reopened)
		debug_printf("forked as %s: %zu bytes its parent protected are writable until its own trigger",
			     life_role(), reopened);
	say_role(st);
}

void respawn_init(const struct shim_state *st)
{
	close_foreign(st);
	say_role(st);
	pthread_atfork(NULL, NULL, respawn_after_fork_child);
}
