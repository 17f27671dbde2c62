/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status_data.h - the status as records (shim/wire.h's PMW_STATUS_DATA):
 * a growable buffer that status.c and rules.c append records to, and that
 * server.c hands over in a sealed memfd.
 */
#ifndef PMALLOCD_STATUS_DATA_H
#define PMALLOCD_STATUS_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct status_data {
	uint8_t *buf;
	size_t len, alloc;
	uint32_t n_records;
	bool full;                       /* ENOMEM or PMW_STATUS_DATA_MAX reached: the rest dropped */
};

/* Append a record of type with nums[0, n_nums) and strs[0, n_strs)
 * (NULL strings are empty); past PMW_STATUS_DATA_MAX or without memory,
 * nothing more is appended and d->full says so. */
void status_data_add(struct status_data *d, enum pmw_srec_type type, const uint64_t *nums, size_t n_nums,
		     const char *const *strs, size_t n_strs);
void status_data_done(struct status_data *d);
/* A sealed memfd holding d's bytes: the descriptor, or -errno. */
int status_data_memfd(const struct status_data *d);

#endif
