/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * strbuf.h - text built piece by piece into a buffer with a hard cap.
 * Past the cap, further text is dropped and the buffer says so once.
 */
#ifndef PMALLOCD_STRBUF_H
#define PMALLOCD_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
	char *buf;
	size_t len;          /* excluding the NUL */
	size_t alloc;
	size_t cap;          /* the most text kept, NUL excluded */
	bool full;
	bool oom;
	bool owned;          /* buf is malloc'ed and grows up to cap */
};

/* Over caller storage (fixed, cap = size - 1). */
void strbuf_init_fixed(struct strbuf *b, char *storage, size_t size);
/* Growable, up to cap bytes; free with strbuf_done(). */
void strbuf_init_alloc(struct strbuf *b, size_t cap);
void strbuf_done(struct strbuf *b);

void strbuf_printf(struct strbuf *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
void strbuf_puts(struct strbuf *b, const char *s);

/* Copy src into dst (size n), cut to fit (at a UTF-8 character boundary),
 * always NUL-terminated. */
void str_copy(char *dst, size_t n, const char *src);

/* The text so far ("" when empty); valid until the next append. */
const char *strbuf_str(const struct strbuf *b);

#endif
