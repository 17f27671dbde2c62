/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status.c - the status pmallocctl shows, as data: the PMW_STATUS_DATA
 * records of shim/wire.h (pmallocctl lays out the text and the JSON).
 *
 * Owns what goes into the records, and the /proc scan for processes a
 * policy names that never checked in (LD_PRELOAD missing or failed open);
 * the scan result is reused for a second so that status requests in a
 * loop cannot keep the daemon busy scanning.
 * Never: changes daemon state, lists more than its bounds, or shows a
 * user another user's processes.
 */
#define _GNU_SOURCE
#include "status.h"
#include "policy_lint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "escape.h"
#include "jwriter.h"
#include "proc.h"
#include "proc_rules.h"
#include "rules.h"
#include "server.h"
#include "status_data.h"

#define USEC_PER_SEC 1000000ULL
#define STATUS_SCAN_REUSE_USEC USEC_PER_SEC
#define NONE PMW_SR_NONE

/* The uid e's process runs as now: a forked child inherits its parent's
 * connection, and with it the uid the parent had then (nginx's workers
 * connected as root and run as www-data).  Exited, or unreadable: the
 * connection's. */
static uid_t entry_uid(const struct proc_entry *e)
{
	uid_t uid;

	if (!e->exited_usec && proc_is_alive(e->pid, e->starttime) && proc_read_euid(e->pid, &uid) == 0)
		return uid;
	return e->uid;
}

static void emit_entry(struct status_data *d, const struct proc_entry *e, uid_t uid, uint64_t now, bool detail)
{
	const struct rules_table *t = e->rules ? &e->rules->rules : NULL;
	const struct rules_table *st = e->rules ? &e->rules->sites : NULL;
	uint64_t n[PMW_SR_P_N_NUMS] = { 0 };
	const char *strs[PMW_SR_P_N_STRS];

	n[PMW_SR_P_EXITED] = e->exited_usec != 0;
	n[PMW_SR_P_PID] = (uint64_t)e->pid;
	n[PMW_SR_P_UID] = uid;
	n[PMW_SR_P_VIA_PID] = (uint64_t)e->via_pid;
	n[PMW_SR_P_HAS_POLICY] = e->has_policy;
	n[PMW_SR_P_MODE] = (uint64_t)e->mode;
	n[PMW_SR_P_GENERATION] = e->generation;
	if (e->exited_usec && proc_is_alive(e->pid, e->starttime)) {
		/* Its connection closed, the process runs on (the same start
		 * time: not a reused pid): never called exited. */
		n[PMW_SR_P_STATE] = PMW_SR_DISCONNECTED;
		n[PMW_SR_P_AGE_USEC] = now - e->exited_usec;
	} else if (e->exited_usec) {
		n[PMW_SR_P_STATE] = PMW_SR_EXITED;
		n[PMW_SR_P_AGE_USEC] = now - e->exited_usec;
	} else if (proc_is_alive(e->pid, e->starttime)) {
		n[PMW_SR_P_STATE] = PMW_SR_ALIVE;
		n[PMW_SR_P_AGE_USEC] = now - e->since_usec;
	} else {
		n[PMW_SR_P_STATE] = PMW_SR_GONE_CONNECTED;
		n[PMW_SR_P_AGE_USEC] = NONE;
	}
	n[PMW_SR_P_EXE_DELETED] = e->exe_deleted;
	n[PMW_SR_P_POOLS_UNTRACKED] = e->pools_untracked;
	n[PMW_SR_P_VIOLATIONS] = e->violations;
	n[PMW_SR_P_VIOLATIONS_NOT_LOGGED] = e->violations_dropped;
	n[PMW_SR_P_PROTECTS_NOT_LOGGED] = e->protects_dropped;
	n[PMW_SR_P_RULES_KNOWN] = t && t->usec;
	n[PMW_SR_P_RULES_TOTAL] = t ? t->total : 0;
	n[PMW_SR_P_RULES_LISTED] = t ? t->n : 0;
	n[PMW_SR_P_RULES_UNRESOLVED] = t ? t->unresolved : 0;
	n[PMW_SR_P_SITES_KNOWN] = st && st->usec;
	n[PMW_SR_P_SITES_TOTAL] = st ? st->total : 0;
	n[PMW_SR_P_SITES_AGE_USEC] = st && st->usec ? now - st->usec : NONE;
	n[PMW_SR_P_SITES_ASKED_USEC] = e->rules && e->rules->asked_usec && (!st || st->usec < e->rules->asked_usec)
					       ? now - e->rules->asked_usec : NONE;
	n[PMW_SR_P_RULES_REFUSED] = e->rules ? e->rules->refused : 0;
	n[PMW_SR_P_ROLE] = e->role_depth;
	n[PMW_SR_P_ROLE_UNPROTECTED] = e->has_policy && e->roles_named && !(e->roles_named >> e->role_depth & 1u);
	n[PMW_SR_P_HANDLER_NOTICES] = e->handler_notices;
	n[PMW_SR_P_HANDLER_WHAT] = e->handler_what;
	strs[PMW_SR_P_EXE] = e->exe ? proc_entry_exe(e) : "";
	strs[PMW_SR_P_POLICY] = e->has_policy ? e->policy : "";
	strs[PMW_SR_P_COMM] = e->comm;
	status_data_add(d, PMW_SR_PROCESS, n, PMW_SR_P_N_NUMS, strs, PMW_SR_P_N_STRS);

	for (size_t i = 0; i < e->n_pools; i++) {
		const struct reg_pool *p = &e->pools[i];
		uint64_t pn[PMW_SR_O_N_NUMS] = { 1, p->protected_bytes, p->objects, p->protects };
		const char *ps[PMW_SR_O_N_STRS] = { p->name, p->policy, p->last_trigger };

		status_data_add(d, PMW_SR_POOL, pn, PMW_SR_O_N_NUMS, ps, PMW_SR_O_N_STRS);
		rules_emit_pool(d, e, p->name);
		/* Its generations, oldest kept first. */
		for (uint64_t g = p->n_gens > PMW_SR_G_KEPT ? p->n_gens - PMW_SR_G_KEPT : 0; g < p->n_gens; g++) {
			const struct reg_generation *rg = &p->gens[g % PMW_SR_G_KEPT];
			uint64_t gn[PMW_SR_G_N_NUMS] = { rg->generation, rg->new_bytes, rg->protected_bytes,
							 now > rg->usec ? now - rg->usec : 0, rg->freed_bytes };
			const char *gs[PMW_SR_G_N_STRS] = { rg->trigger };

			status_data_add(d, PMW_SR_GENERATION, gn, PMW_SR_G_N_NUMS, gs, PMW_SR_G_N_STRS);
		}
	}
	rules_emit_unprotected(d, e);
	if (detail)
		rules_emit_sites(d, e);
}

/* ---- never checked in ---- */

struct scan {
	struct manager *m;
	struct status_data *out;
	pid_t self;
	unsigned int listed, more;
};

static const struct proc_entry *live_entry(const struct registry *r, pid_t pid, uint64_t starttime)
{
	for (const struct proc_entry *e = r->live; e; e = e->next)
		if (e->pid == pid && (e->starttime == 0 || starttime == 0 || e->starttime == starttime))
			return e;
	return NULL;
}

/* A forked child inherits its parent's protection without checking in:
 * covered when an ancestor running the same exe was served. */
static bool covered_by_ancestor(const struct registry *r, pid_t pid, const char *exe)
{
	for (int depth = 0; depth < 16; depth++) {
		const struct proc_entry *e;
		uint64_t start;
		pid_t ppid;

		if (proc_read_stat(pid, &ppid, NULL) < 0 || ppid <= 1)
			return false;
		if (proc_read_stat(ppid, NULL, &start) < 0)
			return false;
		e = live_entry(r, ppid, start);
		if (e && e->exe && strcmp(e->exe, exe) == 0)
			return true;
		pid = ppid;
	}
	return false;
}

static int scan_one(pid_t pid, void *userdata)
{
	struct scan *sc = userdata;
	const struct registry *r = &sc->m->registry;
	const struct policy *p;
	char comm[PROC_COMM_MAX];
	uint64_t start = 0;
	char *exe = NULL;
	uid_t uid;

	if (pid == sc->self || server_is_peer(sc->m->server, pid))
		return 0;
	if (proc_read_exe(pid, &exe, NULL) < 0)
		return 0;                        /* kernel thread, or gone */
	if (proc_read_comm(pid, comm) < 0 || proc_read_euid(pid, &uid) < 0 ||
	    proc_read_stat(pid, NULL, &start) < 0)
		goto out;
	p = policy_set_match(sc->m->config->set, exe, comm, uid);
	if (!p || live_entry(r, pid, start) || covered_by_ancestor(r, pid, exe))
		goto out;
	if (sc->listed >= STATUS_UNSERVED_MAX) {
		sc->more++;
		goto out;
	}
	sc->listed++;
	{
		size_t size = ESCAPED_SIZE(strlen(exe));
		char *shown = malloc(size), comm_shown[ESCAPED_SIZE(PROC_COMM_MAX)];
		uint64_t n[PMW_SR_U_N_NUMS] = { (uint64_t)pid, uid };
		const char *strs[PMW_SR_U_N_STRS];

		text_escape(comm_shown, sizeof(comm_shown), comm);
		if (shown)
			text_escape(shown, size, exe);
		strs[PMW_SR_U_EXE] = shown ? shown : "?";
		strs[PMW_SR_U_COMM] = comm_shown;
		strs[PMW_SR_U_POLICY] = p->name;
		status_data_add(sc->out, PMW_SR_UNSERVED, n, PMW_SR_U_N_NUMS, strs, PMW_SR_U_N_STRS);
		free(shown);
	}
out:
	free(exe);
	return 0;
}

/* Append src's records to d. */
static void append(struct status_data *d, const struct status_data *src)
{
	const uint8_t *p = src->buf, *end = src->buf + src->len;

	while (p < end) {
		struct pmw_srec h;
		uint64_t nums[UINT8_MAX];
		const char *strs[UINT8_MAX];
		const char *q;

		memcpy(&h, p, sizeof(h));
		memcpy(nums, p + sizeof(h), h.n_nums * sizeof(uint64_t));
		q = (const char *)p + sizeof(h) + h.n_nums * sizeof(uint64_t);
		for (unsigned int i = 0; i < h.n_strs; i++) {
			strs[i] = q;
			q += strlen(q) + 1;
		}
		status_data_add(d, h.type, nums, h.n_nums, strs, h.n_strs);
		p += h.length;
	}
}

/* The never-checked-in processes into d; how many more there were. */
static unsigned int emit_unserved(struct manager *m, struct status_data *d, uint64_t now)
{
	static struct status_data cache;
	static uint64_t cache_time, cache_generation;
	static unsigned int cache_more;
	static bool cached;
	struct scan sc = { .m = m, .self = getpid() };

	if (!cached || now - cache_time >= STATUS_SCAN_REUSE_USEC || cache_generation != m->config->generation) {
		status_data_done(&cache);
		sc.out = &cache;
		(void)proc_for_each(scan_one, &sc, STATUS_SCAN_MAX);
		cached = true;
		cache_time = now;
		cache_more = sc.more;
		cache_generation = m->config->generation;
	}
	append(d, &cache);
	return cache_more;
}

static bool visible(uid_t uid, uid_t viewer)
{
	return viewer == 0 || uid == viewer;
}

static void put_warning(void *ctx, int line, const char *msg)
{
	char shown[ESCAPED_SIZE(512)];
	uint64_t n[PMW_SR_W_N_NUMS] = { (uint64_t)line };
	const char *strs[PMW_SR_W_N_STRS] = { shown };

	text_escape(shown, sizeof(shown), msg);
	status_data_add(ctx, PMW_SR_WARNING, n, PMW_SR_W_N_NUMS, strs, PMW_SR_W_N_STRS);
}

/* What the policy file in force says that cannot be what its author meant
 * (policy_lint(), as pmallocd's journal says at each load): an exe glob no
 * real path fits, one naming a symbolic link, a shadowed policy.  Worked
 * out once per generation: a status loop costs no file system look-ups. */
static void emit_warnings(struct manager *m, struct status_data *d)
{
	static struct status_data cache;
	static uint64_t cache_generation;
	static bool cached;

	if (!cached || cache_generation != m->config->generation) {
		status_data_done(&cache);
		(void)policy_lint(m->config->set, put_warning, &cache);
		cached = true;
		cache_generation = m->config->generation;
	}
	append(d, &cache);
}

static void emit_daemon(struct manager *m, struct status_data *d, uint64_t now, uint64_t flags, pid_t pid,
			unsigned int more)
{
	const struct server_counters *k = server_get_counters(m->server);
	const struct budgets *b = server_get_budgets(m->server);
	const struct registry *r = &m->registry;
	uint64_t n[PMW_SR_D_N_NUMS] = { 0 };
	const char *strs[PMW_SR_D_N_STRS];
	struct jwriter_stats j;

	jwriter_get_stats(&j);
	n[PMW_SR_D_PID] = (uint64_t)getpid();
	n[PMW_SR_D_RUNNING_USEC] = now - m->start_usec;
	n[PMW_SR_D_GENERATION] = m->config->generation;
	n[PMW_SR_D_POLICIES] = m->config->set->n_policies;
	n[PMW_SR_D_LOADED_USEC] = now - m->config_loaded_usec;
	n[PMW_SR_D_RELOADS_REFUSED] = m->reloads_refused;
	n[PMW_SR_D_SOCKET_ACTIVATED] = server_socket_activated(m->server);
	n[PMW_SR_D_CLIENTS] = server_n_clients(m->server);
	n[PMW_SR_D_MAX_CLIENTS] = server_max_clients(m->server);
	n[PMW_SR_D_ACCEPTED] = k->accepted;
	n[PMW_SR_D_HANDED] = k->handed;
	n[PMW_SR_D_NO_POLICY] = k->no_policy;
	n[PMW_SR_D_STATUS_REQUESTS] = k->status_requests;
	n[PMW_SR_D_PROTECTS] = k->protects;
	n[PMW_SR_D_REPORTS] = k->reports;
	n[PMW_SR_D_PROTECT_REQUESTS] = k->protect_requests;
	n[PMW_SR_D_PROTECT_SENT] = k->protect_sent;
	n[PMW_SR_D_MALFORMED] = k->malformed;
	n[PMW_SR_D_OVERSIZED] = k->oversized;
	n[PMW_SR_D_OUT_OF_ORDER] = k->out_of_order;
	n[PMW_SR_D_FDS_PASSED] = k->fds_passed;
	n[PMW_SR_D_SILENT] = k->timed_out;
	n[PMW_SR_D_VANISHED] = k->vanished;
	n[PMW_SR_D_UNIDENTIFIED] = k->unidentified;
	n[PMW_SR_D_FORGED] = k->forged;
	n[PMW_SR_D_OVER_CLIENT_LIMIT] = k->refused_busy;
	n[PMW_SR_D_WRONG_VERSION] = k->refused_version;
	n[PMW_SR_D_ACCEPT_ERRORS] = k->accept_errors;
	n[PMW_SR_D_BUDGET_USERS] = b->n_users;
	n[PMW_SR_D_BUDGET_USER_CONNECTIONS] = budget_cap(b, BUDGET_CLIENT);
	n[PMW_SR_D_BUDGET_ALL_CONNECTIONS] = b->max_clients - b->max_clients / BUDGET_ROOT_RESERVE_DIV;
	n[PMW_SR_D_BUDGET_USER_ENTRIES] = (uint64_t)BUDGET_JOURNAL_FACTOR * b->report_burst;
	n[PMW_SR_D_BUDGET_INTERVAL_USEC] = (uint64_t)b->report_interval_s * USEC_PER_SEC;
	n[PMW_SR_D_BUDGET_REFUSED_CONNECTIONS] = b->refused[BUDGET_CLIENT];
	n[PMW_SR_D_BUDGET_REFUSED_CHILDREN] = b->refused[BUDGET_ENTRY];
	n[PMW_SR_D_BUDGET_DROPPED_ENTRIES] = b->dropped_entries;
	n[PMW_SR_D_BUDGET_SUMMARIES] = b->summaries;
	n[PMW_SR_D_JOURNAL_SENT] = j.sent;
	n[PMW_SR_D_JOURNAL_SENT_LATE] = j.sent_late;
	n[PMW_SR_D_JOURNAL_QUEUED] = j.queued;
	n[PMW_SR_D_JOURNAL_STALLED] = j.queued && j.connected;
	n[PMW_SR_D_JOURNAL_DROPPED_FULL] = j.dropped_full;
	n[PMW_SR_D_JOURNAL_DROPPED_ABSENT] = j.dropped_absent;
	n[PMW_SR_D_JOURNAL_DROPPED_ERROR] = j.dropped_error;
	n[PMW_SR_D_SERVED] = r->n_live;
	n[PMW_SR_D_EXITED_KEPT] = r->n_history;
	n[PMW_SR_D_EXITED_MAX] = REGISTRY_HISTORY;
	n[PMW_SR_D_EXITED_FORGOTTEN] = r->n_evicted;
	n[PMW_SR_D_UNSERVED_MORE] = more;
	n[PMW_SR_D_FLAGS] = flags;
	n[PMW_SR_D_PID_ASKED] = (uint64_t)(pid > 0 ? pid : 0);
	strs[PMW_SR_D_POLICY_FILE] = m->config_path;
	strs[PMW_SR_D_SOCKET] = server_socket_path(m->server);
	status_data_add(d, PMW_SR_DAEMON, n, PMW_SR_D_N_NUMS, strs, PMW_SR_D_N_STRS);
}

/* pmallocctl status PID: the process's entry in detail (its rules, its
 * sites); the live one, else the newest exited one of that pid. */
static const struct proc_entry *find_one(const struct registry *r, uid_t viewer, pid_t pid, uid_t *ret_uid)
{
	for (const struct proc_entry *e = r->live; e; e = e->next)
		if (e->pid == pid && visible(*ret_uid = entry_uid(e), viewer))
			return e;
	for (const struct proc_entry *e = r->history; e; e = e->next)
		if (e->pid == pid && visible(*ret_uid = entry_uid(e), viewer))
			return e;
	return NULL;
}

void status_render(struct manager *m, struct status_data *d, uid_t viewer, pid_t pid)
{
	const struct registry *r = &m->registry;
	const struct proc_entry *one = NULL;
	uint64_t now = 0, flags = viewer == 0 ? PMW_SR_D_ROOT_VIEW : 0;
	struct status_data unserved = { 0 };
	unsigned int more = 0;
	uid_t uid = 0;

	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &now);
	if (pid > 0) {
		flags |= PMW_SR_D_DETAIL;
		one = find_one(r, viewer, pid, &uid);
		if (!one)
			flags |= PMW_SR_D_NO_SUCH;
	} else if (viewer == 0) {
		more = emit_unserved(m, &unserved, now);
	}
	emit_daemon(m, d, now, flags, pid, more);
	emit_warnings(m, d);
	if (pid > 0) {
		if (one)
			emit_entry(d, one, uid, now, true);
		return;
	}
	append(d, &unserved);
	status_data_done(&unserved);
	for (const struct proc_entry *e = r->live; e && !d->full; e = e->next)
		if (visible(uid = entry_uid(e), viewer))
			emit_entry(d, e, uid, now, false);
	for (const struct proc_entry *e = r->history; e && !d->full; e = e->next)
		if (visible(uid = entry_uid(e), viewer))
			emit_entry(d, e, uid, now, false);
}
