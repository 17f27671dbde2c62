/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_root.c - files of a system root (--root DIR, or /) opened, created
 * and removed strictly beneath that root.
 *
 * Owns every path look-up pmallocctl makes inside a root that someone else
 * may own (an image tree, a container): each one goes through openat2(2)
 * with RESOLVE_IN_ROOT, so a symbolic link, absolute or relative, and ".."
 * resolve as if DIR were "/" and never leave it; magic links (/proc/PID/fd)
 * are refused.  Directories are created one component at a time below a
 * descriptor so resolved; files are created with O_EXCL|O_NOFOLLOW and
 * replaced or removed by name in such a directory (renameat, unlinkat),
 * which act on the link itself, never on what it points to.  Never falls
 * back to plain path walks: a kernel without openat2 (before 5.6) gets
 * -ENOSYS, and the caller refuses.  Never prints.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctl_root.h"

/* DIR itself is opened without following any link on its way (a user's
 * "DIR -> /" would make root write the host's own files) and must belong
 * to root or to the caller: a tree someone else owns can be swapped under
 * us between the check and the use only inside itself, where every look-up
 * below resolves beneath it anyway.  -ELOOP: DIR is or passes through a
 * link; -EPERM: another user's. */
int ctl_root_open(const char *dir, int *ret_fd)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	long fd;

	fd = syscall(SYS_openat2, AT_FDCWD, dir[0] ? dir : "/", &how, sizeof(how));
	if (fd < 0)
		return -errno;
	if (fstat((int)fd, &st) < 0) {
		int r = -errno;

		close((int)fd);
		return r;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		close((int)fd);
		return -EPERM;
	}
	*ret_fd = (int)fd;
	return 0;
}

int ctl_root_openat(int root_fd, const char *path, int flags, mode_t mode, int *ret_fd)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	while (*path == '/')
		path++;
	fd = syscall(SYS_openat2, root_fd, *path ? path : ".", &how, sizeof(how));
	if (fd < 0)
		return -errno;
	*ret_fd = (int)fd;
	return 0;
}

int ctl_root_mkdirs(int root_fd, const char *path, int *ret_fd)
{
	char *copy = strdup(path), *prefix = calloc(1, strlen(path) + 2), *save = NULL;
	int fd = -1, r = -ENOMEM;

	if (!copy || !prefix)
		goto out;
	r = ctl_root_openat(root_fd, "", O_PATH | O_DIRECTORY, 0, &fd);
	/* fd is the directory of the prefix so far.  Each prefix is looked up
	 * from the root again: a component that the owner of the tree swaps
	 * for a link between our mkdirat and our open still resolves beneath
	 * the root. */
	for (char *comp = strtok_r(copy, "/", &save); r == 0 && comp;
	     comp = strtok_r(NULL, "/", &save)) {
		int next;

		strcat(strcat(prefix, "/"), comp);
		r = ctl_root_openat(root_fd, prefix, O_PATH | O_DIRECTORY, 0, &next);
		if (r == -ENOENT) {
			r = mkdirat(fd, comp, 0755) < 0 && errno != EEXIST ? -errno : 0;
			if (r == 0)
				r = ctl_root_openat(root_fd, prefix, O_PATH | O_DIRECTORY, 0, &next);
		}
		if (r == 0) {
			close(fd);
			fd = next;
		}
	}
	if (r == 0) {
		*ret_fd = fd;
		fd = -1;
	}
out:
	if (fd >= 0)
		close(fd);
	free(copy);
	free(prefix);
	return r;
}

int ctl_root_fopen(int root_fd, const char *path, FILE **ret)
{
	FILE *f;
	int fd, r = ctl_root_openat(root_fd, path, O_RDONLY | O_NOCTTY, 0, &fd);

	if (r < 0)
		return r;
	f = fdopen(fd, "re");
	if (!f) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret = f;
	return 0;
}
