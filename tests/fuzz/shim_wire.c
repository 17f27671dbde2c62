/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shim_wire.c - libFuzzer harness for the shim's checks on what pmallocd
 * sends it (shim/preload/uplink/client_decode.c, with common/policy/policy_image.c's validation of
 * the policy image), and what the shim does next with an image it was
 * handed: read every record through the accessors, as init.c and
 * resolve.c do.
 *
 * Input: one packet, taken both as the handshake answer and as a protect
 * order.  Besides memory errors, it checks the decoder's contract: a policy
 * image lies inside the packet, 8-byte aligned, and every string the
 * accessors return ends inside it; a refusal reason and an order's pool
 * name are NUL-terminated within their arrays.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_decode.h"
#include "policy_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* s, a string of the image at [img, end): NULL or NUL-terminated inside. */
static void check_str(const char *s, const char *img, const char *end)
{
	if (s && (s < img || s >= end || !memchr(s, '\0', (size_t)(end - s))))
		abort();
}

/* Every record through the accessors, as the shim reads them. */
static void walk_image(const struct pimg_header *h, size_t len)
{
	const char *img = (const char *)h, *end = img + len;

	check_str(pimg_policy_name(h), img, end);
	for (size_t i = 0; i < h->n_pools; i++) {
		const struct pimg_pool *p = pimg_pool(h, i);
		if ((const char *)(p + 1) > end)
			abort();
		check_str(pimg_pool_name(h, i), img, end);
		for (size_t j = 0; j < p->n_sites; j++) {
			const struct pimg_site *s = pimg_pool_site(h, p, j);
			if ((const char *)(s + 1) > end)
				abort();
			check_str(pimg_str(h, s->object), img, end);
			check_str(pimg_str(h, s->function), img, end);
			check_str(pimg_str(h, s->build_id), img, end);
			if (!pimg_str(h, s->function))
				abort();
		}
		for (size_t j = 0; j < p->n_wrappers; j++)
			check_str(pimg_pool_wrapper(h, p, j), img, end);
		for (size_t j = 0; j < p->n_triggers; j++) {
			const struct pimg_trigger *t = pimg_pool_trigger(h, p, j);
			if ((const char *)(t + 1) > end || t->kind > POLICY_TRIGGER_MANUAL ||
			    t->call >= POLICY_CALL__COUNT)
				abort();
		}
	}
}

static void answer(const uint8_t *data, size_t size)
{
	struct client_answer a;
	char *buf;
	int r;

	/* client_wait() receives at most PMW_MAX_MSG + 1 bytes, into malloc'ed
	 * (so 8-byte aligned) memory. */
	if (size > PMW_MAX_MSG + 1)
		return;
	buf = malloc(size ? size : 1);
	if (!buf)
		return;
	memcpy(buf, data, size);
	r = client_decode_answer(buf, size, &a);
	if (r == 1) {
		const char *img = a.image;
		if (img < buf || a.image_len < sizeof(struct pimg_header) || img + a.image_len != buf + size ||
		    ((uintptr_t)img & 7))
			abort();
		walk_image(a.image, a.image_len);
	} else if (r == -EPROTONOSUPPORT) {
		if (!memchr(a.reason, '\0', sizeof(a.reason)))
			abort();
	} else if (r != 0 && r != -EPROTO) {
		abort();
	}
	free(buf);
}

static void order(const uint8_t *data, size_t size)
{
	struct pmw_protect m;
	const char *pool;

	/* recv(..., sizeof(m), MSG_TRUNC): size may exceed what m holds. */
	memset(&m, 0xa5, sizeof(m));
	memcpy(&m, data, size < sizeof(m) ? size : sizeof(m));
	pool = client_decode_order(&m, size);
	if (pool && (pool != m.pool || !memchr(m.pool, '\0', sizeof(m.pool))))
		abort();
	/* A sites request is never also an order, and has its exact size. */
	if (client_decode_sites_req(&m, size) && (pool || size != sizeof(struct pmw_sites_req)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	answer(data, size);
	order(data, size);
	return 0;
}
