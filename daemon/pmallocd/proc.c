/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proc.c - the kernel's view of a process, from /proc and socket options.
 *
 * Owns: every /proc read pmallocd makes and the SO_PEERPIDFD probe.
 * Never: trusts message contents, follows a client-given path, keeps a
 * file open past the call, or touches state of its own (no logging, no
 * shared buffers: identify.c's worker thread calls these beside the loop;
 * only proc_boottime_ticks() caches a constant, set before that thread
 * starts, and proc_read_cgroup() asks cgroup_cache.c which hierarchy is
 * systemd's, another).  Reads are bounded and tolerate a process that vanishes
 * mid-read (-ESRCH).
 */
#define _GNU_SOURCE
#include "proc.h"
#include "cgroup.h"
#include "cgroup_cache.h"
#include "escape.h"
#include "strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77                  /* Linux 6.5; glibc 2.36 lacks the name */
#endif

/* PIDFD_GET_INFO (Linux 6.13), its first layout (PIDFD_INFO_SIZE_VER0):
 * the kernel's uapi, which older headers lack.  Later kernels grow the
 * struct at its end and still answer this size. */
struct proc_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid;
	uint32_t ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	uint32_t spare0;
};
#define PROC_PIDFD_INFO_CREDS (1ULL << 1)
#define PROC_PIDFD_INFO_CGROUPID (1ULL << 2)
_Static_assert(sizeof(struct proc_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");

/* ENOENT from /proc/PID/... means the process is gone. */
static int proc_errno(int e)
{
	return e == ENOENT ? -ESRCH : -e;
}

/* "/proc/PID/what" into path (64 bytes), without printf: one is built per
 * hand-out, where snprintf cost ~900 instructions (callgrind). */
static const char *proc_path(char path[64], pid_t pid, const char *what)
{
	char digits[16], *d = digits + sizeof(digits);
	unsigned int v = (unsigned int)pid;
	size_t n = 6, len;

	do
		*--d = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	len = (size_t)(digits + sizeof(digits) - d);
	memcpy(path, "/proc/", n);
	memcpy(path + n, d, len);
	n += len;
	path[n++] = '/';
	len = strlen(what);
	if (len > 64 - 1 - n)
		len = 64 - 1 - n;
	memcpy(path + n, what, len);
	path[n + len] = '\0';
	return path;
}

/* ret_len may be NULL. */
static int read_small(pid_t pid, const char *what, char *buf, size_t size, size_t *ret_len)
{
	char path[64];
	ssize_t n;
	int fd, r = 0;

	fd = open(proc_path(path, pid, what), O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return proc_errno(errno);
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		r = proc_errno(errno);
	else {
		buf[n] = '\0';
		if (ret_len)
			*ret_len = (size_t)n;
	}
	close(fd);
	return r;
}

int proc_read_exe_into(pid_t pid, char *buf, size_t size, bool *ret_deleted)
{
	static const char deleted[] = " (deleted)";
	char path[64];
	bool del = false;
	ssize_t n;
	size_t len;

	n = readlink(proc_path(path, pid, "exe"), buf, size - 1);
	if (n < 0)
		return proc_errno(errno);
	buf[n] = '\0';
	len = (size_t)n;
	if (len > sizeof(deleted) - 1 && strcmp(buf + len - (sizeof(deleted) - 1), deleted) == 0) {
		buf[len - (sizeof(deleted) - 1)] = '\0';
		del = true;
	}
	if (ret_deleted)
		*ret_deleted = del;
	return 0;
}

int proc_read_exe(pid_t pid, char **ret, bool *ret_deleted)
{
	char buf[PATH_MAX];
	char *s;
	int r = proc_read_exe_into(pid, buf, sizeof(buf), ret_deleted);

	if (r < 0)
		return r;
	s = strdup(buf);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

int proc_read_comm(pid_t pid, char ret[PROC_COMM_MAX])
{
	char buf[64];
	size_t len;
	int r;

	r = read_small(pid, "comm", buf, sizeof(buf), &len);
	if (r < 0)
		return r;
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	str_copy(ret, PROC_COMM_MAX, buf);
	return 0;
}

int proc_read_cgroup(pid_t pid, char *ret, size_t size, bool *ret_unified)
{
	char text[4096];
	const char *cg, *unified;
	size_t len = 0;
	int r = read_small(pid, "cgroup", text, sizeof(text), &len);

	if (ret_unified)
		*ret_unified = false;
	if (r < 0)
		return r;
	cg = cgroup_systemd_path(text, &unified);
	/* Where the unified hierarchy is systemd's, its line is the one
	 * systemd reads too (sd_pid_get_unit() on a hybrid layout). */
	if (unified && cgroup_cache_by_id())
		cg = unified;
	if (!cg || !*cg)
		return -ENODATA;
	str_copy(ret, size, cg);
	/* Whole: not cut by ret's size, nor by text's (the unified line
	 * comes last in the file). */
	if (ret_unified)
		*ret_unified = cg == unified && strlen(cg) < size && len < sizeof(text) - 1;
	return 0;
}

/* Fields of /proc/PID/stat: the parent and the start time. */
static int parse_stat(char *buf, pid_t *ret_ppid, uint64_t *ret_starttime)
{
	unsigned long long start;
	char *p, *open;
	int ppid, field;

	/* comm may hold spaces and parentheses: fields resume after the last ')'. */
	open = strchr(buf, '(');
	p = strrchr(buf, ')');
	if (!open || !p || p < open || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -EBADMSG;
	/* starttime is field 22; p + 1 starts at field 3. */
	p++;
	for (field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EBADMSG;
	}
	if (sscanf(p, " %llu", &start) != 1)
		return -EBADMSG;
	if (ret_ppid)
		*ret_ppid = (pid_t)ppid;
	if (ret_starttime)
		*ret_starttime = start;
	return 0;
}

int proc_read_stat(pid_t pid, pid_t *ret_ppid, uint64_t *ret_starttime)
{
	char buf[1024];
	int r = read_small(pid, "stat", buf, sizeof(buf), NULL);

	return r < 0 ? r : parse_stat(buf, ret_ppid, ret_starttime);
}

int proc_read_ids(pid_t pid, uid_t ret_uids[4], gid_t ret_gids[4])
{
	char buf[4096], *p, *q;
	unsigned int u[4], g[4];
	int r = read_small(pid, "status", buf, sizeof(buf), NULL);

	if (r < 0)
		return r;
	p = strstr(buf, "\nUid:");
	q = strstr(buf, "\nGid:");
	if (!p || sscanf(p + 5, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]) != 4 || !q ||
	    sscanf(q + 5, "%u %u %u %u", &g[0], &g[1], &g[2], &g[3]) != 4)
		return -EBADMSG;
	for (int i = 0; i < 4; i++) {
		ret_uids[i] = (uid_t)u[i];
		ret_gids[i] = (gid_t)g[i];
	}
	return 0;
}

int proc_read_euid(pid_t pid, uid_t *ret)
{
	uid_t u[4];
	gid_t g[4];
	int r = proc_read_ids(pid, u, g);

	if (r >= 0)
		*ret = u[1];
	return r;
}

uint64_t proc_boottime_ticks(void)
{
	static long hz;
	struct timespec ts;

	if (hz <= 0)
		hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return 0;
	/* As the kernel's nsec_to_clock_t(): truncated. */
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) / (1000000000ULL / (uint64_t)hz);
}

uint64_t proc_starttime_before(pid_t pid, uint64_t ticks)
{
	uint64_t st;

	if (proc_read_stat(pid, NULL, &st) < 0 || st > ticks)
		return PROC_STARTTIME_NONE;
	return st;
}

bool proc_is_alive(pid_t pid, uint64_t starttime)
{
	uint64_t st;

	if (proc_read_stat(pid, NULL, &st) < 0)
		return false;
	return starttime == 0 || st == starttime;
}

int proc_peer_pidfd(int sockfd)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);

	if (getsockopt(sockfd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		return -errno;
	if (len != sizeof(pidfd) || pidfd < 0)
		return -EBADMSG;
	return pidfd;
}

int proc_pidfd_ids(int pidfd, uid_t ret_uids[4], gid_t ret_gids[4], uint64_t *ret_cgroupid)
{
	struct proc_pidfd_info info = { .mask = PROC_PIDFD_INFO_CREDS | PROC_PIDFD_INFO_CGROUPID };

	if (ioctl(pidfd, PROC_PIDFD_GET_INFO, &info) < 0)
		return errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP ? -EOPNOTSUPP : -errno;
	if (!(info.mask & PROC_PIDFD_INFO_CREDS))
		return -EOPNOTSUPP;
	ret_uids[0] = (uid_t)info.ruid;
	ret_uids[1] = (uid_t)info.euid;
	ret_uids[2] = (uid_t)info.suid;
	ret_uids[3] = (uid_t)info.fsuid;
	ret_gids[0] = (gid_t)info.rgid;
	ret_gids[1] = (gid_t)info.egid;
	ret_gids[2] = (gid_t)info.sgid;
	ret_gids[3] = (gid_t)info.fsgid;
	if (ret_cgroupid)
		*ret_cgroupid = info.mask & PROC_PIDFD_INFO_CGROUPID ? info.cgroupid : 0;
	return 0;
}

int proc_pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int n;

	n = poll(&p, 1, 0);
	if (n < 0)
		return -errno;
	return n > 0 && (p.revents & POLLIN) ? 1 : 0;
}

int proc_for_each(int (*cb)(pid_t pid, void *userdata), void *userdata, unsigned int max)
{
	struct dirent *de;
	unsigned int seen = 0;
	DIR *d;
	int r = 0;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d)) && seen < max) {
		char *end;
		long v;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		errno = 0;
		v = strtol(de->d_name, &end, 10);
		if (errno || *end || v <= 0 || v > INT_MAX)
			continue;
		seen++;
		r = cb((pid_t)v, userdata);
		if (r < 0)
			break;
	}
	closedir(d);
	return r < 0 ? r : 0;
}

static char *escaped_dup(const char *s)
{
	char buf[ESCAPED_SIZE(256)];

	text_escape(buf, sizeof(buf), s);
	return strdup(buf);
}

void proc_object_set(struct proc_object *o, const char *cg)
{
	char name[256];

	if (!cg || !*cg)
		return;
	o->cgroup = escaped_dup(cg);
	cgroup_unit(cg, name, sizeof(name));
	if (name[0])
		o->unit = escaped_dup(name);
	cgroup_slice(cg, name, sizeof(name));
	if (name[0])
		o->slice = escaped_dup(name);
}

void proc_object_free(struct proc_object *o)
{
	free(o->unit);
	free(o->slice);
	free(o->cgroup);
	*o = (struct proc_object){ 0 };
}
