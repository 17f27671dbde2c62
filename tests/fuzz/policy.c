/*
 * policy.c - libFuzzer harness for the policy parser (shim/policy.c) and
 * its printer (shim/policy_text.c).
 *
 * Input: the text of a policy file.  What a valid file must also do: each
 * of its policies prints (policy_to_text), the print parses back to an
 * equal model (the daemon hands policies to processes this way), and the
 * second print is the same text as the first.  Any difference aborts,
 * which libFuzzer reports as a crash with the input kept.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROUND_TRIP_MAX 8             /* policies checked per input: bounded work */

static void __attribute__((noreturn)) differ(const char *what, const char *text)
{
	fprintf(stderr, "round trip changed %s; printed text:\n%s\n", what, text);
	abort();
}

static int str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int strv_eq(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (!str_eq(a[i], b[i]))
			return 0;
	return 1;
}

static void check_pool(const struct policy_pool *a, const struct policy_pool *b, const char *text)
{
	if (!str_eq(a->name, b->name))
		differ("a pool name", text);
	if (a->n_sites != b->n_sites)
		differ("the number of sites", text);
	for (size_t i = 0; i < a->n_sites; i++)
		if (!str_eq(a->sites[i].object, b->sites[i].object) ||
		    !str_eq(a->sites[i].function, b->sites[i].function))
			differ("a site", text);
	if (!strv_eq(a->wrappers, a->n_wrappers, b->wrappers, b->n_wrappers))
		differ("the wrappers", text);
	if (a->n_triggers != b->n_triggers)
		differ("the number of triggers", text);
	for (size_t i = 0; i < a->n_triggers; i++) {
		const struct policy_trigger *x = &a->triggers[i], *y = &b->triggers[i];
		if (x->kind != y->kind || (x->kind == POLICY_TRIGGER_ON_CALL && x->call != y->call) ||
		    (x->kind == POLICY_TRIGGER_AFTER && x->after_ns != y->after_ns))
			differ("a trigger", text);
	}
	if (a->max_bytes != b->max_bytes)
		differ("max_bytes", text);
}

/* Equal except for line numbers, which belong to the text. */
static void check_policy(const struct policy_set *set, const struct policy *a,
			 const struct policy_set *back, const char *text)
{
	const struct policy *b;

	if (back->version != set->version)
		differ("the version", text);
	if (!str_eq(back->daemon.socket, set->daemon.socket) ||
	    back->daemon.handshake_timeout_ms != set->daemon.handshake_timeout_ms ||
	    back->daemon.report_burst != set->daemon.report_burst ||
	    back->daemon.report_interval_s != set->daemon.report_interval_s)
		differ("the daemon settings", text);
	if (back->n_policies != 1)
		differ("the number of policies", text);
	b = &back->policies[0];
	if (!str_eq(a->name, b->name))
		differ("the policy name", text);
	if (!strv_eq(a->match_exe, a->n_match_exe, b->match_exe, b->n_match_exe) ||
	    !strv_eq(a->match_comm, a->n_match_comm, b->match_comm, b->n_match_comm))
		differ("the match globs", text);
	if (a->n_match_uid != b->n_match_uid ||
	    (a->n_match_uid && memcmp(a->match_uid, b->match_uid, a->n_match_uid * sizeof(uid_t)) != 0))
		differ("the match uids", text);
	if (a->mode != b->mode || a->protection != b->protection)
		differ("mode or protection", text);
	if (a->n_pools != b->n_pools)
		differ("the number of pools", text);
	for (size_t i = 0; i < a->n_pools; i++)
		check_pool(&a->pools[i], &b->pools[i], text);
}

static void round_trip(const struct policy_set *set, const struct policy *p)
{
	char err[POLICY_ERR_MAX];
	struct policy_set *back = NULL;
	char *text = NULL, *again = NULL;

	if (policy_to_text(set, p, &text) < 0)
		abort();                         /* only -ENOMEM is allowed, and that is a leak here */
	if (policy_set_load_string(text, "to_text", &back, err, sizeof(err)) < 0) {
		fprintf(stderr, "printed policy refused: %s\n", err);
		differ("validity", text);
	}
	check_policy(set, p, back, text);
	if (policy_to_text(back, &back->policies[0], &again) < 0)
		abort();
	if (strcmp(text, again) != 0) {
		fprintf(stderr, "second print:\n%s\n", again);
		differ("the printed text", text);
	}
	free(again);
	free(text);
	policy_set_free(back);
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
