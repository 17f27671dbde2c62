/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listen.h - pmallocd's listening socket (SOCK_SEQPACKET, SO_PASSCRED).
 */
#ifndef PMALLOCD_LISTEN_H
#define PMALLOCD_LISTEN_H

/* Bind and listen at path (absolute): mode 0666, a stale socket replaced.
 * 0 and *ret_fd (non-blocking), or -errno, logged. */
int listen_bind(const char *path, int *ret_fd);
/* Check and prepare a socket passed by systemd; *ret_path is its path
 * (malloc'ed) or NULL.  0 or -errno, logged. */
int listen_adopt(int fd, char **ret_path);

#endif
