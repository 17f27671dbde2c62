/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guard.h - the shim's per-thread re-entrancy guard (guard.c): set while
 * the shim runs code that is not its own (dlsym, libconfig, the program's
 * allocator finding itself) so that what that code allocates goes straight
 * to the heap, never to a pool.  Never a lock: one initial-exec TLS word.
 *
 * The word decides where allocations go, and it is writable (TLS): so it
 * holds not a flag but a token, this thread's word's address mixed with
 * the shim's secret (os.h: random, in a page read-only from os_init on).
 * A word overwritten with anything else (0, 1, all ones, an address, the
 * two addresses a token was once made of) reads as "not busy": the
 * program's allocations keep their routes (tests/integration/tamper.sh,
 * row busy_token).
 *
 * The rule, for all of the shim (issue 27): nothing writable decides
 * where an allocation goes, what a protect covers, or where the fault
 * handler jumps, unless it is checked against something a write cannot
 * forge: a read-only page at a link-time address (os.h's os_ro and its
 * secret, fault.c's ro and prog_ro, pool.c's pool_ro, arena.h's units_ro,
 * hooks.h, heap.h, libc.h's table), or the secret it is mixed with.  So:
 *   - this token is secret-derived;
 *   - the region a thread allocates from is one of its own TLS slots,
 *     picked by a masked index (pool.h), never a pointer;
 *   - a span the arena hands out is checked against the read-only map of
 *     live units (arena.c) before it is made writable;
 *   - the handler's walk jumps only to a record sealed with the secret
 *     (fault.c);
 *   - the cached libc entry points are a read-only table (libc.h), the
 *     library is linked -z relro -z now;
 *   - a kill is reported to the journal whatever word the report path
 *     finds overwritten (report.c, journal.c).
 * tests/integration/tamper.sh's rows check each.
 */
#ifndef PMALLOC_GUARD_H
#define PMALLOC_GUARD_H

#include "os.h"

#include <stdbool.h>
#include <stdint.h>

/* Owned here: other files read it with shim_is_busy() and set it only with
 * the pair shim_busy_enter()/shim_busy_leave(), which restores what was
 * there (so nested sections are right).  A TLS load and a compare against
 * a value computed from an address and the secret (one PC-relative load,
 * as the address it replaces): a few cycles (interpose.c's slow path
 * reads it). */
extern __thread uintptr_t shim_busy __attribute__((tls_model("initial-exec")));

static inline uintptr_t shim_busy_token(void)
{
	return ((uintptr_t)&shim_busy ^ os_secret) | 1u;
}

static inline bool shim_is_busy(void)
{
	return shim_busy == shim_busy_token();
}

static inline int shim_busy_enter(void)
{
	int was = shim_is_busy();
	shim_busy = shim_busy_token();
	return was;
}

static inline void shim_busy_leave(int was)
{
	shim_busy = was ? shim_busy_token() : 0;
}

#endif
