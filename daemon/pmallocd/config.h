/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config.h - one loaded policy file: the parsed set, the image of each
 * policy (what a client is handed), and the generation number it was given.
 */
#ifndef PMALLOCD_CONFIG_H
#define PMALLOCD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define CONFIG_FILE_MAX (1024 * 1024)   /* a policy file larger than this is refused */

struct config {
	struct policy_set *set;
	void **images;                   /* policy_image_compile() of set->policies[i] */
	size_t *image_sizes;
	uint64_t generation;             /* set by the caller; 0 until then */
};

/* Read and validate path.  When check_owner, a file not owned by root or
 * writable by group/others is refused.  0 and *ret, or -errno with err
 * holding "FILE:LINE: message" (or "FILE: message"). */
int config_read(const char *path, bool check_owner, struct config **ret, char *err, size_t errlen);
void config_free(struct config *c);

/* Index of the policy p in c->set, or -1. */
int config_policy_index(const struct config *c, const struct policy *p);

#endif
