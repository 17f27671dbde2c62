/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_learned.c - the fields of a learn-mode journal entry as pmallocctl
 * reads them (propose and sites).  Owns only the reading of fields (one,
 * or several in one walk) of the entry the journal is at; never moves the
 * journal or interprets a value beyond its number.
 */
#define _GNU_SOURCE
#include "ctl_learned.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>

char *ctl_learned_field(sd_journal *j, const char *name)
{
	const void *d;
	size_t len, nl = strlen(name);
	if (sd_journal_get_data(j, name, &d, &len) < 0 || len <= nl)
		return strdup("");
	return strndup((const char *)d + nl + 1, len - nl - 1);
}

uint64_t ctl_learned_num(const char *v)
{
	char *end = NULL;
	errno = 0;
	uint64_t n = v && v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
	if (!end || *end || errno)
		n = 0;
	return n;
}

uint64_t ctl_learned_u64(sd_journal *j, const char *name)
{
	char *v = ctl_learned_field(j, name);
	uint64_t n = ctl_learned_num(v);
	free(v);
	return n;
}

int ctl_learned_fields(sd_journal *j, const char *const *names, size_t n, char **vals)
{
	const void *d;
	size_t len;
	int r;
	for (size_t k = 0; k < n; k++)
		vals[k] = NULL;
	/* One walk over the entry's fields: sd_journal_get_data() walks them
	 * for each name, and decompresses each compressed field it passes. */
	sd_journal_restart_data(j);
	while ((r = sd_journal_enumerate_data(j, &d, &len)) > 0) {
		const char *p = d, *eq = memchr(p, '=', len);
		if (!eq)
			continue;
		size_t nl = (size_t)(eq - p);
		for (size_t k = 0; k < n; k++)
			if (!vals[k] && strlen(names[k]) == nl && memcmp(names[k], p, nl) == 0) {
				if (!(vals[k] = strndup(eq + 1, len - nl - 1)))
					r = -ENOMEM;
				break;
			}
		if (r < 0)
			break;
	}
	for (size_t k = 0; k < n && r >= 0; k++)
		if (!vals[k] && !(vals[k] = strdup("")))
			r = -ENOMEM;
	if (r < 0) {
		for (size_t k = 0; k < n; k++) {
			free(vals[k]);
			vals[k] = NULL;
		}
		return r;
	}
	return 0;
}
