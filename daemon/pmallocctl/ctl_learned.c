/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_learned.c - the fields of a learn-mode journal entry as pmallocctl
 * reads them (propose and sites).  Owns only the reading of one field of
 * the entry the journal is at; never moves the journal or interprets a
 * value beyond its number.
 */
#define _GNU_SOURCE
#include "ctl.h"

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

uint64_t ctl_learned_u64(sd_journal *j, const char *name)
{
	char *v = ctl_learned_field(j, name);
	char *end = NULL;
	errno = 0;
	uint64_t n = v && v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
	if (!end || *end || errno)
		n = 0;
	free(v);
	return n;
}
