/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guard.h - the shim's per-thread re-entrancy guard (guard.c): set while
 * the shim runs code that is not its own (dlsym, libconfig, the program's
 * allocator finding itself) so that what that code allocates goes straight
 * to the heap, never to a pool.  Never a lock: one initial-exec TLS word.
 *
 * The word decides where allocations go, and it is writable (TLS): so it
 * holds not a flag but a token, this thread's word's address mixed with an
 * address of the shim's (both moved by ASLR).  A word overwritten with
 * anything else (0, 1, all ones, an address) reads as "not busy": the
 * program's allocations keep their routes (tests/integration/tamper.sh).
 */
#ifndef PMALLOC_GUARD_H
#define PMALLOC_GUARD_H

#include <stdbool.h>
#include <stdint.h>

/* Owned here: other files read it with shim_is_busy() and set it only with
 * the pair shim_busy_enter()/shim_busy_leave(), which restores what was
 * there (so nested sections are right).  A TLS load and a compare against
 * a value computed from two addresses: a few cycles (interpose.c's slow
 * path reads it). */
extern __thread uintptr_t shim_busy __attribute__((tls_model("initial-exec")));
extern const char guard_anchor;

static inline uintptr_t shim_busy_token(void)
{
	return ((uintptr_t)&shim_busy ^ (uintptr_t)&guard_anchor) | 1u;
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
