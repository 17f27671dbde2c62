/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_ready.c - pmallocctl ready: is a policy in audit ready to enforce?
 *
 * Owns the evidence and the verdict.  Evidence, from the journal, about
 * the policy (PMALLOC_POLICY) since it was first handed out in audit mode
 * (pmallocd's "policy handed" entry, PMALLOC_MODE=audit): the processes it
 * covered per role (PMALLOC_ROLE; none: "child" for a process pmallocd
 * says was forked from another, PMALLOC_VIA_PID, else main), the life-cycle
 * events seen per role: reloads (a "pool protected" entry whose trigger is
 * "reload", one per process or parent and generation: the workers a reload
 * starts count as one), respawns (a process of a role other than main
 * whose first protect is a later generation than 1 and not a reload's: it
 * was forked after its parent's pools were protected, as a worker started
 * in place of a dead one is), stops (pmallocd's "exiting" entries: exit(3)
 * or main's return began; death by a signal is no stop), the sites written in audit
 * (PMALLOC_OBJECT_SITE of audit-mode violations) and whether the policy
 * file still names them.  Only pmallocd's entries are believed for
 * hand-outs and protects (journald's _UID, _COMM, _EXE), pmallocd's or the
 * process's own for violations.
 *
 * Verdict (documented in pmallocctl(8)): ready when the policy file's
 * policy is in audit mode, it was handed out in audit mode at least
 * --min-time ago (default 24 h), and no site it still names was written
 * in audit.  Reloads and respawns not seen are said as notes (pmalloc
 * cannot tell whether the service does them): run pmallocctl exercise.
 * Reads only; exit 0 ready, 1 not ready.
 */
#define _GNU_SOURCE
#include "ctl.h"
#include "msgid.h"
#include "ctl_learned.h"
#include "ctl_time.h"
#include "ctl_escape.h"
#include "ctl_util.h"
#include "ctl_writer.h"
#include "ctl_vio.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>

#define READY_MIN_TIME_DEFAULT (24ULL * 3600 * 1000000)
#define ROLES_MAX 16
#define SITES_MAX 256
#define PIDS_MAX 4096

struct rrole {
	char name[64];
	size_t processes, reloads, respawns, stops;
};

struct rsite {
	char *site, *symbol;
	uint64_t writes;
	bool named;
};

struct rpid {
	char key[48];                /* host/pid */
	uint64_t first;
	int role;
	bool protected;              /* a protect of it seen (the first tells a respawn) */
};

#define RELOADS_MAX 1024
struct rreload {
	char key[64];                /* host/pid (the main's, or the parent's of a worker)/generation */
	int role;
};

struct ready {
	const struct policy *p;
	const char *exe;             /* --exe's real path; NULL: the policy's globs */
	uint64_t first_audit, now, min_time, since;
	struct rrole roles[ROLES_MAX];
	size_t n_roles;
	struct rsite sites[SITES_MAX];
	size_t n_sites;
	struct rpid *pids;
	size_t n_pids;
	struct rreload *reloads;
	size_t n_reloads;
	size_t handed;
};

static int role_of(struct ready *rd, const char *name)
{
	if (!name[0])
		name = "main";
	for (size_t i = 0; i < rd->n_roles; i++)
		if (strcmp(rd->roles[i].name, name) == 0)
			return (int)i;
	if (rd->n_roles == ROLES_MAX)
		return (int)rd->n_roles - 1;
	snprintf(rd->roles[rd->n_roles].name, sizeof(rd->roles[0].name), "%s", name);
	return (int)rd->n_roles++;
}

/* The process's record (first seen at usec), new or not. */
static struct rpid *pid_of(struct ready *rd, const char *host, const char *pid, uint64_t usec, int role, bool *is_new)
{
	char key[48];
	snprintf(key, sizeof(key), "%.16s/%s", host, pid);
	*is_new = false;
	for (size_t i = 0; i < rd->n_pids; i++)
		if (strcmp(rd->pids[i].key, key) == 0)
			return &rd->pids[i];
	if (rd->n_pids == PIDS_MAX)
		return NULL;
	struct rpid *p = &rd->pids[rd->n_pids++];
	snprintf(p->key, sizeof(p->key), "%s", key);
	p->first = usec;
	p->role = role;
	rd->roles[role].processes++;
	*is_new = true;
	return p;
}

/* Does the policy still name the function of site ("function+0xOFF")? */
static bool policy_names(const struct policy *p, const char *site)
{
	size_t n = strcspn(site, "+");
	char fn[256];
	snprintf(fn, sizeof(fn), "%.*s", (int)(n < sizeof(fn) ? n : sizeof(fn) - 1), site);
	for (size_t i = 0; i < p->n_pools; i++)
		for (size_t k = 0; k < p->pools[i].n_sites; k++) {
			const struct policy_site *s = &p->pools[i].sites[k];
			if (!s->by_offset && fnmatch(s->function, fn, 0) == 0)
				return true;
		}
	return false;
}

static bool exe_fits(const struct ready *rd, const char *exe)
{
	if (rd->exe)
		return strcmp(rd->exe, exe) == 0;
	for (size_t i = 0; i < rd->p->n_match_exe; i++)
		if (fnmatch(rd->p->match_exe[i], exe, 0) == 0)
			return true;
	return false;
}

static void ready_reset(struct ready *rd)
{
	for (size_t i = 0; i < rd->n_sites; i++) {
		free(rd->sites[i].site);
		free(rd->sites[i].symbol);
	}
	rd->n_sites = rd->n_roles = rd->n_pids = rd->handed = rd->n_reloads = 0;
	rd->first_audit = 0;
}

/* A reload of role seen (once per key: every pool a process protects at
 * one reload, every worker a reload starts). */
static void reload_seen(struct ready *rd, const char *host, const char *pid, const char *gen, int role)
{
	char key[64];
	snprintf(key, sizeof(key), "%.16s/%.12s/%.20s", host, pid, gen);
	for (size_t i = 0; i < rd->n_reloads; i++)
		if (rd->reloads[i].role == role && strcmp(rd->reloads[i].key, key) == 0)
			return;
	if (rd->n_reloads == RELOADS_MAX)
		return;
	snprintf(rd->reloads[rd->n_reloads].key, sizeof(key), "%s", key);
	rd->reloads[rd->n_reloads++].role = role;
	rd->roles[role].reloads++;
}

enum {
	R_MID, R_UID, R_COMM, R_EXE, R_UNIT, R_PID, R_OPID, R_MODE, R_ROLE, R_GEN, R_SITE, R_SYM, R_HOST, R_PEXE,
	R_BACKTRACE, R_VIA, R_TRIGGER, R_N
};
static const char *const ready_fields[R_N] = {
	[R_MID] = "MESSAGE_ID", [R_UID] = "_UID", [R_COMM] = "_COMM", [R_EXE] = "_EXE", [R_UNIT] = "_SYSTEMD_UNIT",
	[R_PID] = "_PID", [R_OPID] = "OBJECT_PID", [R_MODE] = "PMALLOC_MODE", [R_ROLE] = "PMALLOC_ROLE",
	[R_GEN] = "PMALLOC_GENERATION", [R_SITE] = "PMALLOC_OBJECT_SITE", [R_SYM] = "PMALLOC_FAULT_SYMBOL",
	[R_HOST] = "_MACHINE_ID", [R_PEXE] = "PMALLOC_EXE", [R_BACKTRACE] = "PMALLOC_BACKTRACE",
	[R_VIA] = "PMALLOC_VIA_PID", [R_TRIGGER] = "PMALLOC_TRIGGER",
};

static int read_evidence(struct ready *rd)
{
	sd_journal *j;
	char *match = NULL;
	int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
	if (r < 0)
		return r;
	if (asprintf(&match, "PMALLOC_POLICY=%s", rd->p->name) < 0)
		match = NULL;
	if (!match || (r = sd_journal_add_match(j, match, 0)) < 0 ||
	    (r = rd->since ? sd_journal_seek_realtime_usec(j, rd->since) : sd_journal_seek_head(j)) < 0) {
		free(match);
		sd_journal_close(j);
		return r < 0 ? r : -ENOMEM;
	}
	free(match);
	while ((r = sd_journal_next(j)) > 0) {
		char *v[R_N];
		uint64_t usec = 0;
		if ((r = ctl_learned_fields(j, ready_fields, R_N, v)) < 0)
			break;
		(void)sd_journal_get_realtime_usec(j, &usec);
		if (!exe_fits(rd, v[R_PEXE])) {
			for (size_t k = 0; k < R_N; k++)
				free(v[k]);
			continue;
		}
		bool by_daemon = vio_by_pmallocd(v[R_UID], v[R_COMM], v[R_EXE], v[R_UNIT]);
		bool handed = strcmp(v[R_MID], MID_HANDED) == 0, prot = strcmp(v[R_MID], MID_PROTECTED) == 0;
		bool vio = strcmp(v[R_MID], MID_VIOLATION) == 0, exiting = strcmp(v[R_MID], MID_EXITING) == 0;
		/* Learning again: what came before is about another policy. */
		if (handed && by_daemon && strcmp(v[R_MODE], "learn") == 0)
			ready_reset(rd);
		if (handed && by_daemon && strcmp(v[R_MODE], "audit") == 0 && !rd->first_audit)
			rd->first_audit = usec;
		bool believed = (handed || prot || exiting) ? by_daemon
						 : vio && (by_daemon || (v[R_PID][0] && strcmp(v[R_PID], v[R_OPID]) == 0));
		if (rd->first_audit && believed && v[R_OPID][0]) {
			/* No PMALLOC_ROLE (an older pmallocd): a process pmallocd
			 * knows as forked from another (PMALLOC_VIA_PID) is a child. */
			int role = role_of(rd, v[R_ROLE][0] ? v[R_ROLE] : v[R_VIA][0] ? "child" : "main");
			bool is_new, is_main = strcmp(rd->roles[role].name, "main") == 0;
			struct rpid *p = pid_of(rd, v[R_HOST], v[R_OPID], usec, role, &is_new);
			bool reload = prot && strcmp(v[R_TRIGGER], "reload") == 0;
			rd->handed += handed;
			if (reload)
				reload_seen(rd, v[R_HOST], is_main || !v[R_VIA][0] ? v[R_OPID] : v[R_VIA], v[R_GEN], role);
			if (prot && p && !p->protected) {
				p->protected = true;
				if (!is_main && !reload && ctl_learned_num(v[R_GEN]) > 1)
					rd->roles[role].respawns++;
			}
			if (exiting)
				rd->roles[role].stops++;
			if (vio && strcmp(v[R_MODE], "audit") == 0 && v[R_SITE][0]) {
				struct rsite *s = NULL;
				for (size_t i = 0; i < rd->n_sites && !s; i++)
					if (strcmp(rd->sites[i].site, v[R_SITE]) == 0)
						s = &rd->sites[i];
				if (!s && rd->n_sites < SITES_MAX) {
					s = &rd->sites[rd->n_sites++];
					char w[256];
					ctl_audit_writer(v[R_BACKTRACE], v[R_PEXE], v[R_SYM], w, sizeof(w));
					s->site = v[R_SITE];
					s->symbol = strdup(w);
					v[R_SITE] = NULL;
					s->named = policy_names(rd->p, s->site);
				}
				if (s)
					s->writes++;
			}
		}
		for (size_t k = 0; k < R_N; k++)
			free(v[k]);
	}
	sd_journal_close(j);
	return r < 0 ? r : 0;
}

/* "24h", "30min", "90s", "2d", "1h30min", "0": µs; -EINVAL. */
static int parse_duration(const char *s, uint64_t *ret)
{
	static const struct {
		const char *unit;
		uint64_t usec;
	} units[] = { { "min", 60000000ULL }, { "ms", 1000ULL }, { "s", 1000000ULL }, { "h", 3600000000ULL },
		      { "d", 86400000000ULL }, { "", 1000000ULL } };
	uint64_t total = 0;
	if (!*s)
		return -EINVAL;
	while (*s) {
		char *end;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		unsigned long long n = strtoull(s, &end, 10);
		size_t i = 0;
		for (; i < sizeof(units) / sizeof(units[0]); i++)
			if (strncmp(end, units[i].unit, strlen(units[i].unit)) == 0)
				break;
		if (i == sizeof(units) / sizeof(units[0]) || (!units[i].unit[0] && *end))
			return -EINVAL;
		total += n * units[i].usec;
		s = end + strlen(units[i].unit);
	}
	*ret = total;
	return 0;
}

static void put_duration(FILE *f, uint64_t usec)
{
	uint64_t s = usec / 1000000;
	if (s >= 3600)
		fprintf(f, "%" PRIu64 "h%02" PRIu64 "min", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		fprintf(f, "%" PRIu64 "min%02" PRIu64 "s", s / 60, s % 60);
	else
		fprintf(f, "%" PRIu64 "s", s);
}

/* The reasons (one a line, in reasons) and notes; whether ready. */
static bool verdict(const struct ready *rd, FILE *reasons, FILE *notes)
{
	bool ready = true;
	if (rd->p->mode != POLICY_MODE_AUDIT) {
		fprintf(reasons, "the policy file has policy \"%s\" in %s mode, not audit\n", rd->p->name,
			policy_mode_name(rd->p->mode));
		ready = false;
	}
	if (!rd->first_audit) {
		fputs("no process has been handed the policy in audit mode yet (pmallocd's journal entries)\n", reasons);
		return false;
	}
	uint64_t in_audit = rd->now > rd->first_audit ? rd->now - rd->first_audit : 0;
	if (in_audit < rd->min_time) {
		fputs("in audit for ", reasons);
		put_duration(reasons, in_audit);
		fputs(", less than ", reasons);
		put_duration(reasons, rd->min_time);
		fputs(" (--min-time)\n", reasons);
		ready = false;
	}
	for (size_t i = 0; i < rd->n_sites; i++)
		if (rd->sites[i].named) {
			fputs("site ", reasons);
			ctl_put_str(reasons, rd->sites[i].site, 0);
			fputs(" was written in audit (by ", reasons);
			ctl_put_str(reasons, rd->sites[i].symbol && rd->sites[i].symbol[0] ? rd->sites[i].symbol : "?", 0);
			fprintf(reasons, ", %" PRIu64 " reports) and the policy still names it: run pmallocctl propose "
					 "again\n", rd->sites[i].writes);
			ready = false;
		}
	for (size_t i = 0; i < rd->n_roles; i++) {
		bool is_main = strcmp(rd->roles[i].name, "main") == 0;
		if (!rd->roles[i].reloads)
			fprintf(notes, "role %s: no reload seen (pmallocctl exercise UNIT --reload, where the service "
				       "reloads)\n", rd->roles[i].name);
		if (!is_main && !rd->roles[i].respawns)
			fprintf(notes, "role %s: no respawn seen (pmallocctl exercise UNIT --respawn)\n",
				rd->roles[i].name);
		if (is_main && !rd->roles[i].stops)
			fprintf(notes, "role main: no clean stop seen (pmallocctl exercise UNIT --stop)\n");
	}
	bool children = false;
	for (size_t i = 0; i < rd->n_roles; i++)
		children |= strcmp(rd->roles[i].name, "main") != 0;
	if (!children)
		fputs("no worker process seen (where the service forks workers: pmallocctl exercise UNIT --respawn)\n",
		      notes);
	return ready;
}

static char *memtext(FILE *f, char *buf)
{
	fclose(f);
	return buf;
}

static void json_str(FILE *f, const char *s)
{
	ctl_put_json(f, s, strlen(s));
}

/* Each line of text as a JSON string, comma separated. */
static void json_lines(FILE *f, const char *text)
{
	bool first = true;
	for (const char *l = text; *l;) {
		size_t n = strcspn(l, "\n");
		fputs(first ? "" : ", ", f);
		ctl_put_json(f, l, n);
		first = false;
		l += n + (l[n] == '\n');
	}
}

int ctl_cmd_ready(int argc, char **argv)
{
	const char *exe_arg = NULL, *config = CTL_DEFAULT_CONF;
	bool json = false;
	struct ready rd = { .min_time = READY_MIN_TIME_DEFAULT };
	int c, ret;
	opterr = 0;
	while ((c = ctl_getopt(argc, argv, "ready", &ret)) != -1) {
		switch (c) {
		case 'e':
			exe_arg = optarg;
			break;
		case CTL_OPT_CONFIG:
			config = optarg;
			break;
		case 't':
			if (parse_duration(optarg, &rd.min_time) < 0)
				return ctl_usage_error("--min-time takes a duration (24h, 30min, 90s), not", optarg);
			break;
		case 'S':
			if (ctl_parse_time(optarg, ctl_now_usec(), &rd.since) < 0)
				return ctl_usage_error("invalid --since", optarg);
			break;
		case 'j':
			json = true;
			break;
		}
	}
	if (ret >= 0)
		return ret;
	const char *name = optind < argc ? argv[optind] : NULL;
	if (optind + 1 < argc)
		return ctl_usage_error("unexpected argument", argv[optind + 1]);
	if (!!name == !!exe_arg)
		return ctl_usage_error("give either --exe PATH or a POLICY name", NULL);
	struct policy_set *set = NULL;
	char err[POLICY_ERR_MAX], exe[PATH_MAX];
	if (policy_set_load_file(config, &set, err, sizeof(err)) < 0) {
		fprintf(stderr, CTL_NAME ": ready: %s\n", err);
		return CTL_EXIT_FAILURE;
	}
	if (exe_arg) {
		if (!realpath(exe_arg, exe)) {
			fprintf(stderr, CTL_NAME ": ready: %s: %s\n", exe_arg, strerror(errno));
			policy_set_free(set);
			return CTL_EXIT_FAILURE;
		}
		for (size_t i = 0; i < set->n_policies && !rd.p; i++)
			for (size_t k = 0; k < set->policies[i].n_match_exe && !rd.p; k++)
				if (fnmatch(set->policies[i].match_exe[k], exe, 0) == 0)
					rd.p = &set->policies[i];
	} else {
		for (size_t i = 0; i < set->n_policies && !rd.p; i++)
			if (strcmp(set->policies[i].name, name) == 0)
				rd.p = &set->policies[i];
	}
	if (!rd.p) {
		fprintf(stderr, CTL_NAME ": ready: no policy %s ", exe_arg ? "matches" : "named");
		ctl_put_str(stderr, exe_arg ? exe : name, 0);
		fprintf(stderr, " in %s\n", config);
		policy_set_free(set);
		return CTL_EXIT_FAILURE;
	}
	rd.exe = exe_arg ? exe : NULL;
	rd.pids = calloc(PIDS_MAX, sizeof(*rd.pids));
	rd.reloads = calloc(RELOADS_MAX, sizeof(*rd.reloads));
	rd.now = ctl_now_usec();
	int r = rd.pids && rd.reloads ? read_evidence(&rd) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": ready: cannot read the journal: %s\n", strerror(-r));
		free(rd.pids);
		free(rd.reloads);
		policy_set_free(set);
		return CTL_EXIT_FAILURE;
	}
	char *rb = NULL, *nb = NULL;
	size_t rl = 0, nl = 0;
	FILE *rf = open_memstream(&rb, &rl), *nf = open_memstream(&nb, &nl);
	if (!rf || !nf)
		return CTL_EXIT_FAILURE;
	bool ready = verdict(&rd, rf, nf);
	memtext(rf, rb);
	memtext(nf, nb);
	uint64_t in_audit = rd.first_audit && rd.now > rd.first_audit ? rd.now - rd.first_audit : 0;
	if (json) {
		fputs("{\"policy\": ", stdout);
		json_str(stdout, rd.p->name);
		printf(", \"mode\": \"%s\", \"ready\": %s, ", policy_mode_name(rd.p->mode), ready ? "true" : "false");
		printf("\"in_audit_since_usec\": %" PRIu64 ", \"time_in_audit_s\": %" PRIu64 ", \"min_time_s\": %" PRIu64
		       ", \"roles\": [", rd.first_audit, in_audit / 1000000, rd.min_time / 1000000);
		for (size_t i = 0; i < rd.n_roles; i++) {
			fputs(i ? ", {\"role\": " : "{\"role\": ", stdout);
			json_str(stdout, rd.roles[i].name);
			printf(", \"processes\": %zu, \"reloads\": %zu, \"respawns\": %zu, \"stops\": %zu}",
			       rd.roles[i].processes, rd.roles[i].reloads, rd.roles[i].respawns, rd.roles[i].stops);
		}
		fputs("], \"sites_written\": [", stdout);
		for (size_t i = 0; i < rd.n_sites; i++) {
			fputs(i ? ", {\"site\": " : "{\"site\": ", stdout);
			json_str(stdout, rd.sites[i].site);
			fputs(", \"function\": ", stdout);
			json_str(stdout, rd.sites[i].symbol ? rd.sites[i].symbol : "");
			printf(", \"reports\": %" PRIu64 ", \"still_named\": %s}", rd.sites[i].writes,
			       rd.sites[i].named ? "true" : "false");
		}
		fputs("], \"reasons\": [", stdout);
		json_lines(stdout, rb);
		fputs("], \"notes\": [", stdout);
		json_lines(stdout, nb);
		fputs("]}\n", stdout);
	} else {
		printf("policy \"%s\" (%s mode in %s)\n", rd.p->name, policy_mode_name(rd.p->mode), config);
		printf("  in audit: ");
		if (rd.first_audit)
			put_duration(stdout, in_audit);
		else
			fputs("never handed out in audit mode", stdout);
		printf(" (required: ");
		put_duration(stdout, rd.min_time);
		printf(")\n");
		for (size_t i = 0; i < rd.n_roles; i++)
			printf("  role %s: %zu processes, %zu reloads, %zu respawns, %zu stops seen\n", rd.roles[i].name,
			       rd.roles[i].processes, rd.roles[i].reloads, rd.roles[i].respawns, rd.roles[i].stops);
		for (size_t i = 0; i < rd.n_sites; i++) {
			fputs("  written in audit: ", stdout);
			ctl_put_str(stdout, rd.sites[i].site, 0);
			fputs(" by ", stdout);
			ctl_put_str(stdout, rd.sites[i].symbol && rd.sites[i].symbol[0] ? rd.sites[i].symbol : "?", 0);
			printf(", %" PRIu64 " reports; %s\n", rd.sites[i].writes,
			       rd.sites[i].named ? "still named by the policy" : "no longer in the policy");
		}
		printf("%s\n", ready ? "ready: pmallocctl propose --mode enforce" : "not ready:");
		for (const char *l = rb; *l;) {
			size_t n = strcspn(l, "\n");
			printf("  - %.*s\n", (int)n, l);
			l += n + (l[n] == '\n');
		}
		for (const char *l = nb; *l;) {
			size_t n = strcspn(l, "\n");
			printf("  note: %.*s\n", (int)n, l);
			l += n + (l[n] == '\n');
		}
	}
	free(rb);
	free(nb);
	for (size_t i = 0; i < rd.n_sites; i++) {
		free(rd.sites[i].site);
		free(rd.sites[i].symbol);
	}
	free(rd.pids);
	free(rd.reloads);
	policy_set_free(set);
	return ready ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
