/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_status_data.h - pmallocd's status as pmallocctl holds it: the
 * PMW_STATUS_DATA records (shim/wire.h), checked, in order; rendered as
 * text (ctl_status_text.c) and as JSON (ctl_status_json.c) from the same
 * records.
 */
#ifndef PMALLOC_CTL_STATUS_DATA_H
#define PMALLOC_CTL_STATUS_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wire.h"

#define CTL_SREC_STRS 4                  /* the most strings a known type has */

struct ctl_srec {
	uint16_t type;                   /* enum pmw_srec_type */
	const uint64_t *nums;            /* at least the count its type has */
	const char *strs[CTL_SREC_STRS];
};

struct ctl_status {
	uint64_t *data;                  /* the memfd's bytes (8-aligned) */
	struct ctl_srec *recs;           /* recs[0] is the DAEMON record */
	size_t n;
};

/* Send req (req_len bytes) to pmallocd at path, and take its
 * PMW_STATUS_DATA answer: 0 and *ret (free with ctl_status_free()), or
 * -errno as ctl_request() (-EBADMSG: a malformed answer or record). */
int ctl_status_data_fetch(const char *path, int timeout_ms, const void *req, size_t req_len,
			  struct ctl_status **ret);
void ctl_status_free(struct ctl_status *st);

/* The records after recs[i] that belong to it (a PROCESS's POOL, RULE and
 * SITE records): the index past the last. */
size_t ctl_status_children_end(const struct ctl_status *st, size_t i);

/* ctl_status_text.c: the words for a rule's kind, why it is unresolved
 * (NULL: resolved), and a policy mode's name. */
const char *ctl_rule_kind(uint64_t kind);
const char *ctl_rule_why(uint64_t state);
const char *ctl_mode_name(uint64_t mode);

/* Render st on f: the text for people (escaped) or one JSON object
 * (pmallocctl(8) gives its schema); 0 or -EIO. */
int ctl_status_text(FILE *f, const struct ctl_status *st);
int ctl_status_json(FILE *f, const struct ctl_status *st);

#endif
