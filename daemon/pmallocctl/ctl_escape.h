/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_escape.h - making hostile bytes harmless on output (ctl_escape.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_ESCAPE_H
#define PMALLOC_CTL_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* ctl_escape.c: making hostile bytes harmless on output. */
#define CTL_ESC_MULTILINE 0x1u               /* keep '\n' and '\t' as they are */
/* pmallocd's strings, escaped by pmallocd already: a backslash passes as
 * is (else "\x0a" would show as "\\x0a"); raw bytes are still escaped. */
#define CTL_ESC_ESCAPED 0x2u
/* Write s[0, n) to f so that none of it can act on a terminal: control
 * characters (C0, DEL, C1), bidirectional overrides, line separators,
 * backslash and bytes that are not UTF-8 become \n, \t, \\, \xHH or \uHHHH. */
void ctl_put_text(FILE *f, const char *s, size_t n, unsigned int flags);
/* As ctl_put_text() for a NUL-terminated string. */
void ctl_put_str(FILE *f, const char *s, unsigned int flags);
/* The same into a new string: 0 and *ret (malloc'ed), or -ENOMEM. */
int ctl_escape(const char *s, size_t n, unsigned int flags, char **ret);
/* Columns s takes on a terminal, counted in code points (s is escaped). */
size_t ctl_text_width(const char *s);
/* A JSON value for s[0, n): a string when s is UTF-8 without NUL (every
 * control and invisible character \u-escaped), otherwise an array of the byte
 * values, as journalctl -o json writes such fields. */
void ctl_put_json(FILE *f, const char *s, size_t n);

#endif
