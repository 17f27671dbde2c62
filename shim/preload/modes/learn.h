/*
 * learn.h - learn mode: which sites a policy can protect without killing
 * the program.  Pools behave as in enforce mode (they take their sites'
 * allocations and are protected by their triggers); a write into protected
 * memory, by the program, another thread or the kernel, marks every site
 * with an object on that page as written, and the page is made writable
 * for good: one fault per page, never a kill, no stderr.  What was learned
 * goes to the journal at exit, at exec and on pmallocctl learn-flush.
 */
#ifndef PMALLOC_LEARN_H
#define PMALLOC_LEARN_H

#include "common.h"
#include "pool.h"

struct shim_state;

/* Ready learning for st's pools (init, before st is published): false
 * when its tables cannot be mapped (the pools then enforce).  init.c hands
 * learn_let_through to fault_arm() with mode learn only when this said
 * true: the read-only decision, not learn.c's writable state, says whether
 * the process learns. */
bool learn_init(const struct shim_state *st);
/* A write at addr into protected memory of hit's pool: true when learning
 * let it through (the page is now writable), false when the read-only
 * decision (fault_mode_of) for the pool is not learn.  Async-signal-safe:
 * bit operations and one mprotect. */
bool learn_let_through(const struct pool_hit *hit, uintptr_t addr);
/* Pool i was protected (a trigger): the first time, count its objects per
 * site, so that the flush can tell what came after.  Normal context. */
void learn_note_protect(size_t i);
/* Write one journal entry per learned site (reason: "exit", "exec",
 * "learn-flush").  Normal context only: reads symbol files, allocates
 * with the shim's guard set. */
void learn_flush(const char *reason);
/* 1 while this process learns. */
bool learn_active(void);

#endif
