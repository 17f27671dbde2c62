/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_scan.c - the policy file's text before libconfig reads it: the
 * pre-scan for what libconfig would accept silently or mishandle (see
 * policy_scan.h): an integer literal it would wrap, an unterminated
 * comment or string, a string where its grammar has none (libconfig 1.5
 * leaks it), "\x00" in a string (it would cut the string there),
 * @include, nesting deeper than any policy needs.
 *
 * Owns those traps' list and the first one's place in the text.  Never
 * allocates, prints or keeps state: one pass over the text, bounded by
 * its length (the nesting by NEST_MAX).
 */
#include "policy_scan.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* ---- pre-scan: what libconfig would accept silently ---- */

/* A literal libconfig would wrap or saturate: without L it is stored in an
 * int, with L in a long long. */
static bool int_literal_fits(const char *tok, size_t len)
{
	size_t i = 0, n_l = 0;
	bool neg = false, hex = false;
	uint64_t v = 0, limit;
	unsigned int base = 10;

	if (tok[i] == '-' || tok[i] == '+')
		neg = tok[i++] == '-';
	if (i + 1 < len && tok[i] == '0' && (tok[i + 1] == 'x' || tok[i + 1] == 'X')) {
		hex = true;
		base = 16;
		i += 2;
	}
	size_t digits = i;
	bool overflow = false;
	for (; i < len && (hex ? isxdigit((unsigned char)tok[i]) : isdigit((unsigned char)tok[i])); i++) {
		unsigned int d = isdigit((unsigned char)tok[i]) ? (unsigned int)(tok[i] - '0')
			: (unsigned int)(tolower((unsigned char)tok[i]) - 'a' + 10);
		if (v > (UINT64_MAX - d) / base)
			overflow = true;
		else
			v = v * base + d;
	}
	if (i == digits)
		return true;    /* not an integer: libconfig judges it */
	while (i < len && tok[i] == 'L' && n_l < 2) {
		i++;
		n_l++;
	}
	if (i != len)
		return true;    /* a float or garbage: libconfig judges it */
	if (overflow)
		return false;
	limit = n_l ? (uint64_t)INT64_MAX : (uint64_t)INT_MAX;
	/* Negative decimals reach one further; hex literals are never negative. */
	if (neg && !hex)
		limit++;
	return v <= limit;
}

static bool is_name_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '-' || ch == '_' || ch == '*';
}

static int PRINTF_LIKE(7, 8) found(struct finding *f, const char *text, const char *at,
				   const char *end, unsigned int line, unsigned int last_line,
				   const char *fmt, ...)
{
	va_list ap;

	f->off = (size_t)(at - text);
	f->end = end ? (size_t)(end - text) : 0;
	f->line = line;
	f->last_line = last_line;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	return 1;
}

#define NEST_MAX 32

int policy_prescan(const char *text, struct finding *f)
{
	/* Whether a string may come next: after = or :, first in or after a comma
	 * in [ ] and ( ), or right after another string (concatenation). */
	bool value_next = false;
	char nest[NEST_MAX];
	unsigned int line = 1, depth = 0;
	const char *p = text, *start;

	while (*p) {
		unsigned int first = line;

		start = p;
		if (*p == '\n') {
			line++;
			p++;
		} else if (isspace((unsigned char)*p)) {
			p++;
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
				if (*p == '\n')
					line++;
			if (!*p)
				return found(f, text, start, NULL, first, first, "unterminated comment");
			p += 2;
		} else if (*p == '"') {
			bool nul = false;
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1]) {
					nul |= p[1] == 'x' && p[2] == '0' && p[3] == '0';
					p++;
				}
				if (*p == '\n')
					line++;
			}
			if (!*p)
				return found(f, text, start, NULL, first, first, "unterminated string");
			p++;
			/* libconfig names the line where the string ends. */
			if (!value_next)
				return found(f, text, start, p, line, line, "syntax error");
			/* libconfig would cut the string there silently. */
			if (nul)
				return found(f, text, start, p, first, line, "\\x00 in a string");
		} else if (*p == '@') {
			/* The policy must be this one file: what the daemon checks is
			 * what every process gets. */
			return found(f, text, start, p + 1, line, line, "@include is not supported");
		} else if (isalpha((unsigned char)*p) || *p == '*') {
			while (is_name_char(*p))
				p++;
		} else if (isdigit((unsigned char)*p) ||
			   ((*p == '-' || *p == '+' || *p == '.') && isdigit((unsigned char)p[1]))) {
			p++;
			while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' ||
			       ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E')))
				p++;
			if (!int_literal_fits(start, (size_t)(p - start)))
				return found(f, text, start, p, line, line, "integer %.*s out of range%s",
					     (int)(p - start > 40 ? 40 : p - start), start,
					     memchr(start, 'L', (size_t)(p - start)) ? ""
					     : " (a value above 2147483647 needs the suffix L)");
		} else if (*p == '[' || *p == '(' || *p == '{') {
			/* Deeper than any valid policy file goes. */
			if (depth == NEST_MAX)
				return found(f, text, start, p + 1, line, line,
					     "nested deeper than %d levels", NEST_MAX);
			nest[depth++] = *p++;
		} else if (*p == ']' || *p == ')' || *p == '}') {
			depth -= depth > 0;
			p++;
		} else {
			p++;
		}

		if (isspace((unsigned char)*start) || *start == '#' ||
		    (start[0] == '/' && (start[1] == '/' || start[1] == '*')))
			continue;
		value_next = *start == '"' || *start == '=' || *start == ':' || *start == '[' ||
			*start == '(' || (*start == ',' && depth > 0 && nest[depth - 1] != '{');
	}
	return 0;
}
