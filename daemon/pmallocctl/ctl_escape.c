/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_escape.c - turns bytes from untrusted places (journal fields anyone
 * can write, policy files, the status text, command-line words) into output
 * that cannot act on a terminal or break a JSON line.
 *
 * Owns the one UTF-8 decoder of pmallocctl and the list of characters that
 * are escaped.  Must never drop or reorder input bytes silently: every byte
 * is either written as it is (printable UTF-8) or as an escape that names it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_escape.h"
#include "escape.h"

/* The length of the well-formed UTF-8 sequence at s (n > 0 bytes left) and
 * its code point, or 0 when s does not start one (stray continuation byte,
 * overlong form, surrogate, beyond U+10FFFF, cut short). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *ret_cp)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80) {
		*ret_cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1fu;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0fu;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07u;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
		return 0;
	if (len == 4 && (cp < 0x10000 || cp > 0x10ffff))
		return 0;
	*ret_cp = cp;
	return len;
}

/* Characters that move the cursor, change the terminal's state, reorder
 * text or hide in it: C0, DEL, C1, the bidirectional controls and marks
 * (which can make a path read as another), line and paragraph separators. */
static bool unsafe_char(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c ||
	       cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

void ctl_put_text(FILE *f, const char *s, size_t n, unsigned int flags)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = utf8_decode(p + i, n - i, &cp);

		if (len == 0) {
			fprintf(f, "\\x%02x", p[i]);
			i++;
			continue;
		}
		if (cp == '\\' && (flags & CTL_ESC_ESCAPED)) {
			fputc('\\', f);
		} else if (cp == '\\') {
			fputs("\\\\", f);
		} else if ((cp == '\n' || cp == '\t') && (flags & CTL_ESC_MULTILINE)) {
			fputc((int)cp, f);
		} else if (cp == '\n') {
			fputs("\\n", f);
		} else if (cp == '\t') {
			fputs("\\t", f);
		} else if (cp == '\r') {
			fputs("\\r", f);
		} else if (unsafe_char(cp)) {
			if (cp < 0x80)
				fprintf(f, "\\x%02x", (unsigned int)cp);
			else
				fprintf(f, "\\u%04x", (unsigned int)cp);
		} else {
			fwrite(p + i, 1, len, f);
		}
		i += len;
	}
}

void ctl_put_str(FILE *f, const char *s, unsigned int flags)
{
	ctl_put_text(f, s, strlen(s), flags);
}

int ctl_escape(const char *s, size_t n, unsigned int flags, char **ret)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return -ENOMEM;
	ctl_put_text(f, s, n, flags);
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return -ENOMEM;
	}
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}

size_t ctl_text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static bool json_string_ok(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = utf8_decode(p + i, n - i, &cp);

		if (len == 0 || cp == 0)
			return false;
		i += len;
	}
	return true;
}

void ctl_put_json(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!json_string_ok(p, n)) {
		fputc('[', f);
		for (size_t i = 0; i < n; i++)
			fprintf(f, i ? ",%u" : "%u", p[i]);
		fputc(']', f);
		return;
	}
	fputc('"', f);
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = utf8_decode(p + i, n - i, &cp);

		switch (cp) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (unsafe_char(cp))
				fprintf(f, "\\u%04x", (unsigned int)cp);
			else
				fwrite(p + i, 1, len, f);
		}
		i += len;
	}
	fputc('"', f);
}
