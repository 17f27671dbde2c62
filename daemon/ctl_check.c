/*
 * ctl_check.c - "pmallocctl check [FILE]": validate a policy file with the
 * parser the shim and pmallocd use (shim/policy.c), and summarise it.
 *
 * Owns only the summary's wording.  Must never judge the content itself:
 * what is valid is policy_set_load_file()'s word alone, so that check,
 * pmallocd --check and the shim can never disagree; the one rule added is
 * pmallocd's ownership rule for root.  Strings from the file are escaped on
 * output (a policy file can hold any bytes).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "policy.h"

/* pmallocd running as root refuses a policy file that others could have
 * written (daemon/config.c, read_file()); pmallocd --check as root does too.
 * The same rule and words here, so that check run as root gives the verdict
 * the daemon will: 0, or -EPERM and err.  ctl_check.sh compares the two. */
static int check_owner(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (geteuid() != 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;                    /* not root, or the parser reports it */
	if (st.st_uid != 0) {
		snprintf(err, errlen, "%s: refused: owned by uid %u, not by root", path,
			 (unsigned int)st.st_uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s: refused: writable by group or others (mode %04o)", path,
			 (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

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

static void put_pool(FILE *f, const struct policy_pool *pool)
{
	fputs("    pool ", f);
	ctl_put_str(f, pool->name, 0);
	fputs(": sites ", f);
	for (size_t i = 0; i < pool->n_sites; i++) {
		if (i)
			fputs(", ", f);
		if (pool->sites[i].object) {
			ctl_put_str(f, pool->sites[i].object, 0);
			if (pool->sites[i].build_id)
				fprintf(f, "@%s", pool->sites[i].build_id);
			fputc(':', f);
		}
		ctl_put_str(f, pool->sites[i].function, 0);
	}
	if (pool->n_wrappers) {
		fputs("; ", f);
		put_list(f, "wrappers", pool->wrappers, pool->n_wrappers);
	}
	fputs("; protect ", f);
	if (pool->n_triggers == 0)
		fputs("never", f);
	for (size_t i = 0; i < pool->n_triggers; i++) {
		if (i)
			fputs(", ", f);
		put_trigger(f, &pool->triggers[i]);
	}
	if (pool->max_bytes)
		fprintf(f, "; max_bytes %" PRIu64, pool->max_bytes);
	if (pool->take != POLICY_TAKE_ALWAYS)
		fprintf(f, "; take %s", policy_take_name(pool->take));
	fputc('\n', f);
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

	r = check_owner(path, err, sizeof(err));
	if (r == 0)
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
