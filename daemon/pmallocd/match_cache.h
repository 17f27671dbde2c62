/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * match_cache.h - which policy an (exe, comm, uid) matched in the policy
 * set in force, remembered, so that the processes of one program are not
 * run through every policy's globs each.
 */
#ifndef PMALLOCD_MATCH_CACHE_H
#define PMALLOCD_MATCH_CACHE_H

#include <sys/types.h>

#include "config.h"

#define MATCH_CACHE 256                  /* entries, direct-mapped by a hash of the inputs */
#define MATCH_CACHE_EXE 256              /* longer exe paths are matched every time */

/* What policy_set_match(c->set, exe, comm, uid) answers, through the
 * cache: the index of the policy in c->set (config_policy_index()) and
 * *ret the policy, or -1 and *ret NULL when none matches (-1 and *ret not
 * NULL: policy_set_match() answered a policy not in c->set).  The event
 * loop's thread only. */
int match_cache_policy(const struct config *c, const char *exe, const char *comm, uid_t uid,
		       const struct policy **ret);
/* Forget everything, and free the table. */
void match_cache_done(void);

#endif
