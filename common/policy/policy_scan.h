/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_scan.h - the pre-scan of a policy file's text (policy_scan.c), for
 * policy_load.c, which refuses what it finds before libconfig sees it.
 */
#ifndef PMALLOC_POLICY_SCAN_H
#define PMALLOC_POLICY_SCAN_H

#include <stddef.h>

/* What the pre-scan found: the token [off, end) (end 0: it runs to the end
 * of the text), the line to report and the line of its last byte, and what
 * to say unless libconfig meets an earlier error. */
struct finding {
	size_t off, end;
	unsigned int line, last_line;
	char msg[96];
};

/* 0 when text holds none of the traps, 1 and *f for the first one.
 *
 * It follows libconfig's tokens (comments, strings, names, numbers) and just
 * enough of its grammar to know where a string may stand: libconfig 1.5
 * leaks the string's buffer when a string is its first syntax error, so such
 * a text must never reach it whole. */
int policy_prescan(const char *text, struct finding *f);

#endif
