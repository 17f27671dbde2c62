/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wire_decode.h - the checks on a packet a client sent, before any handler
 * reads it (wire_decode.c).
 */
#ifndef PMALLOCD_WIRE_DECODE_H
#define PMALLOCD_WIRE_DECODE_H

#include <stddef.h>

#include "wire.h"

enum wire_verdict {
	WIRE_OK,                     /* header and type-specific size are right */
	WIRE_MALFORMED,              /* short, bad magic/length/reserved, wrong size */
	WIRE_OTHER_VERSION,          /* well framed, another protocol version */
	WIRE_NOT_FROM_CLIENT,        /* a type that clients do not send */
};

/* Check the n bytes of buf (at least 8-byte aligned) as a message from a
 * client.  why (whylen bytes) says what is wrong for anything but WIRE_OK,
 * without a trailing "dropped".  Reads nothing beyond buf[n). */
enum wire_verdict wire_check_client(const void *buf, size_t n, char *why, size_t whylen);

/* The fields of a PMW_REPORT that wire_check_client() passed: 0, with every
 * string NUL-terminated in place, or -EINVAL for an out-of-range count,
 * mode or index. */
int wire_check_report(struct pmw_report *m);

/* The same for a PMW_RULES: 0 with every string of rows[0, n_rows) and the
 * policy NUL-terminated in place, or -EINVAL for a count past its bounds
 * (n_rows <= PMW_ROWS and total, unresolved <= total and at least the
 * unresolved rows), an unknown table, a row kind or state that does not
 * fit its table, or an empty pool or text. */
int wire_check_rules(struct pmw_rules *m);

/* The fields of any message wire_check_client() passed, by its type
 * (PMW_PROTECTED: strings NUL-terminated in place and a pool named;
 * PMW_REPORT and PMW_RULES as above; other types have none to check): 0,
 * or -EINVAL with why saying what is wrong, without a trailing "dropped". */
int wire_check_fields(void *buf, char *why, size_t whylen);

#endif
