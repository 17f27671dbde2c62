/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status_data.c - builds the PMW_STATUS_DATA records (shim/wire.h) and the
 * memfd they travel in.
 *
 * Owns the record layout on the sending side.  Never blocks and never
 * grows past PMW_STATUS_DATA_MAX; the memfd is sealed before it leaves,
 * so that what the receiver sizes is what it reads.
 */
#define _GNU_SOURCE                  /* memfd_create, F_ADD_SEALS */
#include "status_data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static_assert(sizeof(struct pmw_srec) == 8, "record header layout");

void status_data_add(struct status_data *d, enum pmw_srec_type type, const uint64_t *nums, size_t n_nums,
		     const char *const *strs, size_t n_strs)
{
	struct pmw_srec h = { .type = (uint16_t)type, .n_nums = (uint8_t)n_nums, .n_strs = (uint8_t)n_strs };
	size_t len = sizeof(h) + n_nums * sizeof(uint64_t), at;

	if (d->full || n_nums > UINT8_MAX || n_strs > UINT8_MAX)
		return;
	for (size_t i = 0; i < n_strs; i++)
		len += (strs[i] ? strlen(strs[i]) : 0) + 1;
	len = (len + 7) & ~(size_t)7;
	if (d->len + len > PMW_STATUS_DATA_MAX) {
		d->full = true;
		return;
	}
	if (d->len + len > d->alloc) {
		size_t alloc = d->alloc ? d->alloc : 16384;
		uint8_t *buf;

		while (alloc < d->len + len)
			alloc *= 2;
		buf = realloc(d->buf, alloc);
		if (!buf) {
			d->full = true;
			return;
		}
		d->buf = buf;
		d->alloc = alloc;
	}
	h.length = (uint32_t)len;
	at = d->len;
	memset(d->buf + at, 0, len);
	memcpy(d->buf + at, &h, sizeof(h));
	at += sizeof(h);
	if (n_nums)
		memcpy(d->buf + at, nums, n_nums * sizeof(uint64_t));
	at += n_nums * sizeof(uint64_t);
	for (size_t i = 0; i < n_strs; i++) {
		size_t n = strs[i] ? strlen(strs[i]) : 0;

		if (n)
			memcpy(d->buf + at, strs[i], n);
		at += n + 1;
	}
	d->len += len;
	d->n_records++;
}

void status_data_done(struct status_data *d)
{
	free(d->buf);
	*d = (struct status_data){ 0 };
}

int status_data_memfd(const struct status_data *d)
{
	int fd = memfd_create("pmallocd-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < d->len) {
		ssize_t n = write(fd, d->buf + done, d->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;

			close(fd);
			return r;
		}
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}
