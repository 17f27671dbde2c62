/*
 * rules.c - what each served process says about its pools (PMW_RULES):
 * every rule of its policy (site, wrapper, on-call trigger) resolved or
 * not, and the objects and bytes of its call sites; kept with the
 * process's registry entry, shown by status (status.c lays out the rest).
 *
 * Owns: the tables' storage and their rate limit, the words status uses
 * for them.  The packet was checked by wire_check_rules() (sizes, counts,
 * kinds, strings ended); here every row's pool must be one of the policy
 * handed out on that connection, as for reports.  Never logs (server.c
 * counts and says what is refused), never holds more than PMW_ROWS rows a
 * table, two tables a process, nor takes more than RULES_BURST messages a
 * process per RULES_INTERVAL_USEC.  Text from the process is escaped
 * before it is shown.
 */
#define _GNU_SOURCE
#include "rules.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "registry.h"

int rules_take(struct proc_entry *e, const struct pmw_rules *m, uint64_t now)
{
	struct proc_rules *r = e->rules;
	struct rules_table *t;
	struct pmw_row *rows = NULL;

	if (!m->policy[0])
		return -EPERM;
	for (uint32_t i = 0; i < m->n_rows; i++)
		if (proc_entry_handed_check(e, m->policy, m->rows[i].pool) < 0)
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

static const char *kind_word(uint32_t kind)
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

static const char *why_unresolved(uint32_t state)
{
	return state == PMW_ROW_NO_OFFSET ? "no loaded object fits its object glob and build-id"
					  : "no function of that name in any loaded object";
}

static bool row_of_pool(const struct pmw_row *row, const char *pool_shown)
{
	char p[ESCAPED_SIZE(PMW_NAME)];

	text_escape(p, sizeof(p), row->pool);
	return strcmp(p, pool_shown) == 0;
}

void rules_render_pool(struct strbuf *b, const struct proc_entry *e, const char *pool, bool detail)
{
	const struct rules_table *t = e->rules ? &e->rules->rules : NULL;
	char text[ESCAPED_SIZE(PMW_SYM)];
	unsigned int resolved = 0, unresolved = 0;

	if (!t || !t->usec)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		if (row_of_pool(&t->rows[i], pool)) {
			if (t->rows[i].state == PMW_ROW_RESOLVED)
				resolved++;
			else
				unresolved++;
		}
	if (resolved + unresolved == 0)
		return;
	strbuf_printf(b, "      rules: %u resolved, %u unresolved\n", resolved, unresolved);
	for (uint32_t i = 0; i < t->n; i++) {
		const struct pmw_row *row = &t->rows[i];

		if (!row_of_pool(row, pool) || (row->state == PMW_ROW_RESOLVED && !detail))
			continue;
		text_escape(text, sizeof(text), row->text);
		if (row->state == PMW_ROW_RESOLVED)
			strbuf_printf(b, "      resolved: %s %s\n", kind_word(row->kind), text);
		else
			strbuf_printf(b, "      unresolved: %s %s (%s)\n", kind_word(row->kind), text,
				      why_unresolved(row->state));
	}
}

void rules_render_unprotected(struct strbuf *b, const struct proc_entry *e, bool detail)
{
	const struct rules_table *t = e->rules ? &e->rules->rules : NULL;
	char pool[ESCAPED_SIZE(PMW_NAME)];

	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		bool seen = false;

		text_escape(pool, sizeof(pool), t->rows[i].pool);
		for (uint32_t k = 0; k < i && !seen; k++)
			seen = row_of_pool(&t->rows[k], pool);
		for (size_t k = 0; k < e->n_pools && !seen; k++)
			seen = strcmp(e->pools[k].name, pool) == 0;
		if (seen)
			continue;
		strbuf_printf(b, "    pool \"%s\": not protected yet (no trigger has fired)\n", pool);
		rules_render_pool(b, e, pool, detail);
	}
	if (t->total > t->n)
		strbuf_printf(b, "    (%" PRIu32 " more rules, all resolved, not listed)\n", t->total - t->n);
	if (t->unresolved > 0)
		strbuf_printf(b, "    warning: %" PRIu32 " of %" PRIu32 " rules match nothing: "
			      "they protect nothing\n", t->unresolved, t->total);
}

void rules_render_sites(struct strbuf *b, const struct proc_entry *e, uint64_t now)
{
	const struct rules_table *t = e->rules ? &e->rules->sites : NULL;
	char pool[ESCAPED_SIZE(PMW_NAME)], text[ESCAPED_SIZE(PMW_SYM)];

	if (!t || !t->usec) {
		strbuf_puts(b, "    sites: none reported yet (a process reports its sites after each protect)\n");
	} else {
		strbuf_printf(b, "    sites: %" PRIu32 " of %" PRIu32 " listed, as of %" PRIu64
			      "s ago (sent after a protect, at most one a second)\n", t->n, t->total, (now - t->usec) / 1000000u);
		for (uint32_t i = 0; i < t->n; i++) {
			text_escape(pool, sizeof(pool), t->rows[i].pool);
			text_escape(text, sizeof(text), t->rows[i].text);
			strbuf_printf(b, "      site %s  pool \"%s\": %" PRIu64 " objects, %" PRIu64 " bytes\n",
				      text, pool, t->rows[i].objects, t->rows[i].bytes);
		}
	}
	if (e->rules && e->rules->refused)
		strbuf_printf(b, "    (%" PRIu64 " rules and sites messages over the rate limit, not kept)\n",
			      e->rules->refused);
}
