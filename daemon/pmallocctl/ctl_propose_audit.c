/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_audit.c - propose's refine from audit: the audit-mode
 * violation reports of the executable (MESSAGE_ID MID_VIOLATION,
 * PMALLOC_MODE=audit), who is believed, which build, folded by the site
 * they name (PMALLOC_OBJECT_SITE) with the program's writing function and
 * how often.  ctl_propose.c leaves those sites out (pset_leave_out) and
 * names them in comments.  Reads the journal it is handed; never prints
 * but the tally on stderr (paudit_say).
 */
#define _GNU_SOURCE
#include "ctl_propose_audit.h"
#include "ctl.h"
#include "msgid.h"
#include "ctl_learned.h"
#include "ctl_writer.h"
#include "ctl_vio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>

static bool uid_in(const uid_t *uids, size_t n, uid_t u)
{
	for (size_t i = 0; i < n; i++)
		if (uids[i] == u)
			return true;
	return false;
}

enum {
	A_EXE, A_UID, A_COMM, A_UNIT, A_PUID, A_PID, A_OPID, A_SITE, A_SYMBOL, A_MODULE, A_BUILD_ID, A_MACHINE,
	A_COUNT, A_BACKTRACE, A_N
};
static const char *const audit_fields[A_N] = {
	[A_EXE] = "_EXE", [A_UID] = "_UID", [A_COMM] = "_COMM", [A_UNIT] = "_SYSTEMD_UNIT", [A_PUID] = "PMALLOC_UID",
	[A_PID] = "_PID", [A_OPID] = "OBJECT_PID", [A_SITE] = "PMALLOC_OBJECT_SITE",
	[A_SYMBOL] = "PMALLOC_FAULT_SYMBOL", [A_MODULE] = "PMALLOC_FAULT_MODULE",
	[A_BUILD_ID] = "PMALLOC_FAULT_BUILD_ID", [A_MACHINE] = "_MACHINE_ID", [A_COUNT] = "PMALLOC_AUDIT_WRITES",
	[A_BACKTRACE] = "PMALLOC_BACKTRACE",
};

void paudit_free(struct paudits *au)
{
	for (size_t i = 0; i < au->n; i++) {
		free(au->a[i].site);
		free(au->a[i].symbol);
		free(au->a[i].last_pid);
	}
	free(au->a);
}

/* One believed audit entry's site folded in; 0 or -ENOMEM. */
static int audit_add(struct paudits *au, char **v, const char *exe)
{
	struct paudit *a = NULL;
	for (size_t i = 0; i < au->n && !a; i++)
		if (strcmp(au->a[i].site, v[A_SITE]) == 0)
			a = &au->a[i];
	if (!a) {
		struct paudit *t = realloc(au->a, (au->n + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		au->a = t;
		a = &au->a[au->n++];
		memset(a, 0, sizeof(*a));
		a->site = v[A_SITE];
		v[A_SITE] = NULL;
	}
	if (!a->symbol) {
		char w[256];
		ctl_audit_writer(v[A_BACKTRACE], exe, v[A_SYMBOL], w, sizeof(w));
		a->symbol = strdup(w);
		if (!a->symbol)
			return -ENOMEM;
	}
	uint64_t more = ctl_learned_num(v[A_COUNT]);
	a->writes += more ? more : 1;
	char key[160];
	snprintf(key, sizeof(key), "%s/%s", v[A_MACHINE], v[A_OPID]);
	if (!a->last_pid || strcmp(a->last_pid, key) != 0) {
		a->processes++;
		free(a->last_pid);
		a->last_pid = strdup(key);
		if (!a->last_pid)
			return -ENOMEM;
	}
	return 0;
}

int paudit_read(sd_journal *j, const char *exe, const char *build_id, uint64_t since, const uid_t *uids,
		size_t n_uids, const uid_t *run_uids, size_t n_run_uids, struct paudits *au)
{
	char *match = NULL;
	int r = 0;
	if (asprintf(&match, "PMALLOC_EXE=%s", exe) < 0)
		match = NULL;
	if (!match || (r = sd_journal_add_match(j, "MESSAGE_ID=" MID_VIOLATION, 0)) < 0 ||
	    (r = sd_journal_add_match(j, "PMALLOC_MODE=audit", 0)) < 0 || (r = sd_journal_add_match(j, match, 0)) < 0 ||
	    (r = since ? sd_journal_seek_realtime_usec(j, since) : sd_journal_seek_head(j)) < 0) {
		free(match);
		return r < 0 ? r : -ENOMEM;
	}
	free(match);
	while ((r = sd_journal_next(j)) > 0) {
		char *v[A_N];
		if ((r = ctl_learned_fields(j, audit_fields, A_N, v)) < 0)
			break;
		const char *u = NULL;
		if (vio_by_pmallocd(v[A_UID], v[A_COMM], v[A_EXE], v[A_UNIT]))
			u = v[A_PUID];
		else if (strcmp(v[A_EXE], exe) == 0 && v[A_PID][0] && strcmp(v[A_PID], v[A_OPID]) == 0)
			u = v[A_UID];
		char *end = NULL;
		unsigned long uid = u && u[0] >= '0' && u[0] <= '9' ? strtoul(u, &end, 10) : (unsigned long)-1;
		if (!u)
			au->forged++;
		else if (!end || *end || uid >= (uid_t)-1 ||
			 (!uid_in(uids, n_uids, (uid_t)uid) && !uid_in(run_uids, n_run_uids, (uid_t)uid)))
			au->stranger++;
		else if ((strcmp(v[A_MODULE], exe) == 0 && v[A_BUILD_ID][0] && strcmp(v[A_BUILD_ID], build_id) != 0) ||
			 !ctl_audit_exe_build(v[A_BACKTRACE], exe, build_id))
			au->other_build++;
		else if (v[A_SITE][0]) {
			au->used++;
			r = audit_add(au, v, exe);
		}
		for (size_t k = 0; k < A_N; k++)
			free(v[k]);
		if (r < 0)
			break;
	}
	sd_journal_flush_matches(j);
	return r < 0 ? r : 0;
}

void paudit_say(const struct paudits *au, const char *exe)
{
	if (au->forged)
		fprintf(stderr, CTL_NAME ": propose: %zu audit reports not believed: written by neither pmallocd nor "
				"a process running %s\n", au->forged, exe);
	if (au->stranger)
		fprintf(stderr, CTL_NAME ": propose: %zu audit reports refused: processes of a uid not trusted "
				"(root, yours, --uid, the --unit's User=, or one seen in a trusted learn run)\n",
			au->stranger);
	if (au->other_build)
		fprintf(stderr, CTL_NAME ": propose: %zu audit reports refused: another build of %s\n",
			au->other_build, exe);
	if (au->used)
		fprintf(stderr, CTL_NAME ": propose: %zu audit reports read: %zu sites written in audit mode\n",
			au->used, au->n);
}
