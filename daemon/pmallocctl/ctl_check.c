/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_check.c - "pmallocctl check [FILE]": validate a policy file with the
 * parser the shim and pmallocd use (common/policy/policy_load.c), and summarise it.
 *
 * Owns only the summary's wording.  Must never judge the content itself:
 * what is valid is policy_set_load_file()'s word alone, ownership rule for
 * root included (policy_file_trusted()), so that check, pmallocd --check
 * and the shim can never disagree.  Strings from the file are escaped on
 * output (a policy file can hold any bytes).
 */
#define _GNU_SOURCE                  /* asprintf */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "role.h"
#include "ctl.h"
#include "ctl_escape.h"
#include "ctl_util.h"
#include "policy_lint.h"
#include "policy.h"

/* ", "-separated escaped globs, after label; nothing when n == 0. */
static void put_list(FILE *f, const char *label, char *const *items, size_t n)
{
	if (n == 0)
		return;
	fprintf(f, "%s ", label);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		ctl_put_str(f, items[i], 0);
	}
}

/* A duration in the largest unit that divides it, as policy_parse_duration() reads it. */
static void put_duration(FILE *f, uint64_t ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{ "h", UINT64_C(3600000000000) }, { "m", UINT64_C(60000000000) },
		{ "s", UINT64_C(1000000000) }, { "ms", UINT64_C(1000000) },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns != 0 && ns % units[i].ns == 0) {
			fprintf(f, "%" PRIu64 "%s", ns / units[i].ns, units[i].unit);
			return;
		}
	}
	fprintf(f, "%" PRIu64 "ns", ns);
}

static void put_trigger(FILE *f, const struct policy_trigger *t)
{
	const char *call;

	switch (t->kind) {
	case POLICY_TRIGGER_ON_CALL:
		call = policy_call_name(t->call);
		fprintf(f, "on-call:%s", call ? call : "?");
		break;
	case POLICY_TRIGGER_AFTER:
		fputs("after:", f);
		put_duration(f, t->after_ns);
		break;
	case POLICY_TRIGGER_MANUAL:
		fputs("manual", f);
		break;
	case POLICY_TRIGGER_ON_WAIT:
		fputs("on-wait", f);
		break;
	}
}

/* A pool's line, "    pool NAME: sites ...; wrappers ...; protect ...;
 * max_bytes N", when it fits CHECK_WIDTH columns; otherwise one line per
 * part, its items wrapped at CHECK_WRAP columns (a learned pool lists
 * hundreds of sites, which no terminal shows on one line). */
#define CHECK_WIDTH 100
#define CHECK_WRAP 80
#define CHECK_PARTS 6

/* One part: its label ("sites") and its items, each escaped. */
struct check_part {
	const char *label;
	char **items;
	size_t n;
};

static bool part_add(struct check_part *p, const char *s)
{
	char *esc, **grown;

	if (ctl_escape(s, strlen(s), 0, &esc) < 0)
		return false;
	grown = realloc(p->items, (p->n + 1) * sizeof(*grown));
	if (!grown) {
		free(esc);
		return false;
	}
	p->items = grown;
	p->items[p->n++] = esc;
	return true;
}

static size_t part_width(const struct check_part *p)
{
	size_t w = strlen(p->label) + 1;

	for (size_t i = 0; i < p->n; i++)
		w += ctl_text_width(p->items[i]) + (i ? 2 : 0);
	return w;
}

static void part_put(FILE *f, const struct check_part *p, bool wrap)
{
	size_t col = 6 + strlen(p->label) + 1;

	fprintf(f, wrap ? "      %s " : "%s ", p->label);
	for (size_t i = 0; i < p->n; i++) {
		size_t w = ctl_text_width(p->items[i]);

		if (i)
			fputc(',', f);
		if (i && wrap && col + 2 + w > CHECK_WRAP) {
			fputs("\n        ", f);
			col = 8;
		} else if (i) {
			fputc(' ', f);
			col += 2;
		}
		fputs(p->items[i], f);
		col += w;
	}
	if (wrap)
		fputc('\n', f);
}

static void put_pool(FILE *f, const struct policy_pool *pool)
{
	struct check_part parts[CHECK_PARTS] = {
		{ "sites", NULL, 0 }, { "wrappers", NULL, 0 }, { "protect", NULL, 0 },
		{ "max_bytes", NULL, 0 }, { "take", NULL, 0 }, { "roles", NULL, 0 },
	};
	char *name = NULL, *one = NULL;
	size_t width = 0;
	bool ok = ctl_escape(pool->name, strlen(pool->name), 0, &name) == 0, first = true;

	for (size_t i = 0; ok && i < pool->n_sites; i++) {
		const struct policy_site *site = &pool->sites[i];

		ok = (site->object ? asprintf(&one, "%s%s%s:%s", site->object,
					      site->build_id ? "@" : "",
					      site->build_id ? site->build_id : "", site->function)
				   : asprintf(&one, "%s", site->function)) >= 0;
		ok = ok && part_add(&parts[0], one);
		free(one);
		one = NULL;
	}
	for (size_t i = 0; ok && i < pool->n_wrappers; i++)
		ok = part_add(&parts[1], pool->wrappers[i]);
	if (ok && pool->n_triggers == 0)
		ok = part_add(&parts[2], "never");
	for (size_t i = 0; ok && i < pool->n_triggers; i++) {
		size_t len = 0;
		FILE *m = open_memstream(&one, &len);

		if (m)
			put_trigger(m, &pool->triggers[i]);
		ok = m && fclose(m) == 0 && part_add(&parts[2], one);
		free(one);
		one = NULL;
	}
	if (ok && pool->max_bytes) {
		ok = asprintf(&one, "%" PRIu64, pool->max_bytes) >= 0 && part_add(&parts[3], one);
		free(one);
	}
	if (ok && pool->take != POLICY_TAKE_ALWAYS)
		ok = part_add(&parts[4], policy_take_name(pool->take));
	for (unsigned int d = 0; ok && d <= ROLE_DEPTH_MAX; d++)
		if (pool->roles & (1u << d))
			ok = part_add(&parts[5], role_name(d));
	if (!ok) {
		fputs("    pool (out of memory)\n", f);
		goto out;
	}
	width = strlen("    pool ") + ctl_text_width(name) + 1;
	for (size_t i = 0; i < CHECK_PARTS; i++)
		width += parts[i].n ? part_width(&parts[i]) + 2 : 0;
	fprintf(f, "    pool %s:%s", name, width > CHECK_WIDTH ? "\n" : "");
	for (size_t i = 0; i < CHECK_PARTS; i++) {
		/* sites and protect are always said, even when empty. */
		if (parts[i].n == 0 && i != 0)
			continue;
		if (width <= CHECK_WIDTH)
			fputs(first ? " " : "; ", f);
		part_put(f, &parts[i], width > CHECK_WIDTH);
		first = false;
	}
	if (width <= CHECK_WIDTH)
		fputc('\n', f);
out:
	for (size_t i = 0; i < CHECK_PARTS; i++) {
		for (size_t k = 0; k < parts[i].n; k++)
			free(parts[i].items[k]);
		free(parts[i].items);
	}
	free(name);
}

static void put_policy(FILE *f, const struct policy *p)
{
	fputs("  policy ", f);
	ctl_put_str(f, p->name, 0);
	fprintf(f, ": %s, %s; match",
		policy_mode_name(p->mode),
		p->protection == POLICY_PROT_SEAL ? "seal" : "mprotect");
	if (p->n_match_exe)
		put_list(f, " exe", p->match_exe, p->n_match_exe);
	if (p->n_match_comm)
		put_list(f, p->n_match_exe ? "; comm" : " comm", p->match_comm, p->n_match_comm);
	if (p->n_match_uid) {
		fputs(p->n_match_exe || p->n_match_comm ? "; uid " : " uid ", f);
		for (size_t i = 0; i < p->n_match_uid; i++)
			fprintf(f, i ? ", %u" : "%u", (unsigned int)p->match_uid[i]);
	}
	if (!p->n_match_exe && !p->n_match_comm && !p->n_match_uid)
		fputs(" nothing", f);
	fputc('\n', f);
	for (size_t i = 0; i < p->n_pools; i++)
		put_pool(f, &p->pools[i]);
}

static void put_warning(void *ctx, int line, const char *msg)
{
	ctl_put_str(stderr, ctx, 0);
	fprintf(stderr, ":%d: warning: ", line);
	ctl_put_str(stderr, msg, 0);
	fputc('\n', stderr);
}

int ctl_cmd_check(int argc, char **argv)
{
	struct policy_set *set = NULL;
	char err[POLICY_ERR_MAX] = "";
	const char *path = CTL_DEFAULT_CONF;
	size_t n_pools = 0;
	int r;

	(void)ctl_getopt(argc, argv, "check", &r);      /* --help, its only option */
	if (r >= 0)
		return r;
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc)
		return ctl_usage_error("check takes one FILE, got also", argv[optind]);

	r = policy_set_load_file(path, &set, err, sizeof(err));
	if (r < 0) {
		if (err[0]) {
			ctl_put_str(stderr, err, 0);
		} else {
			ctl_put_str(stderr, path, 0);
			fprintf(stderr, ": %s", strerror(-r));
		}
		fputc('\n', stderr);
		return CTL_EXIT_FAILURE;
	}

	for (size_t i = 0; i < set->n_policies; i++)
		n_pools += set->policies[i].n_pools;
	ctl_put_str(stdout, path, 0);
	printf(": ok (%zu policies, %zu pools)\n", set->n_policies, n_pools);
	for (size_t i = 0; i < set->n_policies; i++)
		put_policy(stdout, &set->policies[i]);
	fflush(stdout);
	policy_lint(set, put_warning, (void *)(uintptr_t)path);
	policy_set_free(set);
	return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
