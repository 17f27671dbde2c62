/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_client.c - pmallocctl's client side of pmallocd: one request and its
 * one PMW_STATUS answer over the SOCK_SEQPACKET socket (wire.h), for every
 * command that asks pmallocd (status, protect, learn-flush, sites); the
 * socket path default, the command line of a command about one process,
 * and the meaning of "not running" (exit 3).
 *
 * Must never trust the reply: whoever listens on the socket path (which
 * PMALLOC_SOCKET or --socket may point anywhere) can send anything, so the
 * header and the text bounds are checked before use and the wait is
 * bounded; the text is escaped before it reaches the terminal.  Never
 * calls a command (ctl_cmd_*): they call it.
 */
#define _GNU_SOURCE                  /* secure_getenv */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_escape.h"
#include "ctl_util.h"
#include "wire.h"

/* Check the packet buf[0, n) is a complete PMW_STATUS with a NUL-terminated
 * text; 0 and *ret_text (a copy), or -errno. */
static int status_parse(const unsigned char *buf, size_t n, char **ret_text)
{
	struct pmw_header h;
	struct pmw_status st;
	char *text;

	if (n < sizeof(h))
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != PMW_MAGIC)
		return -EBADMSG;
	if (h.version != PMW_VERSION)
		return -EPROTONOSUPPORT;
	if (h.type != PMW_STATUS || h.length != n || n < sizeof(st))
		return -EBADMSG;
	memcpy(&st, buf, sizeof(st));
	if (st.text_len == 0 || st.text_len != n - sizeof(st) ||
	    !memchr(buf + sizeof(st), '\0', st.text_len))
		return -EBADMSG;
	text = strdup((const char *)buf + sizeof(st));
	if (!text)
		return -ENOMEM;
	*ret_text = text;
	return 0;
}

int ctl_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	size_t len = strlen(path);
	int fd;

	if (len == 0)
		return -EINVAL;
	if (len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, len + 1);

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* SO_SNDTIMEO also bounds connect() when the listen backlog is full. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		close(fd);
		return r;
	}
	return fd;
}

ssize_t ctl_exchange(const char *path, int timeout_ms, const void *req, size_t req_len, struct msghdr *mh)
{
	ssize_t n;
	int fd, r;

	fd = ctl_connect(path, timeout_ms);
	if (fd < 0)
		return fd;
	n = send(fd, req, req_len, MSG_NOSIGNAL);
	if (n != (ssize_t)req_len) {
		r = n < 0 ? (errno == EAGAIN ? -ETIMEDOUT : -errno) : -EIO;
		close(fd);
		return r;
	}
	do
		n = recvmsg(fd, mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	r = n < 0 ? (errno == EAGAIN ? -ETIMEDOUT : -errno) : n == 0 ? -ECONNRESET : 0;
	close(fd);                       /* descriptors passed with the answer are in mh */
	return r < 0 ? r : n;
}

int ctl_request(const char *path, int timeout_ms, const void *req, size_t req_len, char **ret_text)
{
	unsigned char *buf;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;
	int r;

	buf = malloc(PMW_MAX_MSG);
	if (!buf)
		return -ENOMEM;
	iov.iov_base = buf;
	iov.iov_len = PMW_MAX_MSG;
	n = ctl_exchange(path, timeout_ms, req, req_len, &mh);
	if (n < 0)
		r = (int)n;              /* -ECONNRESET: closed without an answer */
	else if (mh.msg_flags & MSG_TRUNC)
		r = -EMSGSIZE;
	else
		r = status_parse(buf, (size_t)n, ret_text);
	free(buf);
	return r;
}

const char *ctl_socket_path(const char *arg)
{
	const char *env;

	if (arg)
		return arg;
	env = secure_getenv("PMALLOC_SOCKET");
	return env && *env ? env : CTL_DEFAULT_SOCKET;
}

int ctl_request_error(const char *path, int r)
{
	const char *what;
	int ret = CTL_EXIT_FAILURE;

	switch (r) {
	case -ENOENT:
	case -ECONNREFUSED:
		what = "pmallocd is not running";
		ret = CTL_EXIT_NOT_RUNNING;
		break;
	case -ETIMEDOUT:
	case -ECONNRESET:
	case -EPIPE:
		what = "pmallocd is not answering";
		ret = CTL_EXIT_NOT_RUNNING;
		break;
	case -EBADMSG:
	case -EMSGSIZE:
		what = "malformed reply from pmallocd";
		break;
	case -EPROTONOSUPPORT:
		what = "pmallocd speaks another protocol version";
		break;
	default:
		what = "cannot ask pmallocd";
	}
	fprintf(stderr, CTL_NAME ": %s (", what);
	ctl_put_str(stderr, path, 0);
	fprintf(stderr, "): %s\n", strerror(-r));
	return ret;
}

int ctl_process_args(int argc, char **argv, const char *name, const char *args, int n_args,
		     const char **ret_socket, int32_t *ret_pid)
{
	const char *arg = NULL;
	char what[64];
	int ret;

	while (ctl_getopt(argc, argv, name, &ret) == 's')
		arg = optarg;
	if (ret >= 0)
		return ret;
	if (argc - optind != n_args) {
		snprintf(what, sizeof(what), "%s takes %s%s", name, args, argc - optind > n_args ? ", got also" : "");
		return ctl_usage_error(what, argc - optind > n_args ? argv[optind + n_args] : NULL);
	}
	if (ctl_parse_pid(argv[optind], ret_pid) < 0)
		return ctl_usage_error("invalid PID", argv[optind]);
	*ret_socket = ctl_socket_path(arg);
	return -1;
}

int ctl_put_answer(char *text)
{
	int ret = strncmp(text, "ok:", 3) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
	FILE *f = ret == CTL_EXIT_OK ? stdout : stderr;
	const char *say = text;
	size_t len;

	/* pmallocd's "error: REASON" is said as every message of ours is. */
	if (ret != CTL_EXIT_OK) {
		fputs(CTL_NAME ": ", f);
		if (strncmp(say, "error: ", 7) == 0)
			say += 7;
	}
	len = strlen(say);
	ctl_put_text(f, say, len, CTL_ESC_MULTILINE);
	if (len == 0 || say[len - 1] != '\n')
		fputc('\n', f);
	free(text);
	if (fflush(stdout) != 0)
		return CTL_EXIT_FAILURE;
	return ret;
}
