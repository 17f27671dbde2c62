/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * escape.h - the one escaping of text from untrusted sources (exe paths,
 * comm, symbol and module names from user-owned ELF files, strings in
 * client messages) before it reaches a journal field, a log line or a
 * terminal: used by pmallocd's journal entries and status text and by the
 * shim's own journal entries alike.
 *
 * Escapes, never drops: a reader still sees what was there, but nothing
 * can start a new line or field, move the cursor, switch a terminal mode,
 * reverse the text's direction or hide characters.
 *   '\\'                                 -> "\\\\" (so escapes are unambiguous)
 *   bytes 0x00-0x1f, 0x7f                -> "\xNN"
 *   bytes that are not valid UTF-8       -> "\xNN" each (overlong forms,
 *                                           surrogates, > U+10FFFF included)
 *   C1 controls U+0080-U+009F, bidi and
 *   invisible format characters (U+061C,
 *   U+200B-U+200F, U+2028-U+202E,
 *   U+2060-U+206F, U+FEFF)              -> "\uXXXX"
 *   everything else (printable ASCII, other valid UTF-8) is kept.
 *
 * Header-only (static inline) so the shim and the daemon share it without
 * a second object file.  Async-signal-safe: no allocation, no library call,
 * no state.  The output never ends inside an escape or a UTF-8 sequence.
 */
#ifndef PMALLOC_ESCAPE_H
#define PMALLOC_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (2-4) with its code point in
 * *cp, or 0 when s does not start one. */
static inline size_t escape_utf8_seq(const unsigned char *s, uint32_t *cp)
{
	uint32_t c;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		c = s[0] & 0x1fu;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		c = s[0] & 0x0fu;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		c = s[0] & 0x07u;
	} else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)          /* also stops at the NUL */
			return 0;
		c = (c << 6) | (s[i] & 0x3fu);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;                           /* overlong, out of range, surrogate */
	*cp = c;
	return n;
}

/* A code point that changes how the text around it is shown. */
static inline int escape_is_format_char(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x61c || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) || c == 0xfeff;
}

/* Escape src (NUL-terminated; NULL is "") into dst of size bytes, always
 * NUL-terminated when size > 0.  Returns the length written (without the
 * NUL); what does not fit is cut at a whole character or escape. */
static inline size_t text_escape(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)(src ? src : "");
	size_t len = 0;

	if (size == 0)
		return 0;
	while (*s) {
		char unit[8];
		size_t n = 0, adv = 1;
		uint32_t cp = 0;

		/* Printable ASCII but the backslash, the bulk of paths and
		 * names, is kept: a few instructions a byte, not the ~30 of
		 * the general case (pmallocd escapes every client's exe). */
		if (*s >= 0x20 && *s < 0x7f && *s != '\\') {
			if (len + 2 > size)
				break;
			dst[len++] = (char)*s++;
			continue;
		}
		if (*s == '\\') {
			unit[n++] = '\\';
			unit[n++] = '\\';
		} else if (*s < 0x20 || *s == 0x7f) {
			unit[n++] = '\\';
			unit[n++] = 'x';
			unit[n++] = hex[*s >> 4];
			unit[n++] = hex[*s & 0xf];
		} else if (*s < 0x80) {
			unit[n++] = (char)*s;
		} else if ((adv = escape_utf8_seq(s, &cp)) == 0) {
			adv = 1;
			unit[n++] = '\\';
			unit[n++] = 'x';
			unit[n++] = hex[*s >> 4];
			unit[n++] = hex[*s & 0xf];
		} else if (escape_is_format_char(cp)) {
			unit[n++] = '\\';
			unit[n++] = 'u';
			for (int sh = 12; sh >= 0; sh -= 4)
				unit[n++] = hex[(cp >> sh) & 0xf];
		} else {
			for (size_t i = 0; i < adv; i++)
				unit[n++] = (char)s[i];
		}
		if (len + n + 1 > size)
			break;
		for (size_t i = 0; i < n; i++)
			dst[len++] = unit[i];
		s += adv;
	}
	dst[len] = '\0';
	return len;
}

/* Room for the escape of a string of n bytes (NUL included): 4 per byte. */
#define ESCAPED_SIZE(n) (4 * (n) + 1)

#endif
