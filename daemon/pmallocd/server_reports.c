/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_reports.c - what a served process tells pmallocd (see
 * server_reports.h): a pool made read-only (PROTECTED), a write to one
 * (REPORT), its rules and sites (RULES).  Each is checked against what
 * was handed out on the connection, counted, kept in the registry entry
 * of the process that sent it, and sent to the journal within its limits.
 *
 * Owns: those three messages' checks and counts, a protect's
 * generation record, the rate-limit key of a pool.
 * Never: closes the connection over a refused report (it is counted, and
 * the connection kept), writes a field to the journal unescaped, or
 * blocks.
 */
#define _GNU_SOURCE
#include "server_reports.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "escape.h"
#include "journal.h"
#include "proc_entry.h"
#include "repeat.h"
#include "rules.h"
#include "server_client.h"
#include "server_hello.h"
#include "violation.h"
#include "wire.h"

/* A report or protect message must name the policy handed out on this
 * connection (children inherit it) and one of its pools, or, for a report,
 * no policy (an API pool): anything else is refused and counted, the
 * connection kept. */
static bool handed_out(struct client *c, const char *what, bool api_ok, const char *policy,
		       const char *pool)
{
	if ((policy[0] || api_ok) && proc_entry_handed_check(c->entry, policy, pool) == 0)
		return true;
	client_drop(c, forged, "%s naming a policy or pool not handed to it, refused", client_drop_args(c),
		    what);
	return false;
}

/* The sender of a report or protect message that passes handed_out(), the
 * message counted in *counter; NULL when it does not pass, or when
 * sender_entry() refuses (counted by budget.c). */
static struct proc_entry *pool_message_sender(struct client *c, const char *what, bool api_ok,
					      const char *policy, const char *pool, const struct ucred *cred,
					      uint64_t *counter)
{
	if (!handed_out(c, what, api_ok, policy, pool))
		return NULL;
	(*counter)++;
	return sender_entry(c, cred);
}

/* Rate-limit site of a protect entry: its pool (FNV-1a of policy and name). */
static uint64_t pool_key(const char *policy, const char *pool)
{
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = policy; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL;
	for (const char *p = pool; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	return h == UINT64_MAX ? 0 : h;
}

int handle_protected(struct client *c, struct pmw_protected *m, const struct ucred *cred)
{
	struct server *s = c->server;
	const struct policy_daemon_settings *d = &s->manager->config->set->daemon;
	char policy[ESCAPED_SIZE(PMW_NAME)], pool[ESCAPED_SIZE(PMW_NAME)], trigger[ESCAPED_SIZE(PMW_NAME)];
	struct proc_entry *e;
	struct reg_pool *rp;

	text_escape(policy, sizeof(policy), m->policy);
	text_escape(pool, sizeof(pool), m->pool);
	text_escape(trigger, sizeof(trigger), m->trigger);
	/* Only policy pools are protected on their triggers and announced. */
	e = pool_message_sender(c, "PROTECTED", false, m->policy, m->pool, cred, &s->counters.protects);
	if (!e)
		return 0;
	e->protects++;
	rp = proc_entry_pool(e, policy, pool);
	if (rp) {
		rp->protected_bytes = m->protected_bytes;
		rp->objects = m->objects;
		rp->protects++;
		str_copy(rp->last_trigger, sizeof(rp->last_trigger), trigger);
		/* A generation: a protect that made memory read-only (the
		 * shim numbers them; an older shim sends 0, numbered here). */
		if (m->new_bytes) {
			struct reg_generation *g = &rp->gens[rp->n_gens % PMW_SR_G_KEPT];

			g->generation = m->pool_generation ? m->pool_generation : rp->n_gens + 1;
			g->new_bytes = m->new_bytes;
			g->protected_bytes = m->protected_bytes;
			g->freed_bytes = m->freed_bytes;
			g->usec = now_usec(s);
			str_copy(g->trigger, sizeof(g->trigger), trigger);
			rp->n_gens++;
		}
	} else
		e->pools_untracked++;

	if (journal_limit_admit(s->manager->event, e, LIMIT_PROTECTED, pool_key(policy, pool), policy,
				pool, d->report_burst, d->report_interval_s))
		journal_protected(e, m, policy, pool, trigger);
	else
		e->protects_dropped++;
	return 0;
}

int handle_report(struct client *c, struct pmw_report *m, const struct ucred *cred)
{
	struct server *s = c->server;
	const struct policy_daemon_settings *d = &s->manager->config->set->daemon;
	char policy[ESCAPED_SIZE(PMW_NAME)], pool[ESCAPED_SIZE(PMW_NAME)];
	struct proc_entry *e;

	e = pool_message_sender(c, "REPORT", true, m->policy, m->pool, cred, &s->counters.reports);
	if (!e)
		return 0;
	e->violations++;
	text_escape(policy, sizeof(policy), m->policy);
	text_escape(pool, sizeof(pool), m->pool);
	/* The process's own limit, then its executable's (a crash loop). */
	if (!journal_limit_admit(s->manager->event, e, LIMIT_VIOLATION, m->fault_ip, policy, pool,
				 d->report_burst, d->report_interval_s) ||
	    !repeat_admit(&s->repeats, REPEAT_VIOLATION, e, m, policy, pool)) {
		e->violations_dropped++;
		return 0;
	}
	violation_log(s->manager->symbolizer, e, m);
	return 0;
}

/* What a process says of its rules and sites (rules.c keeps it): checked
 * like a report, its pools those handed out on this connection. */
int handle_rules(struct client *c, struct pmw_rules *m, const struct ucred *cred)
{
	struct proc_entry *e;
	int r;

	e = sender_entry(c, cred);
	if (!e)
		return 0;                /* counted by budget.c */
	r = rules_take(e, c->entry, m, now_usec(c->server));
	if (r == -EPERM)
		client_drop(c, forged, "RULES naming a policy or pool not handed to it, refused",
			    client_drop_args(c));
	return 0;                        /* -EBUSY: counted with the entry; -ENOMEM: not kept */
}

/* Exit began in the sender (a clean stop): journaled once per process
 * that holds a policy, for pmallocctl ready. */
int handle_exiting(struct client *c, const struct pmw_exiting *m, const struct ucred *cred)
{
	struct proc_entry *e = sender_entry(c, cred);

	if (e && e->has_policy && !e->exit_said) {
		e->exit_said = true;
		journal_exiting(e, m);
	}
	return 0;
}

/* The shim put its fault handler right (wire.h's PMW_NOTICE): counted for
 * status; the shim wrote the journal entry itself. */
int handle_notice(struct client *c, const struct pmw_notice *m, const struct ucred *cred)
{
	struct proc_entry *e = sender_entry(c, cred);

	if (!e)
		return 0;
	e->handler_notices++;
	e->handler_what |= m->what;
	return 0;
}
