/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fault.h - the SIGSEGV handler: writes to protected pool memory are
 * reported and end the process (enforce) or are let through (audit, learn);
 * every other SIGSEGV goes where it would have gone without the shim.
 *
 * What a write gets is decided from read-only state only (fault.c's page,
 * read-only from the first pool on): enforce unless that page says the
 * process audits or learns and the pool is one of the interposition's.
 */
#ifndef PMALLOC_FAULT_H
#define PMALLOC_FAULT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ro.h"

/* Install the handler (once; idempotent), remembering the previous one,
 * and make the decisions' page read-only. */
void fault_install(void);
/* The same, but the page is left as it is for fault_arm(), which init.c
 * calls next and which makes it read-only then: one mprotect at start-up
 * instead of three.  A start-up that stops short of fault_arm() calls
 * fault_install() instead. */
void fault_install_for_arm(void);
/* Interposed sigaction(), every signal: for SIGSEGV (and SIGTRAP while
 * audit pools exist) record the program's handler as the one to chain to,
 * keeping the shim's first; other signals go to libc.  No handler's mask
 * may block a fault signal.  Same contract as sigaction(). */
int fault_set_program_action(int sig, const struct sigaction *act, struct sigaction *old);
/* Take the fault signals the shim needs out of set (SIGSEGV; SIGTRAP
 * while audit pools exist): they must never be blocked (sigmask.c). */
void fault_filter_mask(sigset_t *set);
/* At each protect (api.c, the preload's trigger): is the shim's handler
 * still the one the kernel runs for SIGSEGV (and SIGTRAP when ours), and
 * is SIGSEGV unblocked on this thread?  A handler replaced by any route
 * the shim did not see (a raw rt_sigaction) is recorded as the program's
 * (chained for faults that are not pool writes) and the shim's installed
 * again; a blocked SIGSEGV (sigset's SIG_HOLD, a swapcontext mask, a
 * saved jump-buffer mask restored) is unblocked; either is said
 * (hooks.h's fault_notice: the journal).  Returns how many were put
 * right.  Three system calls: at a protect that makes something new
 * read-only and at the pool API's protects (force), else at most once a
 * second (a protect with nothing new, an event-loop call's, costs one
 * coarse clock read); nothing per allocation. */
int fault_recheck(bool force);
/* Is fault_recheck(false) due: a second since its last look?  Inline for
 * the wait calls' short path (trigger.c): a load and a compare with the
 * coarse clock's now. */
#define FAULT_RECHECK_EVERY_NS UINT64_C(1000000000)
extern _Atomic uint64_t fault_recheck_last __attribute__((visibility("hidden")));
static inline bool fault_recheck_due(uint64_t now)
{
	return now - atomic_load_explicit(&fault_recheck_last, memory_order_relaxed) >= FAULT_RECHECK_EVERY_NS;
}
/* Audit pools exist: let their faulting writes through by single-stepping
 * them (installs a SIGTRAP handler once). */
void fault_enable_audit(void);

struct pool_hit;
struct pmalloc_pool;

/* What a write into protected pool memory gets.  Enforce is 0: the state
 * before (and without) a policy. */
enum fault_mode { FAULT_ENFORCE = 0, FAULT_AUDIT = 1, FAULT_LEARN = 2 };
#define FAULT_POOLS_MAX 32

/* The interposition's pools (n of them) and their mode, kept in the
 * read-only page from here on (sealed too when seal and mseal works).
 * learn (learn.c, not in libpmalloc.so): asked about every write into
 * those pools when mode is learn; true: let through.  Once, by init.c,
 * before any of pools can be protected.  reload (reload.c): asked first
 * about every write into those pools, whatever the mode; true: let
 * through (a service's reload under way).  0, -E2BIG (too many pools), -EBUSY
 * (armed already) or -errno of mprotect. */
int fault_arm(enum fault_mode mode, struct pmalloc_pool *const *pools, size_t n,
	      bool (*learn)(const struct pool_hit *hit, uintptr_t addr),
	      bool (*reload)(const struct pool_hit *hit, uintptr_t addr), bool seal);
/* The decision for a write into hit's protected memory, from the read-only
 * page only: enforce for every pool but the armed ones, and for those too
 * unless the page says audit or learn.  Async-signal-safe. */
enum fault_mode fault_mode_of(const struct pool_hit *hit);
/* The names a report of a write into hit's pool gives: the armed pools'
 * and their policy's from the read-only page, an API pool's own label
 * (policy ""), never a pool struct's words read past their field. */
void fault_names(const struct pool_hit *hit, const char **ret_pool, const char **ret_policy);

/* This file's read-only page, for the one list (ro.h). */
extern const struct ro_span fault_ro_span;
extern const struct ro_span fault_prog_ro_span;

#endif
