/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_conf_merge.h - a proposed policy merged into the policy file (ctl_conf_merge.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_CONF_MERGE_H
#define PMALLOC_CTL_CONF_MERGE_H


/* ctl_conf_merge.c: policy (the text of one "{ ... }" element of the
 * policies list) into the policy file path for exe: a new file, or that
 * executable's policy replaced in an existing one (path.bak keeps the old
 * bytes).  Says what it did on stderr, as command cmd; 0 or -errno. */
int ctl_conf_put_policy(const char *path, const char *exe, const char *policy, const char *cmd);

#endif
