/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup.h - systemd's view of a process, from the text of its
 * /proc/PID/cgroup: the path in systemd's hierarchy, and the unit and slice
 * that path names.  Shared by the shim (its own journal entries) and
 * pmallocd (entries about its clients).
 */
#ifndef PMALLOC_CGROUP_H
#define PMALLOC_CGROUP_H

#include <stddef.h>

/* The path of systemd's hierarchy in text (the contents of a
 * /proc/PID/cgroup, NUL-terminated; its newlines become NULs): the
 * "name=systemd" line's (legacy and hybrid layouts), else the unified
 * "0::" line's; NULL when neither is there.  *ret_unified (unless NULL):
 * the "0::" line's path, NULL when there is none. */
const char *cgroup_systemd_path(char *text, const char **ret_unified);
/* The unit of a path: its first component past the slices
 * ("/system.slice/nginx.service/x" -> "nginx.service"); "" for none or
 * when it does not fit in size. */
void cgroup_unit(const char *path, char *unit, size_t size);
/* The innermost slice above the unit ("-.slice" for none), "" when it does
 * not fit in size. */
void cgroup_slice(const char *path, char *slice, size_t size);

#endif
