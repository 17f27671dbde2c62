/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rules.c - what each served process says about its pools (PMW_RULES):
 * every rule of its policy (site, wrapper, on-call trigger) resolved or
 * not, and the objects and bytes of its call sites; kept with the
 * process's registry entry, shown by status (status.c lays out the rest).
 *
 * Owns: the tables' storage and their rate limit, and their status
 * records (pmallocctl words them).  The packet was checked by wire_check_rules() (sizes, counts,
 * kinds, strings ended); here every row's pool must be one of the policy
 * handed out on that connection, as for reports.  Never logs (server.c
 * counts and says what is refused), never holds more than PMW_ROWS rows a
 * table, two tables a process, nor takes more than RULES_BURST messages a
 * process per RULES_INTERVAL_USEC.  Text from the process is escaped
 * before it goes into status records.
 */
#define _GNU_SOURCE
#include "rules.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "registry.h"
#include "proc_rules.h"
#include "status_data.h"

int rules_take(struct proc_entry *e, const struct proc_entry *handed, const struct pmw_rules *m,
	       uint64_t now)
{
	struct proc_rules *r = e->rules;
	struct rules_table *t;
	struct pmw_row *rows = NULL;

	if (!handed->has_policy || !handed->handed_pools || strcmp(m->policy, handed->policy) != 0)
		return -EPERM;
	for (uint32_t i = 0; i < m->n_rows; i++)
		if (proc_entry_handed_check(handed, m->policy, m->rows[i].pool) < 0)
			return -EPERM;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		e->rules = r;
	}
	if (now - r->window_start >= RULES_INTERVAL_USEC || r->window_start == 0) {
		r->window_start = now ? now : 1;
		r->window_n = 0;
	}
	if (r->window_n >= RULES_BURST) {
		r->refused++;
		return -EBUSY;
	}
	r->window_n++;
	if (m->n_rows) {
		rows = malloc(m->n_rows * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		memcpy(rows, m->rows, m->n_rows * sizeof(*rows));
	}
	t = m->what == PMW_RULES_RULES ? &r->rules : &r->sites;
	free(t->rows);
	t->rows = rows;
	t->n = m->n_rows;
	t->total = m->total;
	t->unresolved = m->unresolved;
	t->usec = now ? now : 1;
	return 0;
}

#define ASK_EVERY_USEC 1000000ULL

static bool reads_orders(const struct proc_entry *e)
{
	const char *end;

	if (!e->has_policy || !e->handed_pools)
		return false;
	end = e->handed_pools + e->handed_pools_len;
	if (e->mode == POLICY_MODE_LEARN)
		return true;
	for (const char *q = e->handed_pools; q < end; q += 1 + strlen(q + 1) + 1)
		if (q[0] == 'M' || q[0] == 'A')
			return true;
	return false;
}

bool rules_ask(struct proc_entry *e, uid_t viewer, uint64_t now)
{
	if ((viewer != 0 && viewer != e->uid) || e->via_pid || !reads_orders(e))
		return false;
	if (!e->rules) {
		e->rules = calloc(1, sizeof(*e->rules));
		if (!e->rules)
			return false;
	}
	if (e->rules->asked_usec && now - e->rules->asked_usec < ASK_EVERY_USEC)
		return false;
	e->rules->asked_usec = now ? now : 1;
	return true;
}

int rules_inherit(struct proc_entry *child, const struct proc_entry *parent)
{
	const struct rules_table *from = parent->rules ? &parent->rules->rules : NULL;
	struct proc_rules *r;

	if (!from || !from->usec || child->rules)
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->rules = *from;
	r->rules.rows = from->n ? malloc(from->n * sizeof(*from->rows)) : NULL;
	if (from->n && !r->rules.rows) {
		free(r);
		return -ENOMEM;
	}
	if (from->n)
		memcpy(r->rules.rows, from->rows, from->n * sizeof(*from->rows));
	child->rules = r;
	return 0;
}

static bool row_of_pool(const struct pmw_row *row, const char *pool_shown)
{
	char p[ESCAPED_SIZE(PMW_NAME)];

	text_escape(p, sizeof(p), row->pool);
	return strcmp(p, pool_shown) == 0;
}

/* A row as a record: its pool and text escaped, as status shows them. */
static void emit_row(struct status_data *d, enum pmw_srec_type type, const struct pmw_row *row)
{
	char pool[ESCAPED_SIZE(PMW_NAME)], text[ESCAPED_SIZE(PMW_SYM)];

	text_escape(pool, sizeof(pool), row->pool);
	text_escape(text, sizeof(text), row->text);
	if (type == PMW_SR_RULE) {
		uint64_t n[PMW_SR_R_N_NUMS] = { row->kind, row->state };
		const char *strs[PMW_SR_R_N_STRS] = { text };

		status_data_add(d, type, n, PMW_SR_R_N_NUMS, strs, PMW_SR_R_N_STRS);
	} else {
		uint64_t n[PMW_SR_S_N_NUMS] = { row->objects, row->bytes, row->state == PMW_ROW_LATE };
		const char *strs[PMW_SR_S_N_STRS] = { pool, text };

		status_data_add(d, type, n, PMW_SR_S_N_NUMS, strs, PMW_SR_S_N_STRS);
	}
}

void rules_emit_pool(struct status_data *d, const struct proc_entry *e, const char *pool)
{
	const struct rules_table *t = e->rules ? &e->rules->rules : NULL;

	if (!t || !t->usec)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		if (row_of_pool(&t->rows[i], pool))
			emit_row(d, PMW_SR_RULE, &t->rows[i]);
}

/* Pool (raw) of e: unless a protect reached it or it was emitted already
 * (a pool among the first n_handed handed out, or rows[0, n_rows)), a
 * record saying it is not protected yet, with its rules. */
static void emit_unprotected(struct status_data *d, const struct proc_entry *e, const char *raw,
			     size_t n_handed, uint32_t n_rows)
{
	const struct rules_table *t = &e->rules->rules;
	const char *q = e->handed_pools;
	char pool[ESCAPED_SIZE(PMW_NAME)];
	uint64_t n[PMW_SR_O_N_NUMS] = { 0 };
	/* Not protected: the trigger pmallocctl protect asked for, else none. */
	const char *strs[PMW_SR_O_N_STRS] = { pool, e->policy,
					      proc_entry_manual_was_asked(e, raw) ? "manual:pmallocctl" : "" };

	text_escape(pool, sizeof(pool), raw);
	for (size_t k = 0; k < e->n_pools; k++)
		if (strcmp(e->pools[k].name, pool) == 0)
			return;
	for (size_t k = 0; k < n_handed; k++, q += 1 + strlen(q + 1) + 1)
		if (strcmp(q + 1, raw) == 0)
			return;
	for (uint32_t k = 0; k < n_rows; k++)
		if (strcmp(t->rows[k].pool, raw) == 0)
			return;
	status_data_add(d, PMW_SR_POOL, n, PMW_SR_O_N_NUMS, strs, PMW_SR_O_N_STRS);
	rules_emit_pool(d, e, pool);
}

void rules_emit_unprotected(struct status_data *d, const struct proc_entry *e)
{
	const struct rules_table *t = e->rules ? &e->rules->rules : NULL;
	const char *end = e->handed_pools ? e->handed_pools + e->handed_pools_len : NULL;
	size_t n_handed = 0;

	/* Said only once the process said its rules: its policy is armed.
	 * The pools handed out, then those its rules name (a forked child's
	 * entry has its parent's rules, not its hand-out). */
	if (!t || !t->usec)
		return;
	for (const char *q = e->handed_pools; end && q < end; q += 1 + strlen(q + 1) + 1)
		emit_unprotected(d, e, q + 1, n_handed++, 0);
	for (uint32_t i = 0; i < t->n; i++)
		emit_unprotected(d, e, t->rows[i].pool, n_handed, i);
}

void rules_emit_sites(struct status_data *d, const struct proc_entry *e)
{
	const struct rules_table *t = e->rules ? &e->rules->sites : NULL;

	if (!t || !t->usec)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		emit_row(d, PMW_SR_SITE, &t->rows[i]);
}
