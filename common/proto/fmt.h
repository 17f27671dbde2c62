/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fmt.h - text built into a caller's buffer (struct fmt), and the shim's
 * lines on stderr.
 *
 * The builder (fmt.c) is shared by the shim and pmallocd: async-signal-
 * safe (no allocation, no library call, no state), it truncates silently.
 * The stderr side (stderr.c, shim only) writes "pmalloc[PID]: ..." lines
 * with write(2), never through a stdio stream of the program's.
 */
#ifndef PMALLOC_FMT_H
#define PMALLOC_FMT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fmt {
	char *p, *end, *start;
};

void fmt_init(struct fmt *f, char *buf, size_t size);
/* s as it is: text that is ours, or already escaped. */
void fmt_str(struct fmt *f, const char *s);
/* s escaped as escape.h does (control bytes, invalid UTF-8, bidi and
 * invisible characters): names from files or policies users wrote, so a
 * line stays one line and shows what was there. */
void fmt_escaped(struct fmt *f, const char *s);
void fmt_hex(struct fmt *f, uint64_t v);   /* "0x..." */
/* A printf subset, async-signal-safe: %s (ESCAPED, as fmt_escaped: every
 * string argument is), %d, %u, %x with the l, ll and z sizes (PRIu64 and
 * PRIx64 included), and %%.  No width, no precision; anything else is
 * written as '?'.  The compiler checks the arguments as for printf. */
void fmt_printf(struct fmt *f, const char *format, ...) __attribute__((format(printf, 2, 3)));
size_t fmt_len(const struct fmt *f);
/* NUL-terminate (the buffer keeps one byte for it) and return the start. */
const char *fmt_cstr(struct fmt *f);

/* ---- stderr.c (the shim only) ---- */

/* "pmalloc[PID]: ", the start of every line the shim writes on stderr. */
void fmt_line_start(struct fmt *f);
/* Write the text to fd 2. */
void fmt_flush_stderr(struct fmt *f);
/* A line on stderr, "pmalloc[PID]: " (with_pid) or "pmalloc: " first;
 * printf formatting: normal context only, never a signal handler. */
void fmt_vline(bool with_pid, const char *format, va_list ap);

#endif
