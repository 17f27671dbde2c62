/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * person.c - the subordinate uid ranges and their owners (see person.h).
 *
 * Owns: reading /etc/subuid (and /etc/passwd for the owners' names), the
 * sorted range table, the look-up.
 * Never: asks NSS (getpwnam() may talk to daemons over sockets the
 * sandbox refuses): names are looked up in the passwd file itself; blocks
 * on anything but reading those two files, at start-up and SIGHUP.
 */
#define _GNU_SOURCE
#include "person.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool parse_uid(const char *s, uid_t *ret)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v >= (uid_t)-1)
		return false;
	*ret = (uid_t)v;
	return true;
}

/* name's uid in the passwd file; false when it has none. */
static bool passwd_uid(const char *passwd_path, const char *name, uid_t *ret)
{
	FILE *f = fopen(passwd_path, "re");
	char *line = NULL;
	size_t cap = 0, len = strlen(name);
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		char *uid, *end;

		if (strncmp(line, name, len) != 0 || line[len] != ':')
			continue;
		uid = strchr(line + len + 1, ':');       /* past the password field */
		if (!uid)
			continue;
		uid++;
		end = strchr(uid, ':');
		if (!end)
			continue;
		*end = '\0';
		found = parse_uid(uid, ret);
	}
	free(line);
	fclose(f);
	return found;
}

static int by_start(const void *a, const void *b)
{
	const struct person_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

int persons_load(struct persons *p, const char *subuid_path, const char *passwd_path, size_t *ret_skipped)
{
	struct person_range *ranges = NULL;
	size_t n = 0, cap = 0, skipped = 0, kept = 0;
	char *line = NULL;
	size_t lcap = 0;
	FILE *f;

	f = fopen(subuid_path, "re");
	if (!f && errno != ENOENT)
		return -errno;
	while (f && getline(&line, &lcap, f) > 0) {
		char *owner = line, *start, *count, *nl;
		struct person_range r;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		start = strchr(owner, ':');
		count = start ? strchr(start + 1, ':') : NULL;
		if (!count) {
			skipped++;
			continue;
		}
		*start++ = '\0';
		*count++ = '\0';
		if (!parse_uid(start, &r.start) || !parse_uid(count, &r.count) || r.count == 0 ||
		    r.start > (uid_t)-2 - r.count ||
		    (!parse_uid(owner, &r.owner) && !passwd_uid(passwd_path, owner, &r.owner))) {
			skipped++;
			continue;
		}
		if (r.owner == 0)
			continue;                /* root's: its uids stay their own */
		if (n == PERSON_RANGES_MAX) {
			skipped++;
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct person_range *nr = realloc(ranges, nc * sizeof(*nr));

			if (!nr) {
				free(ranges);
				free(line);
				fclose(f);
				return -ENOMEM;
			}
			ranges = nr;
			cap = nc;
		}
		ranges[n++] = r;
	}
	free(line);
	if (f)
		fclose(f);
	/* Sorted; a range overlapping the one before it is cut to what is
	 * left (the earlier start wins, whoever's line came first). */
	if (n > 0)
		qsort(ranges, n, sizeof(*ranges), by_start);
	for (size_t i = 0; i < n; i++) {
		if (kept > 0) {
			struct person_range *prev = &ranges[kept - 1];
			uid_t prev_end = prev->start + prev->count;

			if (ranges[i].start < prev_end) {
				uid_t end = ranges[i].start + ranges[i].count;

				if (end <= prev_end)
					continue;
				ranges[i].count = end - prev_end;
				ranges[i].start = prev_end;
			}
		}
		ranges[kept++] = ranges[i];
	}
	persons_free(p);
	p->ranges = ranges;
	p->n = kept;
	if (ret_skipped)
		*ret_skipped = skipped;
	return 0;
}

void persons_free(struct persons *p)
{
	free(p->ranges);
	p->ranges = NULL;
	p->n = 0;
}

uid_t person_of(const struct persons *p, uid_t uid)
{
	size_t lo = 0, hi;

	if (!p)
		return uid;
	hi = p->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct person_range *r = &p->ranges[mid];

		if (uid < r->start)
			hi = mid;
		else if (uid - r->start >= r->count)
			lo = mid + 1;
		else
			return r->owner;
	}
	return uid;
}
