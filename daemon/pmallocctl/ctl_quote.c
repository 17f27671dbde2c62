/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_quote.c - the one way a value reaches the text of a policy file that
 * pmallocctl writes (learn, propose): as a libconfig string literal.
 *
 * Owns the quoting rule.  Every value written into generated policy text,
 * in a setting or in a comment, goes through ctl_conf_quote(): journal
 * values are written by the processes that learned, and a quote, brace,
 * semicolon or newline in them must never end the string, the comment or
 * the policy it stands in.  Must never drop or reorder bytes: each byte is
 * written as it is or as an escape libconfig reads back to the same byte.
 */
#include <stdbool.h>
#include <string.h>

#include "ctl_quote.h"

void ctl_conf_quote(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\f': fputs("\\f", f); break;
		default:
			/* Control bytes and DEL as \xNN (libconfig reads them back);
			 * bytes from 0x80 on are kept, libconfig takes them as they are. */
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\x%02x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

bool ctl_conf_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 255)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

bool ctl_conf_ident(const char *s, char *out, size_t len)
{
	size_t i = 0;
	bool same = true;

	for (; s[i] && i + 1 < len && i < 63; i++) {
		bool ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
			  (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-';
		out[i] = ok ? s[i] : '_';
		same &= ok;
	}
	out[i] = '\0';
	return same && i > 0 && !s[i];
}
