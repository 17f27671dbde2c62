/*
 * report.h - what a violation report holds, and where it goes: one line on
 * stderr (rate-limited per faulting instruction, the rest counted and
 * summarised); pmallocd or the journal when the process has them.
 * Everything here is async-signal-safe: it runs in the fault handler.
 */
#ifndef PMALLOC_REPORT_H
#define PMALLOC_REPORT_H

#include "common.h"

struct violation {
	const char *pool;             /* never NULL */
	const char *policy;           /* "" outside a policy */
	int audit;                    /* 1: the write is let through */
	uintptr_t address;
	uintptr_t object;             /* 0 when no object contains address */
	size_t object_size;
	uintptr_t site_ra;            /* return address that allocated the object, 0 unknown */
	const char *site_symbol;      /* its symbol+offset when the shim knows it, else NULL */
	uintptr_t ip;                 /* faulting instruction; the caller of kernel_call; 0 unknown */
	const char *kernel_call;      /* "read", ...: the kernel wrote, in that call; else NULL */
	int other_thread;             /* 1: found changed after another audited write's window */
	int n_frames;                 /* frames[0] == ip */
	uintptr_t frames[16];
};

/* v cleared, then the pool, policy, address and (when hit is in an
 * object) the object's start and size, from a pool_lookup() hit. */
struct pool_hit;
void violation_from_hit(struct violation *v, const struct pool_hit *hit, uintptr_t address);

/* Report v: the stderr line first, then enrich(v, arg) (a stack walk that
 * may fault: it must guard itself), then the daemon or journal.  Reports
 * are serialised, so concurrent ones wait rather than being lost; a report
 * nested in another on the same thread is written to stderr and counted.
 * enrich may be NULL. */
void report_violation(struct violation *v, void (*enrich)(struct violation *v, void *arg), void *arg);
/* Where the report may also go (set by the client at start-up; AS-safe). */
extern void (*report_send_hook)(const struct violation *v);
/* The program's path, read at start-up (read-only memory): reports name
 * the program by it, never by argv[0], which setproctitle() rewrites. */
extern const char *report_program;
/* Install the fork handler and exit summary (once; normal context). */
void report_init(void);

/* "module+0xoffset" of address a into f (AS-safe, via _dl_find_object). */
struct fmt;
void report_fmt_location(struct fmt *f, uintptr_t a);

#endif
