/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_time.h - time arguments and timestamps (ctl_time.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_TIME_H
#define PMALLOC_CTL_TIME_H

#include <stddef.h>
#include <stdint.h>

/* ctl_time.c: time arguments and timestamps (local time zone unless noted). */
/* Parse a --since TIME (see pmallocctl(8)) relative to now_usec (realtime,
 * µs): 0 and *ret_usec, or -EINVAL (syntax) / -ERANGE (out of range). */
int ctl_parse_time(const char *s, uint64_t now_usec, uint64_t *ret_usec);
/* "YYYY-MM-DD HH:MM:SS" in local time; 0 or -EOVERFLOW / -ENOBUFS. */
int ctl_format_local(uint64_t usec, char *buf, size_t len);
/* "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" (UTC); 0 or -EOVERFLOW / -ENOBUFS. */
int ctl_format_iso_utc(uint64_t usec, char *buf, size_t len);
/* CLOCK_REALTIME in µs. */
uint64_t ctl_now_usec(void);

#endif
