/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hooks.h - what the layers above the pool core tell it, once, at
 * start-up (hooks.c): where a violation's record goes after its stderr
 * line, the armed policy's report limits, what runs when the arena is
 * reserved, and what pmalloc_protect_named does.  The core never calls a
 * layer above it by name: libpmalloc.so (the pool API alone) never sets
 * them, and each has its default there.
 *
 * They live in a page of their own at a link-time address, read-only from
 * the one call that sets them: a write into the shim's memory cannot point
 * the fault handler's report or the manual protect at another function.
 */
#ifndef PMALLOC_HOOKS_H
#define PMALLOC_HOOKS_H

#include "arena.h"
#include "common.h"

#include <stdatomic.h>

struct pmw_report;

struct core_hooks {
	/* report.c, after the stderr line, under the report lock, in the fault
	 * handler (async-signal-safe).  NULL: the line is the whole report. */
	void (*report_sink)(struct pmw_report *r);
	/* report.c: the armed policy's rate limit of stderr lines and its
	 * generation, read from read-only state (async-signal-safe); false:
	 * none armed, the defaults and generation 0.  NULL: the same. */
	bool (*report_limits)(unsigned int *burst, unsigned int *interval_s, uint64_t *generation);
	/* arena.c: the arena's first span is being made (once, before any
	 * pool memory is handed out).  NULL: nothing to do (told at the next
	 * span; init.c tells itself of an arena reserved before its hook). */
	void (*arena_on_reserve)(void);
	/* api.c: pmalloc_protect_named(pool).  NULL: no pool has a name a
	 * policy gave it (ENOENT). */
	int (*protect_named)(const char *pool);
	/* fault.c (fault_recheck, at each protect): the fault handler was
	 * found replaced behind the shim's back (a raw rt_sigaction) or
	 * SIGSEGV blocked on the protecting thread, and was put right; kind
	 * says which (wire.h's PMW_NOTICE_* bit: pmallocd's status counts it),
	 * what in words (the journal).  Not in a signal handler.  NULL: said
	 * under PMALLOC_DEBUG only. */
	void (*fault_notice)(unsigned int kind, const char *what);
	/* trigger.c: a deadline that the process's own calls look at while
	 * core_deferred_pending is set (on-wait's fallback in a
	 * single-threaded process, which no thread of the shim's waits for):
	 * the clock read and what is due protected.  Called by the read family
	 * as a call returns (kwrite.c), never in a signal handler; keeps
	 * errno.  NULL: nothing is ever deferred. */
	void (*deferred_poll)(void);
};

union core_hooks_page {
	struct core_hooks h;
	unsigned char page[RO_PAGE];
};
extern union core_hooks_page core_hooks_ro __attribute__((visibility("hidden")));
#define core_hook (core_hooks_ro.h)

/* Set by trigger.c while a deadline is left to the process's own calls: a
 * writable hint (forged to 0, the deadline waits for the next wait call;
 * to 1, a look at the clock).  core_deferred_poll(): a load and a branch. */
extern _Atomic int core_deferred_pending __attribute__((visibility("hidden")));
static inline void core_deferred_poll(void)
{
	if (__builtin_expect(atomic_load_explicit(&core_deferred_pending, memory_order_relaxed) != 0, 0) &&
	    core_hook.deferred_poll)
		core_hook.deferred_poll();
}

/* Set the hooks and make their page read-only; once per process (a second
 * call is a broken invariant: fatal, as a failed protect is). */
void core_hooks_set(const struct core_hooks *h);

#endif
