/*
 * fmt.h - async-signal-safe formatting into a caller's buffer, for the fault
 * report, debug lines and fatal().  Never allocates; truncates silently.
 */
#ifndef PMALLOC_FMT_H
#define PMALLOC_FMT_H

#include <stddef.h>
#include <stdint.h>

struct fmt {
	char *p, *end, *start;
};

void fmt_init(struct fmt *f, char *buf, size_t size);
void fmt_str(struct fmt *f, const char *s);
void fmt_u64(struct fmt *f, uint64_t v);
void fmt_hex(struct fmt *f, uint64_t v);   /* "0x..." */
size_t fmt_len(const struct fmt *f);
/* NUL-terminate (the buffer keeps one byte for it) and return the start. */
const char *fmt_cstr(struct fmt *f);
/* Write the text to fd 2. */
void fmt_flush_stderr(struct fmt *f);
/* A debug line "pmalloc[PID]: ..." to stderr when pm_debug. */
void debug_line(const char *a, const char *b, const char *c);

#endif
