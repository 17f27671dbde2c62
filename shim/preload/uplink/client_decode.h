/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * client_decode.h - the checks on what pmallocd sends the shim
 * (client_decode.c).
 */
#ifndef PMALLOC_CLIENT_DECODE_H
#define PMALLOC_CLIENT_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct client_answer {
	uint64_t generation;
	const void *image;           /* PMW_POLICY: inside the buffer, validated (policy_image.h) */
	size_t image_len;
	char reason[PMW_SYM];        /* PMW_REFUSED: NUL-terminated; "" otherwise */
};

/* The handshake answer in buf[0, n) (buf 8-byte aligned): 1 with a policy
 * image that policy_image_validate() accepted, 0 for PMW_NO_POLICY, -EPROTONOSUPPORT when refused or of another
 * version, -EPROTO for anything malformed.  *ret is filled on 1 and on a
 * refusal.  Reads nothing beyond buf[n). */
int client_decode_answer(const void *buf, size_t n, struct client_answer *ret);

/* The pool named by an order (PMW_PROTECT) in m[0, n): NUL-terminated in
 * place; NULL when m is not a well-formed order. */
const char *client_decode_order(struct pmw_protect *m, size_t n);

/* Is buf[0, n) a well-formed PMW_SITES_REQ? */
bool client_decode_sites_req(const void *buf, size_t n);

#endif
