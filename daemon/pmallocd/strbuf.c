/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * strbuf.c - bounded text buffers for entries and status text.
 *
 * Owns: nothing global.  Never: exceeds cap, or fails loudly (out of
 * memory and overflow only mark the buffer; the text so far stays valid).
 */
#define _GNU_SOURCE
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init_fixed(struct strbuf *b, char *storage, size_t size)
{
	memset(b, 0, sizeof(*b));
	b->buf = storage;
	b->alloc = size;
	b->cap = size ? size - 1 : 0;
	if (size)
		storage[0] = '\0';
}

void strbuf_init_alloc(struct strbuf *b, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->cap = cap;
	b->owned = true;
}

void strbuf_done(struct strbuf *b)
{
	if (b->owned)
		free(b->buf);
	memset(b, 0, sizeof(*b));
}

/* Bytes that can still be appended (NUL excluded), within cap and the
 * storage; an owned buffer first grows toward len + need. */
static size_t strbuf_room(struct strbuf *b, size_t need)
{
	size_t want, limit;
	char *p;

	if (b->owned && b->len + need + 1 > b->alloc && b->alloc < b->cap + 1) {
		want = b->alloc ? b->alloc : 256;
		while (want < b->len + need + 1 && want < b->cap + 1)
			want *= 2;
		if (want > b->cap + 1)
			want = b->cap + 1;
		p = realloc(b->buf, want);
		if (!p)
			b->oom = true;
		else {
			if (b->alloc == 0)
				p[0] = '\0';
			b->buf = p;
			b->alloc = want;
		}
	}
	if (b->alloc == 0)
		return 0;
	limit = b->cap + 1 < b->alloc ? b->cap + 1 : b->alloc;
	return limit > b->len + 1 ? limit - b->len - 1 : 0;
}

void strbuf_printf(struct strbuf *b, const char *format, ...)
{
	va_list ap;
	size_t room;
	int n;

	if (b->full)
		return;
	va_start(ap, format);
	n = vsnprintf(NULL, 0, format, ap);
	va_end(ap);
	if (n < 0)
		return;
	room = strbuf_room(b, (size_t)n);
	if (room == 0 && b->alloc == 0) {
		b->full = true;
		return;
	}
	va_start(ap, format);
	vsnprintf(b->buf + b->len, room + 1, format, ap);
	va_end(ap);
	if ((size_t)n > room) {
		b->len += room;
		b->full = true;
	} else
		b->len += (size_t)n;
}

void strbuf_puts(struct strbuf *b, const char *s)
{
	strbuf_printf(b, "%s", s);
}

const char *strbuf_str(const struct strbuf *b)
{
	return b->buf ? b->buf : "";
}

void str_copy(char *dst, size_t n, const char *src)
{
	size_t len;

	if (n == 0)
		return;
	len = strnlen(src, n - 1);
	/* Cut before a UTF-8 character, never inside one. */
	while (len > 0 && src[len] && ((unsigned char)src[len] & 0xc0) == 0x80)
		len--;
	memcpy(dst, src, len);
	dst[len] = '\0';
}
