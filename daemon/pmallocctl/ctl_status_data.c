/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_status_data.c - the client side of PMW_STATUS_DATA (shim/wire.h):
 * the request, the packet and the memfd it carries, and every record
 * checked before anything reads it.
 *
 * Owns the checks.  Must never trust the answer (whoever listens on the
 * socket path wrote it): the packet's header and size, exactly one
 * descriptor that is a regular file of the announced size (at most
 * PMW_STATUS_DATA_MAX), each record's length and alignment, its counts
 * (at least what its type has) and its strings (NUL-terminated inside
 * it); the first record is the DAEMON one.  Unknown record types are
 * skipped, numbers and strings past those known ignored.
 */
#define _GNU_SOURCE
#include "ctl_status_data.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_client.h"

static const struct {
	uint8_t nums, strs;
} known[] = {
	[PMW_SR_DAEMON] = { PMW_SR_D_N_NUMS, PMW_SR_D_N_STRS },
	[PMW_SR_WARNING] = { PMW_SR_W_N_NUMS, PMW_SR_W_N_STRS },
	[PMW_SR_UNSERVED] = { PMW_SR_U_N_NUMS, PMW_SR_U_N_STRS },
	[PMW_SR_PROCESS] = { PMW_SR_P_N_NUMS, PMW_SR_P_N_STRS },
	[PMW_SR_POOL] = { PMW_SR_O_N_NUMS, PMW_SR_O_N_STRS },
	[PMW_SR_RULE] = { PMW_SR_R_N_NUMS, PMW_SR_R_N_STRS },
	[PMW_SR_SITE] = { PMW_SR_S_N_NUMS, PMW_SR_S_N_STRS },
	[PMW_SR_GENERATION] = { PMW_SR_G_N_NUMS, PMW_SR_G_N_STRS },
};
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

void ctl_status_free(struct ctl_status *st)
{
	if (!st)
		return;
	free(st->data);
	free(st->recs);
	free(st);
}

/* Check data[0, len) and index its records into st. */
static int parse(struct ctl_status *st, size_t len, uint32_t n_records)
{
	const uint8_t *base = (const uint8_t *)st->data, *p = base, *end = base + len;

	st->recs = calloc(n_records ? n_records : 1, sizeof(*st->recs));
	if (!st->recs)
		return -ENOMEM;
	while (p < end) {
		struct pmw_srec h;
		const char *s, *rec_end;
		struct ctl_srec *r;

		if ((size_t)(end - p) < sizeof(h))
			return -EBADMSG;
		memcpy(&h, p, sizeof(h));
		if (h.length < sizeof(h) || h.length % 8 || h.length > (size_t)(end - p) ||
		    sizeof(h) + (size_t)h.n_nums * 8 > h.length || st->n == n_records)
			return -EBADMSG;
		rec_end = (const char *)p + h.length;
		s = (const char *)p + sizeof(h) + (size_t)h.n_nums * 8;
		r = &st->recs[st->n];
		r->type = h.type;
		r->nums = (const uint64_t *)(const void *)(p + sizeof(h));
		for (unsigned int i = 0; i < h.n_strs; i++) {
			const char *nul = memchr(s, '\0', (size_t)(rec_end - s));

			if (!nul)
				return -EBADMSG;
			if (i < CTL_SREC_STRS)
				r->strs[i] = s;
			s = nul + 1;
		}
		p += h.length;
		if (h.type == 0 || h.type >= N_KNOWN)
			continue;                /* a newer pmallocd's: not ours to show */
		if (h.n_nums < known[h.type].nums || h.n_strs < known[h.type].strs)
			return -EBADMSG;
		if ((st->n == 0) != (h.type == PMW_SR_DAEMON))
			return -EBADMSG;
		st->n++;
	}
	return st->n ? 0 : -EBADMSG;
}

/* The memfd of exactly len bytes into st->data. */
static int read_all(int fd, size_t len, struct ctl_status *st)
{
	struct stat sb;
	size_t done = 0;

	if (fstat(fd, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode) || sb.st_size < 0 || (uint64_t)sb.st_size != len)
		return -EBADMSG;
	st->data = malloc(len + 8);
	if (!st->data)
		return -ENOMEM;
	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)st->data + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EBADMSG;
		done += (size_t)n;
	}
	return 0;
}

/* The one descriptor of mh, or -EBADMSG (none, or more than one: all
 * closed). */
static int take_fd(struct msghdr *mh)
{
	int fds[8], n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) && n < 8; i++)
			memcpy(&fds[n++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	if (n == 1)
		return fds[0];
	while (n > 0)
		close(fds[--n]);
	return -EBADMSG;
}

int ctl_status_data_fetch(const char *path, int timeout_ms, const void *req, size_t req_len,
			  struct ctl_status **ret)
{
	struct pmw_status_data m = { 0 };   /* filled by the exchange (cppcheck sees through no recvmsg) */
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} control;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct ctl_status *st;
	ssize_t n;
	int mfd, r;

	n = ctl_exchange(path, timeout_ms, req, req_len, &mh);
	r = n < 0 ? (int)n : 0;
	mfd = n > 0 ? take_fd(&mh) : -EBADMSG;
	if (r == 0 && ((size_t)n < sizeof(m.h) || m.h.magic != PMW_MAGIC))
		r = -EBADMSG;
	else if (r == 0 && m.h.version != PMW_VERSION)
		r = -EPROTONOSUPPORT;
	else if (r == 0 && (m.h.type != PMW_STATUS_DATA || (size_t)n != sizeof(m) || m.h.length != sizeof(m) ||
			    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || m.data_len > PMW_STATUS_DATA_MAX ||
			    mfd < 0))
		r = -EBADMSG;
	st = r == 0 ? calloc(1, sizeof(*st)) : NULL;
	if (r == 0 && !st)
		r = -ENOMEM;
	if (r == 0)
		r = read_all(mfd, m.data_len, st);
	if (r == 0)
		r = parse(st, m.data_len, m.n_records);
	if (mfd >= 0)
		close(mfd);
	if (r < 0) {
		ctl_status_free(st);
		return r;
	}
	*ret = st;
	return 0;
}

size_t ctl_status_children_end(const struct ctl_status *st, size_t i)
{
	size_t k = i + 1;

	while (k < st->n && (st->recs[k].type == PMW_SR_POOL || st->recs[k].type == PMW_SR_RULE ||
			     st->recs[k].type == PMW_SR_SITE || st->recs[k].type == PMW_SR_GENERATION))
		k++;
	return k;
}
