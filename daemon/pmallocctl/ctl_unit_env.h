/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_unit_env.h - what a unit's files set in its environment (ctl_unit_env.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_UNIT_ENV_H
#define PMALLOC_CTL_UNIT_ENV_H


/* ctl_unit_env.c: what a unit's files (beneath a root) set in its
 * processes' environment, merged as systemd does. */
struct ctl_unit_env {
	char *fragment;              /* the unit file; NULL when none was found */
	char **vars;                 /* Environment=: "NAME=VALUE", in order */
	size_t n_vars;
	char *preload;               /* LD_PRELOAD's value in the end; NULL: unset */
	char *preload_from;          /* the file that set it */
	char *preload_before;        /* its value before the drop-in "ours" */
	char *preload_before_from;
	char *after;                 /* a file read after "ours" that sets LD_PRELOAD */
	char *blocker;               /* "FILE: why" when LD_PRELOAD is set or unset
				      * past any Environment= (EnvironmentFile=,
				      * UnsetEnvironment=) */
	char *user;                  /* User=; NULL: root */
	_Bool seen_ours, in_ours;    /* while reading */
};
/* Read UNIT's files beneath root_fd; ours is the path of our drop-in (or
 * NULL).  0 and *ret (ctl_unit_env_free() it), or -ENOMEM.  Files that
 * cannot be read add nothing. */
int ctl_unit_env_read(int root_fd, const char *unit, const char *ours, struct ctl_unit_env *ret);
void ctl_unit_env_free(struct ctl_unit_env *env);

#endif
