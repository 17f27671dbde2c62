/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose.c - pmallocctl propose: from the contexts learn mode wrote to
 * the journal (MESSAGE_ID MID_LEARNED, one entry per pool and context per
 * process) to the enforce policy of one executable.
 *
 * Owns the command: its options, the tally it says, the rounds of the
 * refine from audit, the policy element around the pools, and the checks
 * on it before anything is written (it loads, it has no warning, it fits
 * what pmallocd hands out).  Which entries are read and believed are
 * ctl_propose_read.c's; the choice of sites and the pool text
 * ctl_propose_chain.c's, the file edit ctl_conf_merge.c's.
 *
 * Refine from audit (ctl_propose_audit.c reads them): violation entries of
 * the executable in audit mode
 * (MESSAGE_ID MID_VIOLATION, PMALLOC_MODE=audit), believed by the same rule
 * (their writer pmallocd or the process itself; the uid trusted or one seen
 * in a trusted run), name the site that allocated the object written
 * (PMALLOC_OBJECT_SITE, "function+0xOFF").  That site is left out of the
 * proposal (ctl_propose_chain.c's pset_leave_out) and a comment names the
 * writing function and how often.  A write by another build of the
 * executable (its PMALLOC_FAULT_BUILD_ID where the executable wrote, or a
 * frame of the executable in PMALLOC_BACKTRACE of another build-id) is
 * refused like a learned entry of it.
 *
 * Reads the journal only; writes stdout or --output.
 */
#define _GNU_SOURCE
#include "ctl.h"
#include "ctl_buildid.h"
#include "ctl_conf_merge.h"
#include "ctl_escape.h"
#include "ctl_quote.h"
#include "ctl_time.h"
#include "ctl_util.h"
#include "ctl_root.h"
#include "ctl_unit_env.h"
#include "policy_lint.h"
#include "ctl_propose_audit.h"
#include "ctl_propose_chain.h"
#include "ctl_propose_read.h"
#include "ctl_propose_set.h"
#include "policy_image.h"
#include "wire.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#define BUILD_ID_HEX (2 * 64 + 1)

/* The count of entries, one line: read, used, and each reason not to. */
static void put_counts(FILE *f, const char *prefix, const struct ptally *t)
{
	fprintf(f, "%sentries read %zu: used %zu, superseded by a later flush %zu, of other runs or loads or "
		   "before --since %zu, another build %zu, not believed %zu, older format %zu, unreadable chain %zu\n",
		   prefix, t->read, t->used, t->superseded, t->earlier, t->other_build, t->forged + t->unbelieved + t->stranger,
		   t->old_format, t->bad_chain);
	if (t->empty_exe)
		fprintf(f, "%sand %zu entries of this build-id without the executable's path (an older shim in a "
			   "chroot): not used\n", prefix, t->empty_exe);
}

/* What the processes' entries say of their delivery and their trigger. */
static void put_processes(FILE *f, const char *prefix, const struct ptally *t)
{
	if (t->unfinished)
		fprintf(f, "%s%zu of the processes sent no entry at exit or exec (killed by a signal, or running "
			   "still): what they learned after their last flush (at most PMALLOC_LEARN_INTERVAL, 10 s by "
			   "default) is missing\n", prefix, t->unfinished);
	if (t->unprotected)
		fprintf(f, "%s%zu of the processes never had a pool protected by a trigger: they learned no write, "
			   "and their contexts are proposed only where other processes' entries agree\n", prefix,
			t->unprotected);
}

static void put_secure(FILE *f, const char *prefix, const struct ptally *t)
{
	if (t->secure_execs)
		fprintf(f, "%s%zu of the processes exec'd a program in secure mode (set-user-ID, set-group-ID or "
			   "file capabilities; PMALLOC_LEARN_EXEC names it): the loader ignored LD_PRELOAD, it ran "
			   "without the shim and learned nothing\n", prefix, t->secure_execs);
}

static void say_tally(const struct ptally *t, const char *exe, const char *build_id)
{
	put_secure(stderr, CTL_NAME ": propose: ", t);
	put_counts(stderr, CTL_NAME ": propose: ", t);
	put_processes(stderr, CTL_NAME ": propose: ", t);
	if (t->forged)
		fprintf(stderr, CTL_NAME ": propose: %zu entries not believed: written by processes that were not "
				"running %s (journald's _EXE)\n", t->forged, exe);
	if (t->unbelieved)
		fprintf(stderr, CTL_NAME ": propose: %zu entries not believed: the journal does not say their "
				"process's uid\n", t->unbelieved);
	if (t->stranger) {
		fprintf(stderr, CTL_NAME ": propose: %zu entries refused: runs of %s by uid", t->stranger, exe);
		for (size_t i = 0; i < t->n_stranger_uid; i++)
			fprintf(stderr, "%s%u", i ? ", " : " ", (unsigned)t->stranger_uid[i]);
		fprintf(stderr, ", not root, yours, one given with --uid or the --unit's User= (another user's "
				"runs decide nothing for yours)\n");
	}
	if (t->other_build) {
		fprintf(stderr, CTL_NAME ": propose: %zu entries refused: another build of %s (build-id ", t->other_build,
			exe);
		ctl_put_str(stderr, t->other_id[0] ? t->other_id : "none", 0);
		fprintf(stderr, "; the file's now: %s)\n", build_id[0] ? build_id : "none");
	}
	if (t->old_format)
		fprintf(stderr, CTL_NAME ": propose: %zu entries without a call chain or run id ignored (an older "
				"shim's learning)\n", t->old_format);
	if (t->bad_chain)
		fprintf(stderr, CTL_NAME ": propose: %zu entries with a call chain that does not parse ignored\n",
			t->bad_chain);
}

static void count_warning(void *ctx, int line, const char *msg)
{
	fprintf(stderr, CTL_NAME ": propose: line %d: %s\n", line, msg);
	(*(size_t *)ctx)++;
}

/* --unit UNIT: the User= of its files (on this system) is trusted; a unit
 * without User= runs as root, trusted already.  -1, or the exit status. */
static int unit_user(const char *arg, struct popts *o)
{
	char unit[256];
	int root_fd, r;
	struct ctl_unit_env env;
	if (snprintf(unit, sizeof(unit), "%s%s", arg, strchr(arg, '.') ? "" : ".service") >= (int)sizeof(unit) ||
	    strchr(arg, '/'))
		return ctl_usage_error("--unit takes a unit name, not", arg);
	if ((r = ctl_root_open("", &root_fd)) < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot open /: %s\n", strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	r = ctl_unit_env_read(root_fd, unit, NULL, &env);
	close(root_fd);
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read unit %s: %s\n", unit, strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	if (!env.fragment) {
		ctl_unit_env_free(&env);
		fprintf(stderr, CTL_NAME ": propose: no unit file for %s\n", unit);
		return CTL_EXIT_FAILURE;
	}
	if (env.user) {
		const struct passwd *pw = getpwnam(env.user);
		char *end;
		errno = 0;
		unsigned long u = pw ? pw->pw_uid : strtoul(env.user, &end, 10);
		if (!pw && (errno || end == env.user || *end || u >= (uid_t)-1)) {
			fprintf(stderr, CTL_NAME ": propose: %s: User=", unit);
			ctl_put_str(stderr, env.user, 0);
			fprintf(stderr, " is no user of this system\n");
			ctl_unit_env_free(&env);
			return CTL_EXIT_FAILURE;
		}
		if (o->n_uids < UIDS_MAX)
			o->uids[o->n_uids++] = (uid_t)u;
	}
	ctl_unit_env_free(&env);
	return -1;
}

static int parse_args(int argc, char **argv, struct popts *o)
{
	int c, ret;
	o->uids[o->n_uids++] = 0;
	if (getuid() != 0)
		o->uids[o->n_uids++] = getuid();
	opterr = 0;
	while ((c = ctl_getopt(argc, argv, "propose", &ret)) != -1) {
		switch (c) {
		case CTL_OPT_UID: {
			const struct passwd *pw = getpwnam(optarg);
			char *end;
			unsigned long u;
			errno = 0;
			u = pw ? pw->pw_uid : strtoul(optarg, &end, 10);
			if (!pw && (errno || end == optarg || *end || u >= (uid_t)-1 || optarg[0] == '-'))
				return ctl_usage_error("--uid takes a user name or number, not", optarg);
			if (o->n_uids == UIDS_MAX)
				return ctl_usage_error("too many --uid:", optarg);
			o->uids[o->n_uids++] = (uid_t)u;
			break;
		}
		case CTL_OPT_RUN:
			if (!propose_run_ok(optarg))
				return ctl_usage_error("--run takes a run id (32 lower-case hex digits), not", optarg);
			if (o->n_runs == RUNS_MAX)
				return ctl_usage_error("too many --run:", optarg);
			o->runs[o->n_runs++] = optarg;
			break;
		case 'e':
			o->exe_arg = optarg;
			break;
		case 'S':
			if (ctl_parse_time(optarg, ctl_now_usec(), &o->since) < 0)
				return ctl_usage_error("invalid --since", optarg);
			break;
		case CTL_OPT_OUTPUT_FILE:
			o->output = optarg;
			break;
		case 'D':
			o->directory = optarg;
			break;
		case CTL_OPT_FILE:
			if (o->n_files == FILES_MAX)
				return ctl_usage_error("too many --file:", optarg);
			o->files[o->n_files++] = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "audit") != 0 && strcmp(optarg, "enforce") != 0)
				return ctl_usage_error("--mode takes audit or enforce, not", optarg);
			o->mode = optarg;
			break;
		case CTL_OPT_UNIT:
			o->unit = optarg;
			break;
		}
	}
	if (ret >= 0)
		return ret;
	if (optind < argc)
		return ctl_usage_error("unexpected argument", argv[optind]);
	if (!o->exe_arg)
		return ctl_usage_error("--exe PATH is required", NULL);
	if (o->directory && o->n_files)
		return ctl_usage_error("--directory and --file exclude each other", NULL);
	if (!o->mode)
		o->mode = "audit";
	if (o->unit) {
		int r = unit_user(o->unit, o);
		if (r >= 0)
			return r;
	}
	return -1;
}

/* The policy element: header comments, the executable, the pools. */
static int render(struct pset *set, uint64_t min_live, const char *exe, const char *build_id, const char *policy,
		  const struct ptally *t, const struct paudits *au, const char *mode, char **ret, size_t *ret_pools)
{
	char *pools = NULL, *total = NULL, *text = NULL;
	size_t pl = 0, tl = 0, len = 0;
	FILE *p = open_memstream(&pools, &pl), *q = open_memstream(&total, &tl);
	if (!p || !q) {
		if (p)
			fclose(p);
		if (q)
			fclose(q);
		free(pools);
		free(total);
		return -ENOMEM;
	}
	*ret_pools = pset_render(set, min_live, p, q);
	fclose(p);
	fclose(q);
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		free(pools);
		free(total);
		return -ENOMEM;
	}
	fprintf(f, "{\n    # Proposed by pmallocctl propose from %zu learned contexts (%zu entries,\n"
		   "    # %zu runs, %zu processes) of ", pset_chains(set), t->used, t->runs, t->processes);
	ctl_conf_quote(f, exe);
	fputs(", build-id ", f);
	ctl_conf_quote(f, build_id[0] ? build_id : "none");
	fputs(".\n", f);
	put_counts(f, "    # ", t);
	put_processes(f, "    # ", t);
	put_secure(f, "    # ", t);
	fputs("    # In total:\n", f);
	fputs(total, f);
	for (size_t i = 0; i < au->n; i++) {
		const struct paudit *a = &au->a[i];
		fputs(a->contexts ? "    # Left out after audit: the site " : "    # Written in audit, no site proposed: ", f);
		ctl_conf_quote(f, a->site);
		fputs(", written by ", f);
		ctl_conf_quote(f, a->symbol);
		fprintf(f, " %" PRIu64 " times in %zu processes", a->writes, a->processes);
		if (a->contexts)
			fprintf(f, " (%zu contexts)", a->contexts);
		fputs(".\n", f);
	}
	if (strcmp(mode, "audit") == 0)
		fputs("    # mode = \"audit\": a write to protected memory is reported once per site\n"
		      "    # and process and let through.  pmallocctl ready says when it is time for\n"
		      "    # pmallocctl propose --mode enforce.\n", f);
	fputs("    # Each pool takes what its sites allocate until its trigger and none\n"
	      "    # after (take = \"until-trigger\"): a path learning did not see goes to\n"
	      "    # the heap, never to protected memory.\n"
	      "    name = ", f);
	ctl_conf_quote(f, policy);
	fputs(";\n    match = { exe = [ ", f);
	ctl_conf_quote(f, exe);
	fprintf(f, " ]; };\n    mode = \"%s\";\n    pools = (%s\n    );\n  }", mode, pools);
	free(pools);
	free(total);
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	return 0;
}

/* The policy's name: the learn policy's, else the program's file name
 * made a name. */
static void policy_name(const struct pread *rd, const char *exe, char *out, size_t len)
{
	for (size_t i = rd->n; i-- > 0;)
		if (rd->e[i].selected && ctl_conf_ident(rd->e[i].policy, out, len))
			return;
	const char *b = strrchr(exe, '/');
	ctl_conf_ident(b ? b + 1 : exe, out, len);
	if (!out[0])
		snprintf(out, len, "proposed");
}

int ctl_cmd_propose(int argc, char **argv)
{
	struct popts o = { 0 };
	int ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	char exe[PATH_MAX], build_id[BUILD_ID_HEX];
	if (!realpath(o.exe_arg, exe)) {
		fprintf(stderr, CTL_NAME ": propose: ");
		ctl_put_str(stderr, o.exe_arg, 0);
		fprintf(stderr, ": %s\n", strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	int r = ctl_file_build_id(exe, build_id, sizeof(build_id));
	if (r < 0 && r != -ENOEXEC) {
		fprintf(stderr, CTL_NAME ": propose: %s: %s\n", exe, strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	struct pread rd = { 0 };
	struct ptally t = { 0 };
	struct paudits au = { 0 };
	struct pset *set = pset_new();
	char *text = NULL, *whole = NULL;
	int status = CTL_EXIT_FAILURE;
	r = set ? propose_read_entries(&o, exe, &rd) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read the journal: %s\n", strerror(-r));
		goto out;
	}
	r = propose_select_entries(&o, build_id, &rd, &t);
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read the journal: %s\n", strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < rd.n; i++) {
		if (!rd.e[i].selected)
			continue;
		r = pset_add(set, rd.e[i].pool, rd.e[i].triggers, rd.e[i].chain, &rd.e[i].c);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			rd.e[i].selected = false;
			t.bad_chain++;
		} else {
			t.used++;
		}
	}
	t.read = rd.n;
	t.empty_exe = propose_count_empty_exe(&rd, build_id, o.since);
	{
		size_t accounted = t.forged + t.unbelieved + t.stranger + t.other_build + t.old_format + t.bad_chain +
				   t.used + t.superseded;
		t.earlier = t.read > accounted ? t.read - accounted : 0;
	}
	say_tally(&t, exe, build_id);
	sd_journal *aj = NULL;
	r = propose_open_journal(&o, &aj);
	if (r >= 0) {
		r = paudit_read(aj, exe, build_id, o.since, o.uids, o.n_uids, t.run_uids, t.n_run_uids, &au);
		sd_journal_close(aj);
	}
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read the journal's audit reports: %s\n", strerror(-r));
		goto out;
	}
	paudit_say(&au, exe);
	if (au.n && t.used) {
		/* A choice tells each context's site; those audit saw written
		 * are then taken as written.  Until no more are: the next choice
		 * (other wrappers) may name a written site's function again,
		 * by a context whose site was another function before. */
		for (size_t round = 0, marked = 1; marked && round < 16; round++) {
			char *scratch = NULL;
			size_t len = 0;
			FILE *sf = open_memstream(&scratch, &len);
			if (!sf)
				goto out;
			pset_render(set, 0, sf, sf);
			fclose(sf);
			free(scratch);
			marked = 0;
			for (size_t i = 0; i < au.n; i++) {
				size_t m = pset_leave_out(set, au.a[i].site);
				au.a[i].contexts += m;
				marked += m;
			}
		}
	}
	for (size_t k = 0; k < o.n_runs; k++) {
		bool found = false;
		for (size_t i = 0; i < rd.n && !found; i++)
			found = rd.e[i].selected && strcmp(rd.e[i].run, o.runs[k]) == 0;
		if (!found)
			fprintf(stderr, CTL_NAME ": propose: run %s: no entry of %s to use\n", o.runs[k], exe);
	}
	if (t.used == 0) {
		fprintf(stderr, CTL_NAME ": propose: nothing learned for %s to use (run it under the policy "
				"pmallocctl learn writes first)\n", exe);
		goto out;
	}
	char name[256];
	size_t pools = 0;
	policy_name(&rd, exe, name, sizeof(name));
	/* pmallocd hands a policy out in one message: a program with many
	 * contexts gets its smallest sites left out until it fits. */
	for (uint64_t min_live = 0;; min_live = min_live ? min_live * 2 : 16) {
		struct policy_set *ps = NULL;
		char err[POLICY_ERR_MAX];
		void *img = NULL;
		size_t img_len = 0, warnings = 0;
		free(text);
		free(whole);
		text = whole = NULL;
		r = render(set, min_live, exe, build_id, name, &t, &au, o.mode, &text, &pools);
		if (r < 0)
			goto out;
		if (pools == 0) {
			/* The message first, as every other; then what was learned,
			 * a commented policy that says why each context was left out. */
			fprintf(stderr, CTL_NAME ": propose: no context of %s can be protected without being "
					"written; what was learned:\n", exe);
			fputs(text, stderr);
			goto out;
		}
		/* Checked whole, as pmallocctl check would, before anything is written. */
		if (asprintf(&whole, "# Proposed by pmallocctl propose; pmallocctl check FILE validates it.\n"
				     "version = 1;\npolicies = (\n  %s\n);\n", text) < 0) {
			whole = NULL;
			goto out;
		}
		if (policy_set_load_string(whole, "proposal", &ps, err, sizeof(err)) < 0) {
			fprintf(stderr, CTL_NAME ": propose: the proposal does not load (a bug): %s\n", err);
			goto out;
		}
		policy_lint(ps, count_warning, &warnings);
		r = policy_image_compile(ps, &ps->policies[0], &img, &img_len);
		free(img);
		policy_set_free(ps);
		if (warnings)
			goto out;
		if (r == 0 && img_len <= PMW_MAX_MSG - sizeof(struct pmw_policy))
			break;
		if (r < 0 && r != -E2BIG) {
			fprintf(stderr, CTL_NAME ": propose: the proposal does not compile (a bug): %s\n", strerror(-r));
			goto out;
		}
		if (min_live > UINT64_MAX / 4) {
			fprintf(stderr, CTL_NAME ": propose: the proposal does not fit what pmallocd hands out\n");
			goto out;
		}
	}
	if (o.output) {
		if (ctl_conf_put_policy(o.output, exe, text, "propose") == 0)
			status = CTL_EXIT_OK;
	} else {
		fputs(whole, stdout);
		if (fflush(stdout) == 0)
			status = CTL_EXIT_OK;
	}
out:
	free(text);
	free(whole);
	propose_free_entries(&rd);
	paudit_free(&au);
	pset_free(set);
	return status;
}
