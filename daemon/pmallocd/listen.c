/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listen.c - the listening socket: made at a path, or taken from systemd.
 *
 * Owns: the socket directory (created 0755 when missing), telling a stale
 * socket (nobody answers: replaced) from a live one (another daemon:
 * refused), mode 0666, SO_PASSCRED, and checking an activation socket.
 * Never: takes over a path that is not a socket, or a socket someone
 * listens on.
 */
#define _GNU_SOURCE
#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "log.h"

static int make_parent_dir(const char *path)
{
	char *copy = strdup(path), *dir;
	struct stat st;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (stat(dir, &st) < 0) {
		if (errno != ENOENT)
			r = -errno;
		else if (mkdir(dir, 0755) < 0) {
			if (errno != EEXIST)
				r = -errno;
		} else if (chmod(dir, 0755) < 0)        /* whatever the umask: clients must get in */
			r = -errno;
		else
			log_info("created %s", dir);
	} else if (!S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	if (r < 0)
		log_error_errno(r, "socket directory %s: %m", dir);
	free(copy);
	return r;
}

/* -ECONNREFUSED: nobody listens at addr (a stale socket); 0: someone does. */
static int probe_socket(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), r = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0)
		r = -errno;
	close(fd);
	return r;
}

int listen_bind(const char *path, int *ret_fd)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int one = 1, fd, r;
	struct stat st;
	mode_t old;

	if (path[0] != '/')
		return log_error_errno(EINVAL, "socket path %s is not absolute", path);
	if (strlen(path) >= sizeof(addr.sun_path))
		return log_error_errno(ENAMETOOLONG, "socket path %s is too long", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);

	r = make_parent_dir(path);
	if (r < 0)
		return r;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(errno, "socket: %m");
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
		r = log_error_errno(errno, "SO_PASSCRED: %m");
		goto fail;
	}

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			r = log_error_errno(EEXIST, "%s exists and is not a socket", path);
			goto fail;
		}
		r = probe_socket(&addr);
		if (r == 0) {
			r = log_error_errno(EADDRINUSE, "%s: another daemon is listening there", path);
			goto fail;
		}
		if (r != -ECONNREFUSED) {
			log_error_errno(r, "%s: cannot tell whether it is stale: %m", path);
			goto fail;
		}
		if (unlink(path) < 0 && errno != ENOENT) {
			r = log_error_errno(errno, "cannot remove stale socket %s: %m", path);
			goto fail;
		}
		log_info("removed stale socket %s", path);
	}

	/* 0666: unprivileged preloaded programs connect; the kernel says who they are. */
	old = umask(0111);
	r = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old);
	if (r < 0) {
		r = log_error_errno(errno, "bind %s: %m", path);
		goto fail;
	}
	if (chmod(path, 0666) < 0) {
		r = log_error_errno(errno, "chmod %s: %m", path);
		goto fail_unlink;
	}
	if (listen(fd, SOMAXCONN) < 0) {
		r = log_error_errno(errno, "listen %s: %m", path);
		goto fail_unlink;
	}
	*ret_fd = fd;
	return 0;
fail_unlink:
	(void)unlink(path);
fail:
	close(fd);
	return r;
}

int listen_adopt(int fd, char **ret_path)
{
	struct sockaddr_un addr;
	socklen_t len = sizeof(addr);
	int one = 1, flags, r;

	r = sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0);
	if (r < 0)
		return log_error_errno(r, "activation socket: %m");
	if (r == 0)
		return log_error_errno(EINVAL, "activation socket is not a listening SOCK_SEQPACKET unix socket");
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
		return log_error_errno(errno, "SO_PASSCRED: %m");
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return log_error_errno(errno, "activation socket: O_NONBLOCK: %m");
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	memset(&addr, 0, sizeof(addr));
	if (getsockname(fd, (struct sockaddr *)&addr, &len) == 0 && addr.sun_path[0])
		*ret_path = strndup(addr.sun_path, sizeof(addr.sun_path));
	else
		*ret_path = NULL;
	return 0;
}
