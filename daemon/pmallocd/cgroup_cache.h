/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup_cache.h - cgroup paths by the kernel's id of the cgroup, so that
 * identifying a client need not read /proc/PID/cgroup every time.
 */
#ifndef PMALLOCD_CGROUP_CACHE_H
#define PMALLOCD_CGROUP_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CGROUP_CACHE 64                  /* entries, direct-mapped by id */
#define CGROUP_CACHE_PATH 256            /* longer paths are not kept */

/* Which hierarchy is systemd's, as systemd itself finds out (statfs of
 * /sys/fs/cgroup, then of its unified/ and systemd/): call once, before
 * threads and the sandbox. */
void cgroup_cache_init(void);
/* True when the unified hierarchy is systemd's (pure cgroup v2, or a
 * hybrid layout): its path is the one to report, and an id names it.
 * False on legacy layouts, or when /sys/fs/cgroup says nothing. */
bool cgroup_cache_by_id(void);

/* Copy the path kept for id into ret (size bytes): true, or false when
 * none is kept or it does not fit.  Any thread. */
bool cgroup_cache_get(uint64_t id, char *ret, size_t size);
/* Keep path as that of id (0: no id, ignored), replacing whatever shared
 * its slot.  The caller vouches that the kernel named path as id's
 * unified-hierarchy path (proc_read_cgroup()'s *ret_unified, read between
 * two PIDFD_GET_INFO calls that gave id).  Any thread. */
void cgroup_cache_put(uint64_t id, const char *path);
/* Forget everything (tests). */
void cgroup_cache_clear(void);

#endif
