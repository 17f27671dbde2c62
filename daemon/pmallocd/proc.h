/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proc.h - what the kernel says about a process: /proc reads, the peer's
 * credentials and pidfd.  Nothing here trusts what a client says.
 */
#ifndef PMALLOCD_PROC_H
#define PMALLOCD_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#define PROC_COMM_MAX 16                 /* TASK_COMM_LEN, NUL included */
#define PROC_CGROUP_MAX 4096             /* a cgroup path read, NUL included */

/* readlink /proc/PID/exe; a " (deleted)" suffix (binary replaced since the
 * process started) is cut off and reported in *ret_deleted.  0 and a
 * malloc'ed *ret, or -errno (-ESRCH for a process that is gone). */
int proc_read_exe(pid_t pid, char **ret, bool *ret_deleted);
/* The same into buf (size bytes; PATH_MAX holds any): 0 or -errno. */
int proc_read_exe_into(pid_t pid, char *buf, size_t size, bool *ret_deleted);
/* /proc/PID/comm without its newline. */
int proc_read_comm(pid_t pid, char ret[PROC_COMM_MAX]);
/* The path of systemd's hierarchy in /proc/PID/cgroup, cut to size: the
 * unified ("0::") line's where that hierarchy is systemd's
 * (cgroup_cache_by_id(): pure cgroup v2 and hybrid layouts), else
 * cgroup.h's cgroup_systemd_path() (name=systemd first).  0, -ENODATA
 * (none there) or -errno.  *ret_unified (unless NULL): the path is whole
 * and the unified line's, so PIDFD_GET_INFO's cgroup id names it. */
int proc_read_cgroup(pid_t pid, char *ret, size_t size, bool *ret_unified);
/* ppid and start time (clock ticks since boot) from /proc/PID/stat. */
int proc_read_stat(pid_t pid, pid_t *ret_ppid, uint64_t *ret_starttime);
/* Effective uid from /proc/PID/status (the uid SO_PEERCRED reports). */
int proc_read_euid(pid_t pid, uid_t *ret);
/* The real, effective, saved and filesystem uids and gids, in that order,
 * from /proc/PID/status. */
int proc_read_ids(pid_t pid, uid_t ret_uids[4], gid_t ret_gids[4]);

/* Now on the clock of /proc/PID/stat's start times: CLOCK_BOOTTIME in
 * clock ticks. */
uint64_t proc_boottime_ticks(void);
/* What proc_read_stat() says pid's start time is, provided that is no
 * later than ticks (proc_boottime_ticks() when the kernel vouched pid was
 * the process wanted: a process holding that pid later started after that
 * one was gone); else PROC_STARTTIME_NONE (gone, or a reused pid). */
#define PROC_STARTTIME_NONE UINT64_MAX
uint64_t proc_starttime_before(pid_t pid, uint64_t ticks);

/* True when pid still runs and started at starttime (not a reused pid). */
bool proc_is_alive(pid_t pid, uint64_t starttime);

/* The peer's pidfd (SO_PEERPIDFD), or -errno (-ENOPROTOOPT on kernels
 * without it: optional). */
int proc_peer_pidfd(int sockfd);
/* The ids proc_read_ids() reads, from the kernel's record of the process
 * behind pidfd (PIDFD_GET_INFO: one ioctl, about 1.5 us here, against
 * 25 us for /proc/PID/status): 0, -ESRCH (it was reaped), -EOPNOTSUPP
 * (a kernel before 6.13: read /proc/PID/status instead) or -errno.
 * *ret_cgroupid (unless NULL): the id of its cgroup in the unified
 * hierarchy, 0 when the kernel does not say. */
int proc_pidfd_ids(int pidfd, uid_t ret_uids[4], gid_t ret_gids[4], uint64_t *ret_cgroupid);
/* The request number, for the sandbox's allow-list. */
#define PROC_PIDFD_GET_INFO _IOWR(0xFF, 11, char[64])
/* 1 when the process behind pidfd has exited, 0 when it runs, -errno. */
int proc_pidfd_exited(int pidfd);

/* Call cb for every process in /proc (not threads); stops at the first
 * negative return and passes it on.  max bounds the number visited. */
int proc_for_each(int (*cb)(pid_t pid, void *userdata), void *userdata, unsigned int max);

/* systemd's view of a process (its unit, slice and cgroup), taken when it
 * connected: by report time it may be gone.  Each malloc'ed and escaped
 * (a cgroup name is anyone's who may create one: a delegated subtree);
 * NULL where unknown.  proc.c alone writes it; the journal reads it. */
struct proc_object {
	char *unit, *slice, *cgroup;
};

/* Fill o from a cgroup path read already (proc_read_cgroup()); "" or NULL:
 * none.  What cannot be kept (no memory) stays NULL. */
void proc_object_set(struct proc_object *o, const char *cgroup_path);
void proc_object_free(struct proc_object *o);

#endif
