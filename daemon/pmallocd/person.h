/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * person.h - who a uid belongs to, for the per-user budgets (budget.h):
 * budgets are per person, not per kernel uid.  A uid inside a subordinate
 * range of /etc/subuid (what newuidmap(1) maps a user namespace onto)
 * counts as the user who owns the range, unless root owns it (root's
 * containers' uids stay users of their own).  (A setuid program counts as
 * the user who started it, its real uid: server.c, once identified.)
 */
#ifndef PMALLOCD_PERSON_H
#define PMALLOCD_PERSON_H

#include <stddef.h>
#include <sys/types.h>

#define PERSON_SUBUID_FILE "/etc/subuid"
#define PERSON_PASSWD_FILE "/etc/passwd"
#define PERSON_RANGES_MAX 65536          /* ranges read; more are ignored (and said) */

struct person_range {
	uid_t start;
	uid_t count;
	uid_t owner;
};

struct persons {
	struct person_range *ranges;     /* sorted by start, not overlapping */
	size_t n;
};

/* Read the ranges of subuid_path (lines "OWNER:START:COUNT", OWNER a user
 * name of passwd_path or a number), replacing p's on success.  A missing
 * file is no ranges; a malformed line is skipped (*ret_skipped counts
 * them).  0 or -errno (p unchanged). */
int persons_load(struct persons *p, const char *subuid_path, const char *passwd_path, size_t *ret_skipped);
void persons_free(struct persons *p);
/* The person uid counts as: the owner of its range, else itself.  O(log n). */
uid_t person_of(const struct persons *p, uid_t uid);

#endif
