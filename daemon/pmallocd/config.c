/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config.c - reading the policy file for pmallocd.
 *
 * Owns: opening the file once (no TOCTOU between the ownership check and
 * the parse: the bytes checked are the bytes parsed), the ownership rule,
 * and compiling each policy's image once, here (policy_image.c), so that a
 * hand-out is a copy, and a policy too large for one packet is refused at
 * load time rather than at hand-out.
 * Never: logs (callers do, with the message it fills in), or keeps the
 * file open.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy_image.h"
#include "wire.h"

static int read_file(const char *path, bool check_owner, char **ret, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t have = 0;
	int fd, r;

	/* O_NONBLOCK: a FIFO planted at the path must not hang the daemon. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(-r));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	/* The shim's own reading and pmallocctl check apply the same rule. */
	r = check_owner ? policy_file_trusted(path, &st, 0, err, errlen) : 0;
	if (r < 0)
		goto out;
	if (st.st_size > CONFIG_FILE_MAX) {
		r = -EFBIG;
		snprintf(err, errlen, "%s: refused: larger than %d bytes", path, CONFIG_FILE_MAX);
		goto out;
	}

	buf = malloc((size_t)CONFIG_FILE_MAX + 1);
	if (!buf) {
		r = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, (size_t)CONFIG_FILE_MAX + 1 - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-r));
			goto out;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		if (have > CONFIG_FILE_MAX) {
			r = -EFBIG;
			snprintf(err, errlen, "%s: refused: larger than %d bytes", path, CONFIG_FILE_MAX);
			goto out;
		}
	}
	if (memchr(buf, '\0', have)) {
		r = -EINVAL;
		snprintf(err, errlen, "%s: refused: contains a NUL byte", path);
		goto out;
	}
	buf[have] = '\0';
	*ret = buf;
	buf = NULL;
	r = 0;
out:
	free(buf);
	close(fd);
	return r;
}

void config_free(struct config *c)
{
	if (!c)
		return;
	if (c->images)
		for (size_t i = 0; i < c->set->n_policies; i++)
			free(c->images[i]);
	free(c->images);
	free(c->image_sizes);
	policy_set_free(c->set);
	free(c);
}

int config_read(const char *path, bool check_owner, struct config **ret, char *err, size_t errlen)
{
	const size_t image_max = PMW_MAX_MSG - sizeof(struct pmw_policy);
	struct config *c;
	char *text = NULL;
	int r;

	r = read_file(path, check_owner, &text, err, errlen);
	if (r < 0)
		return r;

	c = calloc(1, sizeof(*c));
	if (!c) {
		free(text);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	r = policy_set_load_string(text, path, &c->set, err, errlen);
	free(text);
	if (r < 0) {
		free(c);
		return r;
	}

	c->images = calloc(c->set->n_policies ? c->set->n_policies : 1, sizeof(void *));
	c->image_sizes = calloc(c->set->n_policies ? c->set->n_policies : 1, sizeof(size_t));
	if (!c->images || !c->image_sizes) {
		config_free(c);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	/* When this file was loaded: learned entries tell the runs of one
	 * learn policy by it (PMALLOC_POLICY_LOADED). */
	struct timespec now;
	uint64_t loaded_us = clock_gettime(CLOCK_REALTIME, &now) == 0
		? (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u : 0;
	for (size_t i = 0; i < c->set->n_policies; i++) {
		const struct policy *p = &c->set->policies[i];

		r = policy_image_compile(c->set, p, &c->images[i], &c->image_sizes[i]);
		if (r == 0)
			((struct pimg_header *)c->images[i])->loaded_us = loaded_us;
		if (r == 0 && c->image_sizes[i] > image_max)
			r = -E2BIG;
		if (r < 0) {
			if (r == -E2BIG)
				snprintf(err, errlen, "%s:%d: policy \"%s\" is too large to hand out "
					 "(its image exceeds %zu bytes)", path, p->line, p->name, image_max);
			else
				snprintf(err, errlen, "%s:%d: policy \"%s\": cannot compile it: %s", path,
					 p->line, p->name, strerror(-r));
			config_free(c);
			return r;
		}
	}
	*ret = c;
	return 0;
}

int config_policy_index(const struct config *c, const struct policy *p)
{
	if (!p || p < c->set->policies || p >= c->set->policies + c->set->n_policies)
		return -1;
	return (int)(p - c->set->policies);
}
