/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * role.h - the names of process roles, shared by the shim (life.c, which
 * computes a process's role), the policy model (a pool's roles) and the
 * daemon and pmallocctl (entries, status, proposals).  A role is a
 * process's place among the processes of one executable since exec:
 * "main" for the one that exec'd, "child" for one forked from it,
 * "child.child" below that; deeper ones are the deepest name's.
 * Owns nothing else; no state.
 */
#ifndef PMALLOC_ROLE_H
#define PMALLOC_ROLE_H

#include <stdint.h>
#include <string.h>

#define ROLE_DEPTH_MAX 3                 /* "child.child.child" and below */
#define ROLE_NAME_MAX 24                 /* the longest name and its NUL */
/* A set of roles: bit d for the role at depth d; 0 in a policy: every role. */
#define ROLE_MASK_ALL ((1u << (ROLE_DEPTH_MAX + 1)) - 1)

static inline const char *role_name(unsigned int depth)
{
	static const char *const names[ROLE_DEPTH_MAX + 1] = {
		"main", "child", "child.child", "child.child.child",
	};
	return names[depth > ROLE_DEPTH_MAX ? ROLE_DEPTH_MAX : depth];
}

/* The depth of role name, -1 when it is none. */
static inline int role_depth(const char *name)
{
	for (unsigned int d = 0; d <= ROLE_DEPTH_MAX; d++)
		if (strcmp(name, role_name(d)) == 0)
			return (int)d;
	return -1;
}

#endif
