/*
 * guard.h - the shim's per-thread re-entrancy guard (guard.c): set while
 * the shim runs code that is not its own (dlsym, libconfig, the program's
 * allocator finding itself) so that what that code allocates goes straight
 * to the heap, never to a pool.  Never a lock: one initial-exec TLS word.
 */
#ifndef PMALLOC_GUARD_H
#define PMALLOC_GUARD_H

/* Owned here: other files read it with shim_is_busy() and set it only with
 * the pair shim_busy_enter()/shim_busy_leave(), which restores what was
 * there (so nested sections are right).  One initial-exec TLS load, a few
 * cycles (interpose.c's slow path reads it). */
extern __thread int shim_busy __attribute__((tls_model("initial-exec")));

static inline int shim_is_busy(void)
{
	return shim_busy;
}

static inline int shim_busy_enter(void)
{
	int was = shim_busy;
	shim_busy = 1;
	return was;
}

static inline void shim_busy_leave(int was)
{
	shim_busy = was;
}

#endif
