/*
 * fmt.h - the shim's text on stderr: async-signal-safe formatting into a
 * caller's buffer (struct fmt: the fault report, fatal()), and printf-style
 * lines for normal context (debug_printf).  Never allocates; truncates
 * silently.
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
void fmt_str(struct fmt *f, const char *s);
/* s escaped as escape.h does (control bytes, invalid UTF-8, bidi and
 * invisible characters): names from files or policies users wrote, so a
 * line stays one line and shows what was there.  Async-signal-safe. */
void fmt_escaped(struct fmt *f, const char *s);
void fmt_u64(struct fmt *f, uint64_t v);
void fmt_hex(struct fmt *f, uint64_t v);   /* "0x..." */
/* "pmalloc[PID]: ", the start of every line the shim writes on stderr. */
void fmt_line_start(struct fmt *f);
size_t fmt_len(const struct fmt *f);
/* NUL-terminate (the buffer keeps one byte for it) and return the start. */
const char *fmt_cstr(struct fmt *f);
/* Write the text to fd 2. */
void fmt_flush_stderr(struct fmt *f);
/* A line on stderr, "pmalloc[PID]: " (with_pid) or "pmalloc: " first;
 * printf formatting: normal context only, never a signal handler. */
void fmt_vline(bool with_pid, const char *format, va_list ap);
/* A debug line (PMALLOC_DEBUG=1), "pmalloc[PID]: ...". */
void debug_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
