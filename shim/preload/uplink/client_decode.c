/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * client_decode.c - the checks on what pmallocd sends the shim: the
 * handshake answer (its policy image checked by policy_image_validate) and
 * the protect orders (client.c receives them).
 *
 * Pure: no system call, no allocation, no output, no global state; so it is
 * safe anywhere in the shim, and the fuzzer in tests/fuzz/ runs it as is.
 */
#include "client_decode.h"
#include "policy_image.h"

#include <errno.h>
#include <string.h>

int client_decode_answer(const void *buf, size_t n, struct client_answer *ret)
{
	const struct pmw_header *h = buf;
	const struct pmw_policy *p = buf;

	if (n < sizeof(*h) || n > PMW_MAX_MSG || h->magic != PMW_MAGIC || h->length != n)
		return -EPROTO;
	if (h->version != PMW_VERSION || h->type == PMW_REFUSED) {
		const struct pmw_answer *a = buf;

		memset(ret, 0, sizeof(*ret));
		if (h->type == PMW_REFUSED && n == sizeof(*a)) {
			memcpy(ret->reason, a->reason, sizeof(ret->reason));
			ret->reason[sizeof(ret->reason) - 1] = '\0';
		}
		return -EPROTONOSUPPORT;
	}
	if (h->type == PMW_NO_POLICY && n == sizeof(struct pmw_answer))
		return 0;
	if (h->type != PMW_POLICY || n < sizeof(*p) || p->reserved != 0 ||
	    sizeof(*p) + (size_t)p->image_len != n ||
	    policy_image_validate(p->image, p->image_len) < 0)
		return -EPROTO;
	memset(ret, 0, sizeof(*ret));
	ret->generation = p->generation;
	ret->image = p->image;
	ret->image_len = p->image_len;
	return 1;
}

bool client_decode_sites_req(const void *buf, size_t n)
{
	const struct pmw_header *h = buf;

	return n == sizeof(struct pmw_sites_req) && h->magic == PMW_MAGIC && h->version == PMW_VERSION &&
	       h->type == PMW_SITES_REQ && h->length == n;
}

const char *client_decode_order(struct pmw_protect *m, size_t n)
{
	if (n != sizeof(*m) || m->h.magic != PMW_MAGIC || m->h.version != PMW_VERSION ||
	    m->h.type != PMW_PROTECT || m->h.length != sizeof(*m))
		return NULL;
	m->pool[sizeof(m->pool) - 1] = '\0';
	return m->pool;
}
