/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_status_text.c - "pmallocctl status" for people: the status records
 * (ctl_status_data.h) laid out as text, the layout pmallocctl(8) shows.
 *
 * Owns the words and the layout.  Never reads anything but the records;
 * every string is escaped on its way to the terminal (the strings are
 * whoever's answer it was), each on its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "role.h"
#include "ctl.h"
#include "ctl_escape.h"
#include "ctl_status_data.h"
#include "policy.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define REGISTRY_POOLS 32                /* pmallocd's pools tracked a process (registry.h) */

static void age(FILE *f, uint64_t usec)
{
	uint64_t s = usec / 1000000u;

	if (s < 60)
		fprintf(f, "%" PRIu64 "s", s);
	else if (s < 3600)
		fprintf(f, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		fprintf(f, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, (s / 60) % 60);
	else
		fprintf(f, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, (s / 3600) % 24);
}

/* The generations of a pool (its rows from k on), when it has more than
 * one: a reload made memory read-only again (reload.c in the shim). */
static void pool_generations(FILE *f, const struct ctl_status *st, size_t k, size_t end)
{
	size_t n = 0;

	while (k + n < end && st->recs[k + n].type == PMW_SR_GENERATION)
		n++;
	if (n < 2)
		return;
	for (size_t g = k; g < k + n; g++) {
		const uint64_t *gn = st->recs[g].nums;

		fprintf(f, "      generation %" PRIu64 ": %" PRIu64 " bytes made read-only ", gn[PMW_SR_G_GENERATION],
			gn[PMW_SR_G_NEW_BYTES]);
		age(f, gn[PMW_SR_G_AGE_USEC]);
		fprintf(f, " ago (%s), %" PRIu64 " in all, %" PRIu64 " of them freed since\n",
			st->recs[g].strs[PMW_SR_G_TRIGGER], gn[PMW_SR_G_PROTECTED_BYTES], gn[PMW_SR_G_FREED_BYTES]);
	}
}

const char *ctl_rule_kind(uint64_t kind)
{
	switch (kind) {
	case PMW_ROW_SITE:
		return "site";
	case PMW_ROW_WRAPPER:
		return "wrapper";
	case PMW_ROW_ON_CALL:
		return "trigger";
	default:
		return "call site";
	}
}

const char *ctl_rule_why(uint64_t state)
{
	return state == PMW_ROW_RESOLVED ? NULL
	       : state == PMW_ROW_NOT_LOADED ? "no object its glob fits is loaded in this process yet: one "
					       "dlopen'ed later, or loaded by another process of the program, may have it"
	       : state == PMW_ROW_NO_OFFSET ? "no loaded object fits its object glob and build-id"
	       : state == PMW_ROW_DROPPED ? "not applied in a loaded object that more than "
					    STRINGIFY(POLICY_OBJECT_NAME_RULES_MAX) " rules by name fit: the shim applies"
					    " the first " STRINGIFY(POLICY_OBJECT_NAME_RULES_MAX) "; pin the others"
					    " by offset"
					  : "no function of that name in any loaded object";
}

const char *ctl_mode_name(uint64_t mode)
{
	return mode <= POLICY_MODE_LEARN ? policy_mode_name((enum policy_mode)mode) : "?";
}

static void daemon_lines(FILE *f, const uint64_t *n, const char *const *s)
{
	fprintf(f, "pmallocd (PID %" PRIu64 "), running ", n[PMW_SR_D_PID]);
	age(f, n[PMW_SR_D_RUNNING_USEC]);
	fprintf(f, "\npolicy file: %s, generation %" PRIu64 " (%" PRIu64 " %s), loaded ", s[PMW_SR_D_POLICY_FILE],
		n[PMW_SR_D_GENERATION], n[PMW_SR_D_POLICIES], n[PMW_SR_D_POLICIES] == 1 ? "policy" : "policies");
	age(f, n[PMW_SR_D_LOADED_USEC]);
	fputs(" ago", f);
	if (n[PMW_SR_D_RELOADS_REFUSED])
		fprintf(f, "; %" PRIu64 " reloads refused", n[PMW_SR_D_RELOADS_REFUSED]);
	fprintf(f, "\nsocket: %s%s\n", s[PMW_SR_D_SOCKET], n[PMW_SR_D_SOCKET_ACTIVATED] ? " (socket activation)" : "");
	fprintf(f, "clients: %" PRIu64 " connected (at most %" PRIu64 "); %" PRIu64 " accepted, %" PRIu64
		" policies handed out, %" PRIu64 " without policy, %" PRIu64 " status requests\n",
		n[PMW_SR_D_CLIENTS], n[PMW_SR_D_MAX_CLIENTS], n[PMW_SR_D_ACCEPTED], n[PMW_SR_D_HANDED],
		n[PMW_SR_D_NO_POLICY], n[PMW_SR_D_STATUS_REQUESTS]);
	fprintf(f, "messages: %" PRIu64 " protects, %" PRIu64 " violation reports\n", n[PMW_SR_D_PROTECTS],
		n[PMW_SR_D_REPORTS]);
	fprintf(f, "protect requests: %" PRIu64 " (pmallocctl protect), %" PRIu64 " sent to the process\n",
		n[PMW_SR_D_PROTECT_REQUESTS], n[PMW_SR_D_PROTECT_SENT]);
	fprintf(f, "dropped: %" PRIu64 " malformed, %" PRIu64 " oversized, %" PRIu64 " out of order, %" PRIu64
		" passing fds, %" PRIu64 " silent, %" PRIu64 " vanished, %" PRIu64 " unidentified, %" PRIu64
		" forged, %" PRIu64 " over the client limit, %" PRIu64 " wrong protocol version, %" PRIu64
		" accept errors\n", n[PMW_SR_D_MALFORMED], n[PMW_SR_D_OVERSIZED], n[PMW_SR_D_OUT_OF_ORDER],
		n[PMW_SR_D_FDS_PASSED], n[PMW_SR_D_SILENT], n[PMW_SR_D_VANISHED], n[PMW_SR_D_UNIDENTIFIED],
		n[PMW_SR_D_FORGED], n[PMW_SR_D_OVER_CLIENT_LIMIT], n[PMW_SR_D_WRONG_VERSION],
		n[PMW_SR_D_ACCEPT_ERRORS]);
	fprintf(f, "per-user budgets: %" PRIu64 " users, root exempt; at most %" PRIu64 " connections a user, %"
		PRIu64 " for all users; %" PRIu64 " journal entries a user per %" PRIu64 " s\n",
		n[PMW_SR_D_BUDGET_USERS], n[PMW_SR_D_BUDGET_USER_CONNECTIONS], n[PMW_SR_D_BUDGET_ALL_CONNECTIONS],
		n[PMW_SR_D_BUDGET_USER_ENTRIES], n[PMW_SR_D_BUDGET_INTERVAL_USEC] / 1000000u);
	fprintf(f, "over budget: %" PRIu64 " connections refused, %" PRIu64 " messages of untracked forked children, %"
		PRIu64 " journal entries not written (%" PRIu64 " summaries)\n",
		n[PMW_SR_D_BUDGET_REFUSED_CONNECTIONS], n[PMW_SR_D_BUDGET_REFUSED_CHILDREN],
		n[PMW_SR_D_BUDGET_DROPPED_ENTRIES], n[PMW_SR_D_BUDGET_SUMMARIES]);
	fprintf(f, "journal: %" PRIu64 " entries written (%" PRIu64 " after waiting for journald), %" PRIu64
		" waiting%s; %" PRIu64 " dropped: %" PRIu64 " with the queue full, %" PRIu64 " with no journald, %"
		PRIu64 " not sendable\n", n[PMW_SR_D_JOURNAL_SENT], n[PMW_SR_D_JOURNAL_SENT_LATE],
		n[PMW_SR_D_JOURNAL_QUEUED], n[PMW_SR_D_JOURNAL_STALLED] ? " (journald is not reading)" : "",
		n[PMW_SR_D_JOURNAL_DROPPED_FULL] + n[PMW_SR_D_JOURNAL_DROPPED_ABSENT] + n[PMW_SR_D_JOURNAL_DROPPED_ERROR],
		n[PMW_SR_D_JOURNAL_DROPPED_FULL], n[PMW_SR_D_JOURNAL_DROPPED_ABSENT], n[PMW_SR_D_JOURNAL_DROPPED_ERROR]);
}

/* The RULE records [from, to) of one pool. */
static void pool_rules(FILE *f, const struct ctl_status *st, size_t from, size_t to, bool detail)
{
	unsigned int resolved = 0, unresolved = 0, waiting = 0, dropped = 0;

	for (size_t k = from; k < to; k++)
		if (st->recs[k].nums[PMW_SR_R_STATE] == PMW_ROW_RESOLVED)
			resolved++;
		else if (st->recs[k].nums[PMW_SR_R_STATE] == PMW_ROW_NOT_LOADED)
			waiting++;
		else if (st->recs[k].nums[PMW_SR_R_STATE] == PMW_ROW_DROPPED)
			dropped++;
		else
			unresolved++;
	if (resolved + unresolved + waiting + dropped == 0)
		return;
	fprintf(f, "      rules: %u resolved, %u unresolved", resolved, unresolved);
	if (dropped)
		fprintf(f, ", %u not applied (too many rules by name for one object)", dropped);
	if (waiting)
		fprintf(f, ", %u waiting for their object", waiting);
	fputc('\n', f);
	for (size_t k = from; k < to; k++) {
		const struct ctl_srec *r = &st->recs[k];
		uint64_t state = r->nums[PMW_SR_R_STATE];

		if (state == PMW_ROW_RESOLVED && detail)
			fprintf(f, "      resolved: %s %s\n", ctl_rule_kind(r->nums[PMW_SR_R_KIND]), r->strs[PMW_SR_R_TEXT]);
		else if (state != PMW_ROW_RESOLVED)
			fprintf(f, "      %s: %s %s (%s)\n",
				state == PMW_ROW_NOT_LOADED ? "waiting"
				: state == PMW_ROW_DROPPED  ? "not applied"
							    : "unresolved",
				ctl_rule_kind(r->nums[PMW_SR_R_KIND]), r->strs[PMW_SR_R_TEXT], ctl_rule_why(state));
	}
}

static void process(FILE *f, const struct ctl_status *st, size_t i, bool detail)
{
	const uint64_t *n = st->recs[i].nums;
	const char *const *s = st->recs[i].strs;
	size_t end = ctl_status_children_end(st, i);

	fprintf(f, "  PID %" PRIu64 "  %s%s  uid %" PRIu64, n[PMW_SR_P_PID], s[PMW_SR_P_EXE][0] ? s[PMW_SR_P_EXE] : "(exe unknown)",
		n[PMW_SR_P_EXE_DELETED] ? " (deleted)" : "", n[PMW_SR_P_UID]);
	/* A process that said hello is its executable's main: its role is
	 * said for the children only. */
	if (n[PMW_SR_P_VIA_PID])
		fprintf(f, "  forked child of PID %" PRIu64 ", role %s", n[PMW_SR_P_VIA_PID],
			role_name((unsigned int)n[PMW_SR_P_ROLE]));
	if (n[PMW_SR_P_ROLE_UNPROTECTED])
		fprintf(f, "  unprotected: no pool of its policy names role %s", role_name((unsigned int)n[PMW_SR_P_ROLE]));
	if (n[PMW_SR_P_HAS_POLICY])
		fprintf(f, "  policy \"%s\" (%s, generation %" PRIu64 ")", s[PMW_SR_P_POLICY],
			ctl_mode_name(n[PMW_SR_P_MODE]), n[PMW_SR_P_GENERATION]);
	else
		fprintf(f, "  no policy (generation %" PRIu64 ")", n[PMW_SR_P_GENERATION]);
	if (n[PMW_SR_P_STATE] == PMW_SR_EXITED) {
		fputs("  exited ", f);
		age(f, n[PMW_SR_P_AGE_USEC]);
		fputs(" ago\n", f);
	} else if (n[PMW_SR_P_STATE] == PMW_SR_DISCONNECTED) {
		fputs("  running, disconnected from pmallocd ", f);
		age(f, n[PMW_SR_P_AGE_USEC]);
		fputs(" ago (it keeps what it was handed)\n", f);
	} else if (n[PMW_SR_P_STATE] == PMW_SR_ALIVE) {
		fputs("  alive, served ", f);
		age(f, n[PMW_SR_P_AGE_USEC]);
		fputc('\n', f);
	} else {
		fputs("  exited (its connection is still open)\n", f);
	}
	for (size_t k = i + 1; k < end; k++) {
		const struct ctl_srec *p = &st->recs[k];
		size_t r_end = k + 1;

		if (p->type != PMW_SR_POOL)
			continue;
		while (r_end < end && st->recs[r_end].type == PMW_SR_RULE)
			r_end++;
		if (p->nums[PMW_SR_O_PROTECTED]) {
			fprintf(f, "    pool \"%s\"", p->strs[PMW_SR_O_NAME]);
			if (p->strs[PMW_SR_O_POLICY][0] &&
			    (!n[PMW_SR_P_HAS_POLICY] || strcmp(p->strs[PMW_SR_O_POLICY], s[PMW_SR_P_POLICY]) != 0))
				fprintf(f, " (policy \"%s\")", p->strs[PMW_SR_O_POLICY]);
			fprintf(f, ": %" PRIu64 " bytes protected in %" PRIu64 " objects, %" PRIu64 " protects (last: %s)\n",
				p->nums[PMW_SR_O_PROTECTED_BYTES], p->nums[PMW_SR_O_OBJECTS], p->nums[PMW_SR_O_PROTECTS],
				p->strs[PMW_SR_O_LAST_TRIGGER][0] ? p->strs[PMW_SR_O_LAST_TRIGGER] : "?");
		} else if (p->strs[PMW_SR_O_LAST_TRIGGER][0]) {
			/* pmallocd passed a pmallocctl protect on; an empty pool
			 * sends no protect message: nothing was there to protect. */
			fprintf(f, "    pool \"%s\": protect asked (%s), nothing protected: the pool was empty "
				"or the process has not acted on it yet\n",
				p->strs[PMW_SR_O_NAME], p->strs[PMW_SR_O_LAST_TRIGGER]);
		} else {
			fprintf(f, "    pool \"%s\": not protected yet (no trigger has fired)\n", p->strs[PMW_SR_O_NAME]);
		}
		pool_rules(f, st, k + 1, r_end, detail);
		pool_generations(f, st, r_end, end);
	}
	if (n[PMW_SR_P_RULES_KNOWN]) {
		/* The shim lists the rules that match nothing first: those past
		 * the rows it sends are resolved, unless more match nothing (or
		 * were not applied) than it could list. */
		uint64_t listed_unresolved = 0;

		for (size_t k = i + 1; k < end; k++)
			if (st->recs[k].type == PMW_SR_RULE && st->recs[k].nums[PMW_SR_R_STATE] != PMW_ROW_RESOLVED &&
			    st->recs[k].nums[PMW_SR_R_STATE] != PMW_ROW_NOT_LOADED)
				listed_unresolved++;
		/* What is hidden and how it counts, in one line: the pools'
		 * "rules:" lines above count the listed ones only. */
		if (n[PMW_SR_P_RULES_TOTAL] > n[PMW_SR_P_RULES_LISTED] &&
		    n[PMW_SR_P_RULES_UNRESOLVED] > listed_unresolved)
			fprintf(f, "    %" PRIu64 " of %" PRIu64 " rules not listed: %" PRIu64
				" of them unresolved or not applied\n",
				n[PMW_SR_P_RULES_TOTAL] - n[PMW_SR_P_RULES_LISTED], n[PMW_SR_P_RULES_TOTAL],
				n[PMW_SR_P_RULES_UNRESOLVED] - listed_unresolved);
		else if (n[PMW_SR_P_RULES_TOTAL] > n[PMW_SR_P_RULES_LISTED])
			fprintf(f, "    %" PRIu64 " of %" PRIu64 " rules not listed: all resolved\n",
				n[PMW_SR_P_RULES_TOTAL] - n[PMW_SR_P_RULES_LISTED], n[PMW_SR_P_RULES_TOTAL]);
		if (n[PMW_SR_P_RULES_UNRESOLVED])
			fprintf(f, "    warning: %" PRIu64 " of %" PRIu64 " rules match nothing: they protect nothing\n",
				n[PMW_SR_P_RULES_UNRESOLVED], n[PMW_SR_P_RULES_TOTAL]);
	}
	if (n[PMW_SR_P_POOLS_UNTRACKED])
		fprintf(f, "    (%" PRIu64 " protects of pools past the first %d not tracked)\n",
			n[PMW_SR_P_POOLS_UNTRACKED], REGISTRY_POOLS);
	if (n[PMW_SR_P_VIOLATIONS] || n[PMW_SR_P_PROTECTS_NOT_LOGGED])
		fprintf(f, "    violations: %" PRIu64 " reported, %" PRIu64 " not logged (rate limit); %" PRIu64
			" protect entries not logged\n", n[PMW_SR_P_VIOLATIONS], n[PMW_SR_P_VIOLATIONS_NOT_LOGGED],
			n[PMW_SR_P_PROTECTS_NOT_LOGGED]);
	/* What ran behind the shim's back (issue 27): its fault handler
	 * replaced by a raw system call, SIGSEGV blocked; put right, said. */
	if (n[PMW_SR_P_HANDLER_NOTICES]) {
		static const char *const found[] = { "its SIGSEGV handler replaced by a raw rt_sigaction",
						     "its SIGTRAP handler replaced", "SIGSEGV blocked" };
		const char *sep = "";
		fprintf(f, "    warning: the shim put its fault handler right %" PRIu64 " time%s, behind its back: ",
			n[PMW_SR_P_HANDLER_NOTICES], n[PMW_SR_P_HANDLER_NOTICES] == 1 ? "" : "s");
		for (unsigned int b = 0; b < 3; b++)
			if (n[PMW_SR_P_HANDLER_WHAT] >> b & 1u) {
				fprintf(f, "%s%s", sep, found[b]);
				sep = ", ";
			}
		fputc('\n', f);
	}
	if (!detail)
		return;
	if (n[PMW_SR_P_SITES_ASKED_USEC] != PMW_SR_NONE)
		fprintf(f, "    sites: a fresh table asked for %" PRIu64 "s ago, not come yet\n",
			n[PMW_SR_P_SITES_ASKED_USEC] / 1000000u);
	if (!n[PMW_SR_P_SITES_KNOWN]) {
		fputs("    sites: none reported yet (a process reports them after a protect, or asked by status PID)\n", f);
	} else {
		size_t listed = 0;

		for (size_t k = i + 1; k < end; k++)
			listed += st->recs[k].type == PMW_SR_SITE;
		fprintf(f, "    sites: %zu of %" PRIu64 " listed, as of %" PRIu64 "s ago\n", listed,
			n[PMW_SR_P_SITES_TOTAL], n[PMW_SR_P_SITES_AGE_USEC] / 1000000u);
		for (size_t k = i + 1; k < end; k++)
			if (st->recs[k].type == PMW_SR_SITE)
				fprintf(f, "      site %s  pool \"%s\": %" PRIu64 " objects, %" PRIu64 " bytes%s\n",
					st->recs[k].strs[PMW_SR_S_TEXT], st->recs[k].strs[PMW_SR_S_POOL],
					st->recs[k].nums[PMW_SR_S_OBJECTS], st->recs[k].nums[PMW_SR_S_BYTES],
					st->recs[k].nums[PMW_SR_S_LATE]
					? " to the heap after the pool's trigger (take = \"until-trigger\")" : "");
	}
	if (n[PMW_SR_P_RULES_REFUSED])
		fprintf(f, "    (%" PRIu64 " rules and sites messages over the rate limit, not kept)\n",
			n[PMW_SR_P_RULES_REFUSED]);
}

/* The processes of one section (exited 0: served, 1: exited). */
static size_t processes(FILE *f, const struct ctl_status *st, uint64_t exited)
{
	size_t shown = 0;

	for (size_t i = 0; i < st->n; i++)
		if (st->recs[i].type == PMW_SR_PROCESS && st->recs[i].nums[PMW_SR_P_EXITED] == exited) {
			process(f, st, i, false);
			shown++;
		}
	return shown;
}

static void render(FILE *f, const struct ctl_status *st)
{
	const uint64_t *d = st->recs[0].nums;
	bool root = d[PMW_SR_D_FLAGS] & PMW_SR_D_ROOT_VIEW, any = false;

	daemon_lines(f, d, st->recs[0].strs);
	fputs("\npolicy file warnings (of the generation in force; pmallocctl check says the same):\n", f);
	for (size_t i = 0; i < st->n; i++)
		if (st->recs[i].type == PMW_SR_WARNING) {
			fprintf(f, "  line %" PRId64 ": %s\n", (int64_t)st->recs[i].nums[PMW_SR_W_LINE],
				st->recs[i].strs[PMW_SR_W_TEXT]);
			any = true;
		}
	if (!any)
		fputs("  (none)\n", f);
	if (d[PMW_SR_D_FLAGS] & PMW_SR_D_DETAIL) {
		fputc('\n', f);
		for (size_t i = 0; i < st->n; i++)
			if (st->recs[i].type == PMW_SR_PROCESS) {
				fprintf(f, "%s processes (PID %" PRIu64 "):\n",
					st->recs[i].nums[PMW_SR_P_EXITED] ? "exited" : "served", st->recs[i].nums[PMW_SR_P_PID]);
				process(f, st, i, true);
				return;
			}
		fprintf(f, "no such process: PID %" PRIu64 " was not served by this pmallocd%s\n",
			d[PMW_SR_D_PID_ASKED], root ? "" : " (or is not yours)");
		return;
	}
	fputs("\nrunning but never checked in (a policy matches; LD_PRELOAD missing or failed):\n", f);
	if (!root) {
		fputs("  (shown to root only)\n", f);
	} else {
		any = false;
		for (size_t i = 0; i < st->n; i++)
			if (st->recs[i].type == PMW_SR_UNSERVED) {
				const struct ctl_srec *u = &st->recs[i];

				fprintf(f, "  PID %" PRIu64 "  %s  uid %" PRIu64 "  comm %s  policy \"%s\"\n",
					u->nums[PMW_SR_U_PID], u->strs[PMW_SR_U_EXE], u->nums[PMW_SR_U_UID],
					u->strs[PMW_SR_U_COMM], u->strs[PMW_SR_U_POLICY]);
				any = true;
			}
		if (!any)
			fputs("  (none)\n", f);
		if (d[PMW_SR_D_UNSERVED_MORE])
			fprintf(f, "  ... and %" PRIu64 " more\n", d[PMW_SR_D_UNSERVED_MORE]);
	}
	fprintf(f, "\nserved processes (%" PRIu64 " connected%s):\n", d[PMW_SR_D_SERVED],
		root ? "" : "; only yours are listed");
	if (processes(f, st, 0) == 0)
		fputs("  (none)\n", f);
	fprintf(f, "\nexited processes (last %" PRIu64 " kept, %" PRIu64 " shown", d[PMW_SR_D_EXITED_MAX],
		d[PMW_SR_D_EXITED_KEPT]);
	if (d[PMW_SR_D_EXITED_FORGOTTEN])
		fprintf(f, ", %" PRIu64 " older forgotten", d[PMW_SR_D_EXITED_FORGOTTEN]);
	fputs("):\n", f);
	if (processes(f, st, 1) == 0)
		fputs("  (none)\n", f);
}

int ctl_status_text(FILE *f, const struct ctl_status *st)
{
	struct ctl_status shown = { .recs = calloc(st->n, sizeof(*st->recs)), .n = st->n };
	int r = 0;

	/* Each string escaped on its own (a newline in one must not start a
	 * line of ours): the layout around them is ours alone.  pmallocd
	 * escaped them already: what is escaped here is what a daemon that
	 * is not pmallocd may have left raw. */
	if (!shown.recs)
		return -EIO;
	for (size_t i = 0; i < st->n && r == 0; i++) {
		shown.recs[i] = st->recs[i];
		for (int k = 0; k < CTL_SREC_STRS && r == 0; k++) {
			const char *s = st->recs[i].strs[k];
			char *e = NULL;

			if (s && (r = ctl_escape(s, strlen(s), CTL_ESC_ESCAPED, &e)) == 0)
				shown.recs[i].strs[k] = e;
			else if (s)
				shown.recs[i].strs[k] = NULL;
		}
	}
	if (r == 0)
		render(f, &shown);
	for (size_t i = 0; i < st->n; i++)
		for (int k = 0; k < CTL_SREC_STRS; k++)
			if (st->recs[i].strs[k])
				free((char *)(uintptr_t)shown.recs[i].strs[k]);
	free(shown.recs);
	return r == 0 && !ferror(f) ? 0 : -EIO;
}
