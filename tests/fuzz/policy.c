/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy.c - libFuzzer harness for the policy parser (common/policy/policy_load.c) and
 * the compiler of its policies (common/policy/policy_image.c).
 *
 * Input: the text of a policy file.  What a valid file must also do: each
 * of its policies compiles (pmallocd hands processes the image, the shim's
 * fallback compiles the same way), the image passes the validation every
 * receiver applies, and reading it through the accessors gives back the
 * model.  Any difference aborts, which libFuzzer reports as a crash with
 * the input kept.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROUND_TRIP_MAX 8             /* policies checked per input: bounded work */

static void __attribute__((noreturn)) differ(const char *what, const struct policy *p)
{
	fprintf(stderr, "round trip changed %s of policy \"%s\"\n", what, p->name);
	abort();
}

static int str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_pool(const struct pimg_header *h, size_t i, const struct policy *p)
{
	const struct policy_pool *a = &p->pools[i];
	const struct pimg_pool *b = pimg_pool(h, i);

	if (!str_eq(a->name, pimg_pool_name(h, i)))
		differ("a pool name", p);
	if (a->n_sites != b->n_sites)
		differ("the number of sites", p);
	for (size_t j = 0; j < a->n_sites; j++) {
		const struct pimg_site *s = pimg_pool_site(h, b, j);
		if (!str_eq(a->sites[j].object, pimg_str(h, s->object)) ||
		    !str_eq(a->sites[j].function, pimg_str(h, s->function)) ||
		    !str_eq(a->sites[j].build_id, pimg_str(h, s->build_id)) ||
		    a->sites[j].by_offset != ((s->flags & PIMG_SITE_BY_OFFSET) != 0) ||
		    a->sites[j].offset != s->offset)
			differ("a site", p);
	}
	if (a->n_wrappers != b->n_wrappers)
		differ("the number of wrappers", p);
	for (size_t j = 0; j < a->n_wrappers; j++)
		if (!str_eq(a->wrappers[j], pimg_pool_wrapper(h, b, j)))
			differ("a wrapper", p);
	if (a->n_triggers != b->n_triggers)
		differ("the number of triggers", p);
	for (size_t j = 0; j < a->n_triggers; j++) {
		const struct policy_trigger *x = &a->triggers[j];
		const struct pimg_trigger *y = pimg_pool_trigger(h, b, j);
		if ((uint32_t)x->kind != y->kind ||
		    (x->kind == POLICY_TRIGGER_ON_CALL && (uint32_t)x->call != y->call) ||
		    (x->kind == POLICY_TRIGGER_AFTER && x->after_ns != y->after_ns))
			differ("a trigger", p);
	}
	if (a->max_bytes != b->max_bytes)
		differ("max_bytes", p);
}

static void round_trip(const struct policy_set *set, const struct policy *p)
{
	void *img = NULL;
	size_t len = 0;
	int r = policy_image_compile(set, p, &img, &len);

	if (r == -E2BIG)
		return;                          /* larger than any image may be: refused, fine */
	if (r < 0)
		differ("validity (not compiled)", p);
	if (policy_image_validate(img, len) < 0)
		differ("validity (image refused)", p);
	const struct pimg_header *h = img;
	if (!str_eq(p->name, pimg_policy_name(h)))
		differ("the policy name", p);
	if ((uint32_t)p->mode != h->mode || (uint32_t)p->protection != h->protection)
		differ("mode or protection", p);
	if (set->daemon.report_burst != h->report_burst ||
	    set->daemon.report_interval_s != h->report_interval_s)
		differ("the daemon settings", p);
	if (p->n_pools != h->n_pools)
		differ("the number of pools", p);
	for (size_t i = 0; i < p->n_pools; i++)
		check_pool(h, i, p);
	free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[POLICY_ERR_MAX];
	struct policy_set *set = NULL;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (policy_set_load_string(text, "fuzz", &set, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < set->n_policies && i < ROUND_TRIP_MAX; i++)
			round_trip(set, &set->policies[i]);
		(void)policy_set_match(set, "/usr/sbin/nginx", "nginx", 33);
		policy_set_free(set);
	} else if (!memchr(err, '\0', sizeof(err)) || err[0] == '\0') {
		abort();                         /* a refusal always says why */
	}
	free(text);
	return 0;
}
