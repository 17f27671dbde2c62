/*
 * report.h - what a violation report holds, and where it goes: one line on
 * stderr always; pmallocd or the journal when the process has them.
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
	uintptr_t ip;                 /* faulting instruction */
	int n_frames;                 /* frames[0] == ip */
	uintptr_t frames[16];
};

/* Report v on stderr and to the daemon or journal. */
void report_violation(const struct violation *v);
/* Where the report may also go (set by the client at start-up; AS-safe). */
extern void (*report_send_hook)(const struct violation *v);
/* The program's path, read at start-up (read-only memory): reports name
 * the program by it, never by argv[0], which setproctitle() rewrites. */
extern const char *report_program;

/* "module+0xoffset" of address a into f (AS-safe, via _dl_find_object). */
struct fmt;
void report_fmt_location(struct fmt *f, uintptr_t a);

#endif
