/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * report.h - a violation reported: its record (struct pmw_report, wire.h)
 * filled once, its line on stderr (rate-limited per faulting instruction,
 * the rest counted and summarised), then the report sink (hooks.h: pmallocd
 * or the journal in the preloaded shim).  Everything here is async-signal-safe:
 * it runs in the fault handler.
 */
#ifndef PMALLOC_REPORT_H
#define PMALLOC_REPORT_H

#include "common.h"
#include "wire.h"

struct pool_hit;

/* Take the report lock (every signal blocked until report_end) and return
 * the record, cleared and filled from hit (object, site), the pool's and
 * policy's names (fault_names()'s; NULL: the pool struct's own), the data
 * address written, the writing instruction (0 unknown) and the mode.  The
 * caller may add the cause (report_cause()) and must pass it to
 * report_end().  Reports are serialised, so concurrent ones wait rather
 * than being lost; one nested in another on the same thread gets a record
 * of its own that only reaches stderr (counted). */
struct pmw_report *report_begin(const struct pool_hit *hit, const char *pool, const char *policy,
				uintptr_t address, uintptr_t ip, bool audit);
/* How the memory was written, when not by an instruction of the
 * program's: the kernel in kernel_call, or another thread (a write found
 * after another audited write's window). */
void report_cause(struct pmw_report *r, enum pmw_cause cause, const char *kernel_call);
/* The stderr line, then walk(r, arg) (a stack walk that appends
 * frames[1..]; it may fault and must guard itself; may be NULL), then the
 * modules of the frames and the fault symbol, then the report sink; the
 * lock is given back. */
void report_end(struct pmw_report *r, void (*walk)(struct pmw_report *r, void *arg), void *arg);
/* Install the fork handler and exit summary (once; normal context). */
void report_init(void);

#endif
