/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_client.h - the transport to pmallocd, and the one-process commands' line and answer (ctl_client.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_CLIENT_H
#define PMALLOC_CTL_CLIENT_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* ctl_client.c: send req (req_len bytes, header filled) to pmallocd at path
 * and read its one PMW_STATUS answer.  0 and *ret_text (malloc'ed,
 * NUL-terminated, not yet escaped), or -errno: -ENOENT/-ECONNREFUSED
 * (nobody listens), -ETIMEDOUT/-ECONNRESET (nobody answers), -EBADMSG
 * (malformed reply), -EPROTONOSUPPORT (another protocol version),
 * -EMSGSIZE (reply too large), -ENAMETOOLONG (path). */
int ctl_request(const char *path, int timeout_ms, const void *req, size_t req_len, char **ret_text);
/* ctl_client.c: a SOCK_SEQPACKET connection to path, every wait bounded by
 * timeout_ms (connect too, when the backlog is full): the descriptor, or
 * -errno (-ETIMEDOUT, -ENAMETOOLONG, -EINVAL for ""). */
int ctl_connect(const char *path, int timeout_ms);
/* ctl_client.c: one request and its one answer on a connection of its own
 * (ctl_connect), into mh (descriptors passed with it stay in its control
 * data, the caller's to take): the answer's length, or -errno as
 * ctl_connect, -ETIMEDOUT, -ECONNRESET (closed without an answer). */
ssize_t ctl_exchange(const char *path, int timeout_ms, const void *req, size_t req_len, struct msghdr *mh);
/* ctl_client.c: the socket: arg (--socket) when given, else PMALLOC_SOCKET,
 * else CTL_DEFAULT_SOCKET. */
const char *ctl_socket_path(const char *arg);
/* ctl_client.c: say on stderr why ctl_request() failed with r; returns the
 * exit status (CTL_EXIT_NOT_RUNNING when no daemon answers). */
int ctl_request_error(const char *path, int r);
/* ctl_client.c: the command line of a command about one process (protect,
 * learn-flush, sites): [--socket PATH] [--help], then exactly n_args
 * words (what args says, e.g. "PID and POOL"), the first a PID.  -1 with
 * *ret_socket (the path to use) and *ret_pid set, else the exit status to
 * return (help given, or a usage error said). */
int ctl_process_args(int argc, char **argv, const char *name, const char *args, int n_args,
		     const char **ret_socket, int32_t *ret_pid);
/* ctl_client.c: pmallocd's answer to such a command ("ok: ..." on stdout,
 * anything else on stderr), freed; the exit status. */
int ctl_put_answer(char *text);

#endif
