/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * violation_fmt.h - the one formatter of a violation record (struct
 * pmw_report, wire.h): the shim's stderr line, and the journal fields of
 * pmallocd(8) that the shim (journal.c) and pmallocd (daemon/pmallocd/violation.c)
 * write alike.  Compiled into both; async-signal-safe, no allocation.
 */
#ifndef PMALLOC_VIOLATION_FMT_H
#define PMALLOC_VIOLATION_FMT_H

#include "fmt.h"
#include "wire.h"

/* What the writer of the entry knows better than the record (pmallocd:
 * the kernel's pid and exe, its registry's generation, the symbols it
 * resolved).  Strings are already escaped; a NULL one is the record's
 * (escaped here). */
struct violation_shown {
	int pid;                        /* the MESSAGE's PID */
	uint64_t generation;            /* PMALLOC_GENERATION */
	const char *exe;                /* PMALLOC_EXE and the MESSAGE's; NULL: the record's */
	const char *object_site;        /* PMALLOC_OBJECT_SITE */
	const char *object_site_short;  /* the MESSAGE's "allocated at"; NULL: object_site's */
	const char *fault_symbol;       /* PMALLOC_FAULT_SYMBOL and the MESSAGE's "in" */
	const char *backtrace;          /* PMALLOC_BACKTRACE; NULL: the record's frames as module+0xoffset */
};

/* The entry's PRIORITY: 2 (crit) in enforce mode, 4 (warning) in audit. */
int violation_priority(const struct pmw_report *r);
/* The stderr line after its "pmalloc[PID]: ", newline included:
 *   write to protected pool "P" at 0xA: offset O in S-byte object 0xB
 *   allocated at SITE; ip 0xI (module+0xoff)[ by the kernel in CALL(2)];
 *   policy "Q"; audit: write allowed | enforce: killed by SIGSEGV
 * frames[0] must be resolved (its module) for the ip's location. */
void violation_fmt_line(struct fmt *f, const struct pmw_report *r);
/* The violation entry's fields but MESSAGE_ID, PRIORITY, SYSLOG_IDENTIFIER,
 * OBJECT_PID and what only the writer knows (comm, unit, uid...):
 * "KEY=value\n" each, MESSAGE first, every value escaped (a line is a
 * field). */
void violation_fmt_fields(struct fmt *f, const struct pmw_report *r, const struct violation_shown *s);
/* Frame fr of r as "module+0xoffset" (the module's base name), or "0xip". */
void violation_fmt_frame(struct fmt *f, const struct pmw_report *r, const struct pmw_frame *fr);

#endif
