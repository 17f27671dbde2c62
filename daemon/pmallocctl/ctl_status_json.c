/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_status_json.c - "pmallocctl status --json": the status records
 * (ctl_status_data.h) as one JSON object, for scripts and monitoring.
 * Numbers are JSON numbers, durations microseconds (keys ending in
 * "_usec"), flags booleans, and nothing is cut: every record pmallocd
 * sent is in it.  The schema is pmallocctl(8)'s and
 * man/pmallocctl-status.schema.json's (keep the three in step).
 *
 * Must never trust a string (whoever listens on the socket wrote it):
 * every one goes through ctl_put_json().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "role.h"
#include "ctl.h"
#include "ctl_escape.h"
#include "ctl_status_data.h"

struct json {
	FILE *f;
	bool first;                  /* no member yet in the object or array open */
};

static void sep(struct json *j)
{
	if (!j->first)
		fputc(',', j->f);
	j->first = false;
}

static void key(struct json *j, const char *name)
{
	sep(j);
	fprintf(j->f, "\"%s\":", name);
}

static void open_obj(struct json *j, const char *name)
{
	if (name)
		key(j, name);
	else
		sep(j);
	fputc('{', j->f);
	j->first = true;
}

static void open_arr(struct json *j, const char *name)
{
	key(j, name);
	fputc('[', j->f);
	j->first = true;
}

static void close_obj(struct json *j)
{
	fputc('}', j->f);
	j->first = false;
}

static void close_arr(struct json *j)
{
	fputc(']', j->f);
	j->first = false;
}

static void num(struct json *j, const char *name, uint64_t v)
{
	key(j, name);
	fprintf(j->f, "%" PRIu64, v);
}

/* A number, or null for PMW_SR_NONE. */
static void num_or_null(struct json *j, const char *name, uint64_t v)
{
	key(j, name);
	if (v == PMW_SR_NONE)
		fputs("null", j->f);
	else
		fprintf(j->f, "%" PRIu64, v);
}

static void boolean(struct json *j, const char *name, uint64_t v)
{
	key(j, name);
	fputs(v ? "true" : "false", j->f);
}

/* A string, or null when absent (NULL, or empty and empty_null). */
static void str(struct json *j, const char *name, const char *s, bool empty_null)
{
	key(j, name);
	if (!s || (empty_null && !*s))
		fputs("null", j->f);
	else
		ctl_put_json(j->f, s, strlen(s));
}

static void daemon_obj(struct json *j, const uint64_t *n, const char *const *s)
{
	open_obj(j, "pmallocd");
	num(j, "pid", n[PMW_SR_D_PID]);
	num(j, "running_usec", n[PMW_SR_D_RUNNING_USEC]);
	close_obj(j);
	open_obj(j, "policy_file");
	str(j, "path", s[PMW_SR_D_POLICY_FILE], false);
	num(j, "generation", n[PMW_SR_D_GENERATION]);
	num(j, "policies", n[PMW_SR_D_POLICIES]);
	num(j, "loaded_usec", n[PMW_SR_D_LOADED_USEC]);
	num(j, "reloads_refused", n[PMW_SR_D_RELOADS_REFUSED]);
	close_obj(j);
	open_obj(j, "socket");
	str(j, "path", s[PMW_SR_D_SOCKET], false);
	boolean(j, "socket_activation", n[PMW_SR_D_SOCKET_ACTIVATED]);
	close_obj(j);
	open_obj(j, "clients");
	num(j, "connected", n[PMW_SR_D_CLIENTS]);
	num(j, "max", n[PMW_SR_D_MAX_CLIENTS]);
	num(j, "accepted", n[PMW_SR_D_ACCEPTED]);
	num(j, "policies_handed_out", n[PMW_SR_D_HANDED]);
	num(j, "without_policy", n[PMW_SR_D_NO_POLICY]);
	num(j, "status_requests", n[PMW_SR_D_STATUS_REQUESTS]);
	close_obj(j);
	open_obj(j, "messages");
	num(j, "protects", n[PMW_SR_D_PROTECTS]);
	num(j, "violation_reports", n[PMW_SR_D_REPORTS]);
	num(j, "protect_requests", n[PMW_SR_D_PROTECT_REQUESTS]);
	num(j, "protect_requests_sent", n[PMW_SR_D_PROTECT_SENT]);
	close_obj(j);
	open_obj(j, "dropped");
	num(j, "malformed", n[PMW_SR_D_MALFORMED]);
	num(j, "oversized", n[PMW_SR_D_OVERSIZED]);
	num(j, "out_of_order", n[PMW_SR_D_OUT_OF_ORDER]);
	num(j, "passing_fds", n[PMW_SR_D_FDS_PASSED]);
	num(j, "silent", n[PMW_SR_D_SILENT]);
	num(j, "vanished", n[PMW_SR_D_VANISHED]);
	num(j, "unidentified", n[PMW_SR_D_UNIDENTIFIED]);
	num(j, "forged", n[PMW_SR_D_FORGED]);
	num(j, "over_client_limit", n[PMW_SR_D_OVER_CLIENT_LIMIT]);
	num(j, "wrong_protocol_version", n[PMW_SR_D_WRONG_VERSION]);
	num(j, "accept_errors", n[PMW_SR_D_ACCEPT_ERRORS]);
	close_obj(j);
	open_obj(j, "budgets");
	num(j, "users", n[PMW_SR_D_BUDGET_USERS]);
	num(j, "connections_per_user", n[PMW_SR_D_BUDGET_USER_CONNECTIONS]);
	num(j, "connections_all_users", n[PMW_SR_D_BUDGET_ALL_CONNECTIONS]);
	num(j, "journal_entries_per_user", n[PMW_SR_D_BUDGET_USER_ENTRIES]);
	num(j, "interval_usec", n[PMW_SR_D_BUDGET_INTERVAL_USEC]);
	num(j, "connections_refused", n[PMW_SR_D_BUDGET_REFUSED_CONNECTIONS]);
	num(j, "untracked_children_messages", n[PMW_SR_D_BUDGET_REFUSED_CHILDREN]);
	num(j, "journal_entries_not_written", n[PMW_SR_D_BUDGET_DROPPED_ENTRIES]);
	num(j, "summaries", n[PMW_SR_D_BUDGET_SUMMARIES]);
	close_obj(j);
	open_obj(j, "journal");
	num(j, "written", n[PMW_SR_D_JOURNAL_SENT]);
	num(j, "written_late", n[PMW_SR_D_JOURNAL_SENT_LATE]);
	num(j, "waiting", n[PMW_SR_D_JOURNAL_QUEUED]);
	boolean(j, "journald_not_reading", n[PMW_SR_D_JOURNAL_STALLED]);
	num(j, "dropped_queue_full", n[PMW_SR_D_JOURNAL_DROPPED_FULL]);
	num(j, "dropped_no_journald", n[PMW_SR_D_JOURNAL_DROPPED_ABSENT]);
	num(j, "dropped_not_sendable", n[PMW_SR_D_JOURNAL_DROPPED_ERROR]);
	close_obj(j);
}

static void rule_obj(struct json *j, const struct ctl_srec *r)
{
	uint64_t state = r->nums[PMW_SR_R_STATE];

	open_obj(j, NULL);
	str(j, "kind", ctl_rule_kind(r->nums[PMW_SR_R_KIND]), false);
	str(j, "rule", r->strs[PMW_SR_R_TEXT], false);
	boolean(j, "resolved", state == PMW_ROW_RESOLVED);
	boolean(j, "waiting", state == PMW_ROW_NOT_LOADED);
	boolean(j, "dropped", state == PMW_ROW_DROPPED);
	str(j, "why", ctl_rule_why(state), false);
	close_obj(j);
}

static void process_obj(struct json *j, const struct ctl_status *st, size_t i, bool detail)
{
	const uint64_t *n = st->recs[i].nums;
	const char *const *s = st->recs[i].strs;
	size_t end = ctl_status_children_end(st, i);
	bool known = n[PMW_SR_P_RULES_KNOWN];
	static const char *const states[] = { "alive", "exited", "connection-open", "running-disconnected" };

	open_obj(j, NULL);
	num(j, "pid", n[PMW_SR_P_PID]);
	str(j, "exe", s[PMW_SR_P_EXE], true);
	boolean(j, "exe_deleted", n[PMW_SR_P_EXE_DELETED]);
	num(j, "uid", n[PMW_SR_P_UID]);
	str(j, "comm", s[PMW_SR_P_COMM], true);
	num_or_null(j, "forked_from", n[PMW_SR_P_VIA_PID] ? n[PMW_SR_P_VIA_PID] : PMW_SR_NONE);
	str(j, "role", role_name((unsigned int)n[PMW_SR_P_ROLE]), false);
	boolean(j, "role_unprotected", n[PMW_SR_P_ROLE_UNPROTECTED]);
	str(j, "policy", n[PMW_SR_P_HAS_POLICY] ? s[PMW_SR_P_POLICY] : NULL, false);
	str(j, "mode", n[PMW_SR_P_HAS_POLICY] ? ctl_mode_name(n[PMW_SR_P_MODE]) : NULL, false);
	num(j, "generation", n[PMW_SR_P_GENERATION]);
	str(j, "state", n[PMW_SR_P_STATE] < 4 ? states[n[PMW_SR_P_STATE]] : "unknown", false);
	num_or_null(j, "served_usec", n[PMW_SR_P_STATE] == PMW_SR_ALIVE ? n[PMW_SR_P_AGE_USEC] : PMW_SR_NONE);
	num_or_null(j, "exited_usec", n[PMW_SR_P_STATE] == PMW_SR_EXITED ? n[PMW_SR_P_AGE_USEC] : PMW_SR_NONE);
	open_arr(j, "pools");
	for (size_t k = i + 1; k < end; k++) {
		const struct ctl_srec *p = &st->recs[k];

		if (p->type != PMW_SR_POOL)
			continue;
		open_obj(j, NULL);
		str(j, "name", p->strs[PMW_SR_O_NAME], false);
		str(j, "policy", p->strs[PMW_SR_O_POLICY], true);
		boolean(j, "protected", p->nums[PMW_SR_O_PROTECTED]);
		num(j, "protected_bytes", p->nums[PMW_SR_O_PROTECTED_BYTES]);
		num(j, "objects", p->nums[PMW_SR_O_OBJECTS]);
		num(j, "protects", p->nums[PMW_SR_O_PROTECTS]);
		str(j, "last_trigger", p->strs[PMW_SR_O_LAST_TRIGGER], true);
		open_arr(j, "rules");
		size_t r = k + 1;
		for (; r < end && st->recs[r].type == PMW_SR_RULE; r++)
			rule_obj(j, &st->recs[r]);
		close_arr(j);
		/* Its generations (the latest kept by pmallocd), oldest first. */
		open_arr(j, "generations");
		for (; r < end && st->recs[r].type == PMW_SR_GENERATION; r++) {
			const uint64_t *gn = st->recs[r].nums;

			open_obj(j, NULL);
			num(j, "generation", gn[PMW_SR_G_GENERATION]);
			num(j, "new_bytes", gn[PMW_SR_G_NEW_BYTES]);
			num(j, "protected_bytes", gn[PMW_SR_G_PROTECTED_BYTES]);
			num(j, "age_usec", gn[PMW_SR_G_AGE_USEC]);
			num(j, "freed_bytes", gn[PMW_SR_G_FREED_BYTES]);
			str(j, "trigger", st->recs[r].strs[PMW_SR_G_TRIGGER], true);
			close_obj(j);
		}
		close_arr(j);
		close_obj(j);
	}
	close_arr(j);
	num_or_null(j, "rules_total", known ? n[PMW_SR_P_RULES_TOTAL] : PMW_SR_NONE);
	num_or_null(j, "rules_listed", known ? n[PMW_SR_P_RULES_LISTED] : PMW_SR_NONE);
	num_or_null(j, "rules_unresolved", known ? n[PMW_SR_P_RULES_UNRESOLVED] : PMW_SR_NONE);
	num(j, "pools_untracked", n[PMW_SR_P_POOLS_UNTRACKED]);
	num(j, "violations", n[PMW_SR_P_VIOLATIONS]);
	num(j, "violations_not_logged", n[PMW_SR_P_VIOLATIONS_NOT_LOGGED]);
	num(j, "protects_not_logged", n[PMW_SR_P_PROTECTS_NOT_LOGGED]);
	num(j, "rules_messages_refused", n[PMW_SR_P_RULES_REFUSED]);
	num(j, "handler_put_right", n[PMW_SR_P_HANDLER_NOTICES]);
	open_arr(j, "handler_found");
	static const char *const found[] = { "sigsegv-replaced", "sigtrap-replaced", "sigsegv-blocked" };
	for (unsigned b = 0; b < 3; b++)
		if (n[PMW_SR_P_HANDLER_WHAT] >> b & 1u) {
			sep(j);
			fprintf(j->f, "\"%s\"", found[b]);
		}
	close_arr(j);
	if (detail) {
		open_obj(j, "sites");
		boolean(j, "reported", n[PMW_SR_P_SITES_KNOWN]);
		num(j, "total", n[PMW_SR_P_SITES_TOTAL]);
		num_or_null(j, "age_usec", n[PMW_SR_P_SITES_AGE_USEC]);
		num_or_null(j, "asked_usec", n[PMW_SR_P_SITES_ASKED_USEC]);
		open_arr(j, "rows");
		for (size_t k = i + 1; k < end; k++) {
			const struct ctl_srec *r = &st->recs[k];

			if (r->type != PMW_SR_SITE)
				continue;
			open_obj(j, NULL);
			str(j, "site", r->strs[PMW_SR_S_TEXT], false);
			str(j, "pool", r->strs[PMW_SR_S_POOL], false);
			num(j, "objects", r->nums[PMW_SR_S_OBJECTS]);
			num(j, "bytes", r->nums[PMW_SR_S_BYTES]);
			boolean(j, "late", r->nums[PMW_SR_S_LATE] != 0);
			close_obj(j);
		}
		close_arr(j);
		close_obj(j);
	}
	close_obj(j);
}

static void processes(struct json *j, const struct ctl_status *st, const char *name, uint64_t exited, bool detail)
{
	open_arr(j, name);
	for (size_t i = 0; i < st->n; i++)
		if (st->recs[i].type == PMW_SR_PROCESS && st->recs[i].nums[PMW_SR_P_EXITED] == exited)
			process_obj(j, st, i, detail);
	close_arr(j);
}

int ctl_status_json(FILE *f, const struct ctl_status *st)
{
	const uint64_t *d = st->recs[0].nums;
	bool root = d[PMW_SR_D_FLAGS] & PMW_SR_D_ROOT_VIEW, detail = d[PMW_SR_D_FLAGS] & PMW_SR_D_DETAIL;
	struct json j = { .f = f, .first = true };

	fputc('{', f);
	daemon_obj(&j, d, st->recs[0].strs);
	boolean(&j, "root_view", root);
	open_arr(&j, "policy_warnings");
	for (size_t i = 0; i < st->n; i++)
		if (st->recs[i].type == PMW_SR_WARNING) {
			open_obj(&j, NULL);
			num(&j, "line", st->recs[i].nums[PMW_SR_W_LINE]);
			str(&j, "warning", st->recs[i].strs[PMW_SR_W_TEXT], false);
			close_obj(&j);
		}
	close_arr(&j);
	if (detail) {
		num(&j, "pid", d[PMW_SR_D_PID_ASKED]);
		boolean(&j, "found", !(d[PMW_SR_D_FLAGS] & PMW_SR_D_NO_SUCH));
	} else {
		key(&j, "unserved");
		if (root) {
			fputc('[', f);
			j.first = true;
			for (size_t i = 0; i < st->n; i++)
				if (st->recs[i].type == PMW_SR_UNSERVED) {
					const struct ctl_srec *u = &st->recs[i];

					open_obj(&j, NULL);
					num(&j, "pid", u->nums[PMW_SR_U_PID]);
					str(&j, "exe", u->strs[PMW_SR_U_EXE], false);
					num(&j, "uid", u->nums[PMW_SR_U_UID]);
					str(&j, "comm", u->strs[PMW_SR_U_COMM], false);
					str(&j, "policy", u->strs[PMW_SR_U_POLICY], false);
					close_obj(&j);
				}
			close_arr(&j);
		} else {
			fputs("null", f);
		}
		num(&j, "unserved_not_listed", d[PMW_SR_D_UNSERVED_MORE]);
		num(&j, "served_connected", d[PMW_SR_D_SERVED]);
		num(&j, "exited_kept", d[PMW_SR_D_EXITED_KEPT]);
		num(&j, "exited_kept_max", d[PMW_SR_D_EXITED_MAX]);
		num(&j, "exited_forgotten", d[PMW_SR_D_EXITED_FORGOTTEN]);
	}
	processes(&j, st, "served", 0, detail);
	processes(&j, st, "exited", 1, detail);
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}
