/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stderr.h - the shim's two error tiers on stderr (stderr.c): fatal() for
 * what must be impossible (exhaustion is NULL + errno, never this), and
 * debug lines under PMALLOC_DEBUG=1.  The shim's only: the programs link
 * no stderr.c, so a program's file that included this would not link.
 */
#ifndef PMALLOC_STDERR_H
#define PMALLOC_STDERR_H

/* Write "pmalloc: fatal error in API: msg" to stderr with write(2) and abort.
 * Async-signal-safe; for broken invariants only, never for exhaustion. */
__attribute__((__noreturn__)) void fatal(const char *api, const char *msg);

/* 1 when PMALLOC_DEBUG=1 (read once at start-up with secure_getenv). */
extern int pm_debug;

/* A debug line (PMALLOC_DEBUG=1), "pmalloc[PID]: ...".  A macro, so that
 * without PMALLOC_DEBUG its arguments are not evaluated either: a
 * strerror() among them, the process's first, loaded the C library's
 * message catalog (12 us of every preloaded start-up with no pmallocd,
 * python3's constructor measured by marks).  No argument may have an
 * effect the program relies on. */
void debug_line(const char *format, ...) __attribute__((format(printf, 1, 2)));
#define debug_printf(...)                               \
	do {                                            \
		if (__builtin_expect(pm_debug, 0))      \
			debug_line(__VA_ARGS__);        \
	} while (0)

#endif
