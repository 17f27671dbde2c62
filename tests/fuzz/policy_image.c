/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy_image.c - libFuzzer harness for the validation of policy images
 * (common/policy/policy_image.c), the gate every image passes before the shim reads
 * it, whether pmallocd sent it or the shim compiled it.
 *
 * Input: the bytes of an image, copied to 8-byte aligned memory of exactly
 * that size (so ASan sees any read past the end).  What an accepted image
 * must also do: every record the accessors reach lies inside it, every
 * string they return ends inside it, every enum is in range; and it is
 * refused once any byte is cut off its end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *img_end;

static void inside(const void *p, size_t len, const void *img)
{
	if ((const char *)p < (const char *)img || (const char *)p + len > img_end)
		abort();
}

static void check_str(const char *s, const void *img)
{
	if (!s)
		return;
	inside(s, 1, img);
	if (!memchr(s, '\0', (size_t)(img_end - s)))
		abort();
}

static void walk(const struct pimg_header *h)
{
	if (!pimg_policy_name(h) || h->mode > POLICY_MODE_LEARN || h->protection > POLICY_PROT_SEAL)
		abort();
	check_str(pimg_policy_name(h), h);
	for (size_t i = 0; i < h->n_pools; i++) {
		const struct pimg_pool *p = pimg_pool(h, i);
		inside(p, sizeof(*p), h);
		if (!pimg_pool_name(h, i))
			abort();
		check_str(pimg_pool_name(h, i), h);
		for (size_t j = 0; j < p->n_sites; j++) {
			const struct pimg_site *s = pimg_pool_site(h, p, j);
			inside(s, sizeof(*s), h);
			if (!pimg_str(h, s->function))
				abort();
			check_str(pimg_str(h, s->object), h);
			check_str(pimg_str(h, s->function), h);
			check_str(pimg_str(h, s->build_id), h);
		}
		for (size_t j = 0; j < p->n_wrappers; j++) {
			inside(&pimg_wrappers(h)[p->first_wrapper + j], sizeof(struct pimg_wrapper), h);
			check_str(pimg_pool_wrapper(h, p, j), h);
		}
		for (size_t j = 0; j < p->n_triggers; j++) {
			const struct pimg_trigger *t = pimg_pool_trigger(h, p, j);
			inside(t, sizeof(*t), h);
			if (t->kind > POLICY_TRIGGER_MANUAL || t->call >= POLICY_CALL__COUNT)
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > PIMG_MAX + 8)
		return 0;
	/* malloc'ed memory is 16-byte aligned; an exact size keeps ASan's
	 * redzone right after the last byte. */
	void *img = malloc(size ? size : 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	img_end = (const char *)img + size;
	if (policy_image_validate(img, size) == 0) {
		walk(img);
		if (policy_image_validate(img, size - 1) == 0)
			abort();
	}
	free(img);
	return 0;
}
