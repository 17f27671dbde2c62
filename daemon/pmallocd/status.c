/*
 * status.c - the status text pmallocctl prints.
 *
 * Owns: the text's layout, and the /proc scan for processes a policy
 * names that never checked in (LD_PRELOAD missing or failed open); the
 * scan result is reused for a second so that status requests in a loop
 * cannot keep the daemon busy scanning.
 * Never: changes daemon state, or lists more than its bounds.
 */
#define _GNU_SOURCE
#include "status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "jwriter.h"
#include "escape.h"
#include "proc.h"
#include "rules.h"
#include "server.h"

#define USEC_PER_SEC 1000000ULL
#define STATUS_SCAN_REUSE_USEC USEC_PER_SEC

static void age(char *buf, size_t size, uint64_t usec)
{
	uint64_t s = usec / USEC_PER_SEC;

	if (s < 60)
		snprintf(buf, size, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, size, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, (s / 60) % 60);
	else
		snprintf(buf, size, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, (s / 3600) % 24);
}

static void render_entry(struct strbuf *b, const struct proc_entry *e, uint64_t now, bool detail)
{
	char a[32];

	strbuf_printf(b, "  PID %d  %s%s  uid %u", (int)e->pid, e->exe ? proc_entry_exe(e) : "(exe unknown)",
		      e->exe_deleted ? " (deleted)" : "", (unsigned)e->uid);
	if (e->via_pid)
		strbuf_printf(b, "  forked child of PID %d", (int)e->via_pid);
	if (e->has_policy)
		strbuf_printf(b, "  policy \"%s\" (%s, generation %" PRIu64 ")", e->policy,
			      policy_mode_name(e->mode), e->generation);
	else
		strbuf_printf(b, "  no policy (generation %" PRIu64 ")", e->generation);
	if (e->exited_usec) {
		age(a, sizeof(a), now - e->exited_usec);
		strbuf_printf(b, "  exited %s ago\n", a);
	} else if (proc_is_alive(e->pid, e->starttime)) {
		age(a, sizeof(a), now - e->since_usec);
		strbuf_printf(b, "  alive, served %s\n", a);
	} else
		strbuf_puts(b, "  exited (its connection is still open)\n");

	for (size_t i = 0; i < e->n_pools; i++) {
		const struct reg_pool *p = &e->pools[i];

		strbuf_printf(b, "    pool \"%s\"", p->name);
		if (p->policy[0] && (!e->has_policy || strcmp(p->policy, e->policy) != 0))
			strbuf_printf(b, " (policy \"%s\")", p->policy);
		strbuf_printf(b, ": %" PRIu64 " bytes protected in %" PRIu64 " objects, %" PRIu64
			      " protects (last: %s)\n", p->protected_bytes, p->objects, p->protects,
			      p->last_trigger[0] ? p->last_trigger : "?");
		rules_render_pool(b, e, p->name, detail);
	}
	rules_render_unprotected(b, e, detail);
	if (e->pools_untracked)
		strbuf_printf(b, "    (%" PRIu64 " protects of pools past the first %d not tracked)\n",
			      e->pools_untracked, REGISTRY_POOLS);
	if (e->violations || e->protects_dropped)
		strbuf_printf(b, "    violations: %" PRIu64 " reported, %" PRIu64
			      " not logged (rate limit); %" PRIu64 " protect entries not logged\n",
			      e->violations, e->violations_dropped, e->protects_dropped);
	if (detail)
		rules_render_sites(b, e, now);
}

/* What jwriter.c could not write: journald stalled or absent. */
static void render_journal(struct strbuf *b)
{
	struct jwriter_stats j;

	jwriter_get_stats(&j);
	strbuf_printf(b, "journal: %" PRIu64 " entries written (%" PRIu64 " after waiting for journald), %zu waiting"
		      "%s; %" PRIu64 " dropped: %" PRIu64 " with the queue full, %" PRIu64
		      " with no journald, %" PRIu64 " not sendable\n",
		      j.sent, j.sent_late, j.queued, j.queued && j.connected ? " (journald is not reading)" : "",
		      j.dropped_full + j.dropped_absent + j.dropped_error, j.dropped_full,
		      j.dropped_absent, j.dropped_error);
}

/* ---- never checked in ---- */

struct scan {
	struct manager *m;
	struct strbuf *out;
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

		text_escape(comm_shown, sizeof(comm_shown), comm);
		if (shown)
			text_escape(shown, size, exe);
		strbuf_printf(sc->out, "  PID %d  %s  uid %u  comm %s  policy \"%s\"\n", (int)pid,
			      shown ? shown : "?", (unsigned)uid, comm_shown, p->name);
		free(shown);
	}
out:
	free(exe);
	return 0;
}

static void render_unserved(struct manager *m, struct strbuf *out, uint64_t now)
{
	static struct strbuf cache;
	static uint64_t cache_time, cache_generation;
	static bool cached;
	struct scan sc = { .m = m, .self = getpid() };

	if (cached && now - cache_time < STATUS_SCAN_REUSE_USEC &&
	    cache_generation == m->config->generation) {
		strbuf_puts(out, strbuf_str(&cache));
		return;
	}
	strbuf_done(&cache);
	strbuf_init_alloc(&cache, 16 * 1024);
	sc.out = &cache;
	(void)proc_for_each(scan_one, &sc, STATUS_SCAN_MAX);
	if (sc.listed == 0)
		strbuf_puts(&cache, "  (none)\n");
	if (sc.more)
		strbuf_printf(&cache, "  ... and %u more\n", sc.more);
	cached = true;
	cache_time = now;
	cache_generation = m->config->generation;
	strbuf_puts(out, strbuf_str(&cache));
}

static void render_budgets(struct strbuf *out, const struct budgets *b)
{
	strbuf_printf(out, "per-user budgets: %zu users, root exempt; at most %zu connections a user, "
		      "%zu for all users; %u journal entries a user per %u s\n",
		      b->n_users, budget_cap(b, BUDGET_CLIENT), b->max_clients - b->max_clients / BUDGET_ROOT_RESERVE_DIV,
		      BUDGET_JOURNAL_FACTOR * b->report_burst, b->report_interval_s);
	strbuf_printf(out, "over budget: %" PRIu64 " connections refused, %" PRIu64
		      " messages of untracked forked children, %" PRIu64 " journal entries not written (%"
		      PRIu64 " summaries)\n", b->refused[BUDGET_CLIENT], b->refused[BUDGET_ENTRY], b->dropped_entries,
		      b->summaries);
}

static bool visible(const struct proc_entry *e, uid_t viewer)
{
	return viewer == 0 || e->uid == viewer;
}

static void put_warning(void *ctx, int line, const char *msg)
{
	char shown[ESCAPED_SIZE(512)];

	text_escape(shown, sizeof(shown), msg);
	strbuf_printf(ctx, "  line %d: %s\n", line, shown);
}

/* What the policy file in force says that cannot be what its author meant
 * (policy_lint(), as pmallocd's journal says at each load): an exe glob no
 * real path fits, one naming a symbolic link, a shadowed policy.  Worked
 * out once per generation: a status loop costs no file system look-ups. */
static void render_warnings(struct manager *m, struct strbuf *out)
{
	static struct strbuf cache;
	static uint64_t cache_generation;
	static bool cached;

	if (!cached || cache_generation != m->config->generation) {
		strbuf_done(&cache);
		strbuf_init_alloc(&cache, 4096);
		if (policy_lint(m->config->set, put_warning, &cache) == 0)
			strbuf_puts(&cache, "  (none)\n");
		cached = true;
		cache_generation = m->config->generation;
	}
	strbuf_puts(out, "\npolicy file warnings (of the generation in force; pmallocctl check says the same):\n");
	strbuf_puts(out, strbuf_str(&cache));
}

/* pmallocctl status PID: the process's entry in detail (its rules, its
 * sites); the live one, else the newest exited one of that pid. */
static void render_one(struct manager *m, struct strbuf *out, uid_t viewer, pid_t pid, uint64_t now)
{
	const struct registry *r = &m->registry;
	const struct proc_entry *found = NULL;
	bool live = true;

	for (const struct proc_entry *e = r->live; e && !found; e = e->next)
		if (e->pid == pid && visible(e, viewer))
			found = e;
	for (const struct proc_entry *e = r->history; e && !found; e = e->next)
		if (e->pid == pid && visible(e, viewer)) {
			found = e;
			live = false;
		}
	if (!found) {
		strbuf_printf(out, "no such process: PID %d was not served by this pmallocd%s\n", (int)pid,
			      viewer != 0 ? " (or is not yours)" : "");
		return;
	}
	strbuf_printf(out, "%s processes (PID %d):\n", live ? "served" : "exited", (int)pid);
	render_entry(out, found, now, true);
}

void status_render(struct manager *m, struct strbuf *out, uid_t viewer, pid_t pid)
{
	static const char cut[] = "... (status truncated)\n";
	const struct server_counters *k = server_get_counters(m->server);
	const struct registry *r = &m->registry;
	uint64_t now = 0;
	bool reserved = out->cap > 2 * sizeof(cut);
	char a[32], b[32];

	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &now);
	/* Keep room to say the text was cut. */
	if (reserved)
		out->cap -= sizeof(cut);

	age(a, sizeof(a), now - m->start_usec);
	age(b, sizeof(b), now - m->config_loaded_usec);
	strbuf_printf(out, "pmallocd (PID %d), running %s\n", (int)getpid(), a);
	strbuf_printf(out, "policy file: %s, generation %" PRIu64 " (%zu %s), loaded %s ago",
		      m->config_path, m->config->generation, m->config->set->n_policies,
		      m->config->set->n_policies == 1 ? "policy" : "policies", b);
	if (m->reloads_refused)
		strbuf_printf(out, "; %" PRIu64 " reloads refused", m->reloads_refused);
	strbuf_printf(out, "\nsocket: %s%s\n", server_socket_path(m->server),
		      server_socket_activated(m->server) ? " (socket activation)" : "");
	strbuf_printf(out, "clients: %zu connected (at most %zu); %" PRIu64 " accepted, %" PRIu64
		      " policies handed out, %" PRIu64 " without policy, %" PRIu64 " status requests\n",
		      server_n_clients(m->server), server_max_clients(m->server), k->accepted, k->handed,
		      k->no_policy, k->status_requests);
	strbuf_printf(out, "messages: %" PRIu64 " protects, %" PRIu64 " violation reports\n",
		      k->protects, k->reports);
	strbuf_printf(out, "protect requests: %" PRIu64 " (pmallocctl protect), %" PRIu64
		      " sent to the process\n", k->protect_requests, k->protect_sent);
	strbuf_printf(out, "dropped: %" PRIu64 " malformed, %" PRIu64 " oversized, %" PRIu64
		      " out of order, %" PRIu64 " passing fds, %" PRIu64 " silent, %" PRIu64
		      " vanished, %" PRIu64 " unidentified, %" PRIu64 " forged, %" PRIu64
		      " over the client limit, %" PRIu64 " wrong protocol version, %" PRIu64
		      " accept errors\n",
		      k->malformed, k->oversized, k->out_of_order, k->fds_passed, k->timed_out,
		      k->vanished, k->unidentified, k->forged, k->refused_busy, k->refused_version,
		      k->accept_errors);
	render_budgets(out, server_get_budgets(m->server));
	render_journal(out);
	render_warnings(m, out);
	if (pid > 0) {
		strbuf_puts(out, "\n");
		render_one(m, out, viewer, pid, now);
		goto done;
	}

	strbuf_puts(out, "\nrunning but never checked in (a policy matches; LD_PRELOAD missing or failed):\n");
	if (viewer != 0)
		strbuf_puts(out, "  (shown to root only)\n");
	else if (!out->full)
		render_unserved(m, out, now);

	strbuf_printf(out, "\nserved processes (%zu connected%s):\n", r->n_live,
		      viewer != 0 ? "; only yours are listed" : "");
	if (!r->live)
		strbuf_puts(out, "  (none)\n");
	for (const struct proc_entry *e = r->live; e && !out->full; e = e->next)
		if (visible(e, viewer))
			render_entry(out, e, now, false);

	strbuf_printf(out, "\nexited processes (last %d kept, %zu shown", REGISTRY_HISTORY, r->n_history);
	if (r->n_evicted)
		strbuf_printf(out, ", %" PRIu64 " older forgotten", r->n_evicted);
	strbuf_puts(out, "):\n");
	if (!r->history)
		strbuf_puts(out, "  (none)\n");
	for (const struct proc_entry *e = r->history; e && !out->full; e = e->next)
		if (visible(e, viewer))
			render_entry(out, e, now, false);

done:
	if (reserved)
		out->cap += sizeof(cut);
	if (out->full && reserved) {
		out->full = false;
		strbuf_puts(out, "\n");
		strbuf_puts(out, cut);
	}
}
