/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_writer.c - which function of a program wrote, from a violation
 * entry: the first frame of PMALLOC_BACKTRACE in the program itself (the
 * store may be libc's, in a snprintf the program called), else the fault's
 * own symbol.  propose's refine comments and ready's sites say it.  And
 * whether the program's frames are of the build at hand.
 * Reads the entry's text only; never the program's files.
 */
#define _GNU_SOURCE
#include "ctl.h"
#include "ctl_writer.h"

#include <stdio.h>

#include <string.h>

void ctl_audit_writer(const char *backtrace, const char *exe, const char *fault_symbol, char *out, size_t len)
{
	size_t n = strlen(exe);
	/* Frames: "MODULE+0xOFF (SYMBOL) [BUILD-ID]", separated by " < ". */
	for (const char *f = backtrace; f && *f; f = strstr(f, " < ") ? strstr(f, " < ") + 3 : NULL) {
		if (strncmp(f, exe, n) != 0 || strncmp(f + n, "+0x", 3) != 0)
			continue;
		const char *open = strstr(f, " ("), *end = strstr(f, " < ");
		if (!open || (end && open > end))
			continue;
		const char *close = strchr(open, ')');
		if (!close || (end && close > end))
			continue;
		snprintf(out, len, "%.*s", (int)(close - open - 2), open + 2);
		if (fault_symbol[0] && strcmp(out, fault_symbol) != 0) {
			size_t used = strlen(out);
			snprintf(out + used, len - used, " (the store in %s)", fault_symbol);
		}
		return;
	}
	snprintf(out, len, "%s", fault_symbol[0] ? fault_symbol : "(unknown function)");
}

bool ctl_audit_exe_build(const char *backtrace, const char *exe, const char *build_id)
{
	size_t n = strlen(exe), b = strlen(build_id);
	for (const char *f = backtrace; f && *f; f = strstr(f, " < ") ? strstr(f, " < ") + 3 : NULL) {
		if (strncmp(f, exe, n) != 0 || strncmp(f + n, "+0x", 3) != 0)
			continue;
		const char *end = strstr(f, " < "), *open = strchr(f, '[');
		if (!open || (end && open > end))
			continue;
		if (!b || strncmp(open + 1, build_id, b) != 0 || open[1 + b] != ']')
			return false;
	}
	return true;
}
