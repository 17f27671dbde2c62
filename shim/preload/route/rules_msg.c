/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rules_msg.c - what pmallocd shows about this process's pools
 * (PMW_RULES): each rule of its policy (site, wrapper, on-call trigger)
 * and whether it matched something loaded, sent once the policy is armed
 * (after the handshake, never on its path) and again when a dlopen'ed
 * object resolves a rule; and the call sites whose objects the pools hold,
 * with objects and bytes, sent after a protect (what it protected), at
 * most once a second: a pool protected at every accept() must not pay a
 * pass over its objects each time (status shows the table's age); and
 * when pmallocd asks (pmallocctl status PID), where orders are read.
 *
 * Owns the rows' contents; client.c sends.  Without pmallocd nothing is
 * built or sent (resolve.c has said each unmatched rule in the journal
 * already).
 * Normal context only, never under a lock of the shim's: one static
 * message under a flag; a sender finding it busy marks its table pending
 * and the holder sends that too before letting go.  Never blocks, and
 * never waits for an answer.  Costs (callgrind, learn_prog with one pool
 * of three rules): the rules, about 2,300 instructions and one send(2) of
 * 7 KiB, once at start-up; the sites, one pass over the pools' object
 * records (pool_sites.c) into a 192 KiB zeroed table of libc's (mmap'ed,
 * touched where used), about 3,400 instructions for one object.
 */
#define _GNU_SOURCE
#include "rules_msg.h"
#include "fmt.h"
#include "heap.h"
#include "pool_sites.h"
#include "os.h"
#include "dynsym.h"
#include "client.h"
#include "resolve.h"
#include "armed.h"
#include "take.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SITES_EVERY_NS UINT64_C(1000000000)

static struct pmw_rules msg;
static _Atomic uint64_t sites_sent_ns;
static atomic_flag msg_busy = ATOMIC_FLAG_INIT;
static _Atomic unsigned int pending;      /* bit what: asked while busy */

/* Names, read from the policy's image (read-only, like the state). */
static const char *policy_name(const struct shim_state *st)
{
	return pimg_policy_name(st->image);
}

static const char *pool_name(const struct shim_state *st, size_t i)
{
	return pimg_pool_name(st->image, i);
}

static void copy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);
	memcpy(dst, src, n);
	memset(dst + n, 0, len - n);
}

/* Room for another row (counted in total either way)? */
static struct pmw_row *row_add(struct pmw_rules *m, const struct shim_state *st, int pool, uint32_t kind,
			       uint32_t state)
{
	m->total++;
	if (state == PMW_ROW_NO_FUNCTION || state == PMW_ROW_NO_OFFSET || state == PMW_ROW_DROPPED)
		m->unresolved++;
	if (m->n_rows == PMW_ROWS)
		return NULL;
	struct pmw_row *r = &m->rows[m->n_rows++];
	copy(r->pool, sizeof(r->pool), pool_name(st, (size_t)pool));
	r->kind = kind;
	r->state = state;
	return r;
}

static uint32_t rule_state(const struct resolve_rule_view *v)
{
	if (v->dropped)
		return PMW_ROW_DROPPED;
	if (v->matched)
		return PMW_ROW_RESOLVED;
	if (!v->object_loaded)
		return PMW_ROW_NOT_LOADED;
	return v->by_offset ? PMW_ROW_NO_OFFSET : PMW_ROW_NO_FUNCTION;
}

/* Rules that matched nothing or were left out of an object first
 * (unmatched == true), then the others: past PMW_ROWS rows only resolved
 * ones are left out. */
static void add_rules(struct pmw_rules *m, const struct shim_state *st, bool unmatched)
{
	struct resolve_rule_view v;
	for (size_t i = 0; resolve_rule(i, &v); i++) {
		if (v.pool < 0 || (size_t)v.pool >= st->n_pools || !v.looked_up ||
		    (!v.matched || v.dropped) != unmatched)
			continue;
		struct pmw_row *r = row_add(m, st, v.pool, v.wrapper ? PMW_ROW_WRAPPER : PMW_ROW_SITE,
					    rule_state(&v));
		if (!r)
			continue;
		struct fmt f;
		fmt_init(&f, r->text, sizeof(r->text));
		if (v.object) {
			fmt_str(&f, v.object);
			if (v.build_id) {
				fmt_str(&f, "@");
				fmt_str(&f, v.build_id);
			}
			fmt_str(&f, ":");
		}
		fmt_str(&f, v.function);
		fmt_cstr(&f);
	}
}

/* On-call triggers name a libc function the shim interposes (on-wait, a
 * set of them): the policy parser takes no other, so each one is in place (whether the program
 * ever calls it, the pool's protects say). */
static void add_triggers(struct pmw_rules *m, const struct shim_state *st)
{
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct pimg_pool *pp = pimg_pool(st->image, i);
		for (size_t t = 0; t < pp->n_triggers; t++) {
			const struct pimg_trigger *tr = pimg_pool_trigger(st->image, pp, t);
			if (tr->kind != POLICY_TRIGGER_ON_CALL && tr->kind != POLICY_TRIGGER_ON_WAIT)
				continue;
			struct pmw_row *r = row_add(m, st, (int)i, PMW_ROW_ON_CALL, PMW_ROW_RESOLVED);
			if (r) {
				struct fmt f;
				fmt_init(&f, r->text, sizeof(r->text));
				if (tr->kind == POLICY_TRIGGER_ON_WAIT) {
					fmt_str(&f, "on-wait");
				} else {
					fmt_str(&f, "on-call:");
					fmt_str(&f, policy_call_name(tr->call));
				}
				fmt_cstr(&f);
			}
		}
	}
}

/* The PMW_ROWS sites with the most bytes, largest first. */
/* Call site id as a row's text: its symbol, else module+offset. */
static void site_text(struct pmw_row *r, uint16_t id)
{
	const char *sym = site_symbol(id);
	struct fmt f;
	fmt_init(&f, r->text, sizeof(r->text));
	if (sym)
		fmt_str(&f, sym);
	else
		dynsym_location(&f, site_address(id), true);
	fmt_cstr(&f);
}

static void add_sites(struct pmw_rules *m, const struct shim_state *st)
{
	struct pool_site_count *c = heap_calloc(SITE_SLOTS, sizeof(*c));
	uint16_t *seen = heap_malloc(SITE_SLOTS * sizeof(*seen));
	uint16_t top[PMW_ROWS];
	size_t n_top = 0, n_seen = 0;
	if (!c || !seen) {
		heap_free(c);
		heap_free(seen);
		return;
	}
	for (size_t i = 0; i < st->n_pools; i++)
		pool_sites_count(st->pools[i].pool, (int)i, false, c, seen, &n_seen);
	for (size_t s = 0; s < n_seen; s++) {
		uint32_t k = seen[s] - 1u;
		m->total++;
		size_t at = n_top;
		while (at > 0 && c[top[at - 1]].bytes < c[k].bytes)
			at--;
		if (at == PMW_ROWS)
			continue;
		if (n_top < PMW_ROWS)
			n_top++;
		memmove(top + at + 1, top + at, (n_top - 1 - at) * sizeof(top[0]));
		top[at] = (uint16_t)k;
	}
	for (size_t j = 0; j < n_top; j++) {
		const struct pool_site_count *sc = &c[top[j]];
		struct pmw_row *r = &m->rows[m->n_rows++];
		uint16_t id = (uint16_t)(top[j] + 1);
		copy(r->pool, sizeof(r->pool), pool_name(st, (size_t)sc->pool));
		r->kind = PMW_ROW_CALL_SITE;
		r->state = PMW_ROW_COUNTED;
		r->objects = sc->objects;
		r->bytes = sc->bytes;
		site_text(r, id);
	}
	/* take = "until-trigger": the sites that allocated after their
	 * pool's trigger, what went to the heap (take.c), after the others. */
	for (uint32_t k = 0; k < SITE_SLOTS; k++) {
		uint64_t objects, bytes;
		uint16_t id = (uint16_t)(k + 1);
		int route = site_route(id);
		if (!take_late_counts(id, &objects, &bytes) || route < 0 || (size_t)route >= st->n_pools)
			continue;
		m->total++;
		if (m->n_rows == PMW_ROWS)
			continue;
		struct pmw_row *r = &m->rows[m->n_rows++];
		copy(r->pool, sizeof(r->pool), pool_name(st, (size_t)route));
		r->kind = PMW_ROW_CALL_SITE;
		r->state = PMW_ROW_LATE;
		r->objects = objects;
		r->bytes = bytes;
		site_text(r, id);
	}
	heap_free(c);
	heap_free(seen);
}

static void build(struct pmw_rules *m, const struct shim_state *st, enum rules_msg_what what)
{
	memset(m, 0, sizeof(*m));
	pmw_header_init(&m->h, PMW_RULES, sizeof(*m));
	copy(m->policy, sizeof(m->policy), policy_name(st));
	m->generation = st->generation;
	m->what = what;
	if (what == RULES_MSG_RULES) {
		add_rules(m, st, true);
		add_rules(m, st, false);
		add_triggers(m, st);
	} else {
		add_sites(m, st);
	}
}

static void send_now(const struct shim_state *st, enum rules_msg_what what);

/* A forked child starts with the message free: another thread of the
 * parent's may have held it at the fork. */
static void after_fork_child(void)
{
	atomic_flag_clear(&msg_busy);
	atomic_store(&pending, 0);
}

static void at_fork_once(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

void rules_msg_answer(void)
{
	const struct shim_state *st = shim;
	if (st)
		send_now(st, RULES_MSG_SITES);
}

void rules_msg_send(enum rules_msg_what what)
{
	const struct shim_state *st = shim;
	if (!st || !client_has_daemon())
		return;
	if (what == RULES_MSG_SITES) {
		uint64_t now = os_monotonic_ns(true), last = atomic_load(&sites_sent_ns);
		if ((last && now - last < SITES_EVERY_NS) ||
		    !atomic_compare_exchange_strong(&sites_sent_ns, &last, now))
			return;
	}
	send_now(st, what);
}

static void send_now(const struct shim_state *st, enum rules_msg_what what)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, at_fork_once);
	atomic_fetch_or(&pending, 1u << what);
	int busy = shim_busy_enter();
	/* Whoever holds the message sends what is pending, and looks again
	 * after letting go: a table asked for meanwhile is never lost. */
	while (atomic_load(&pending) && !atomic_flag_test_and_set(&msg_busy)) {
		unsigned int todo;
		while ((todo = atomic_exchange(&pending, 0)) != 0)
			for (unsigned int w = RULES_MSG_RULES; w <= RULES_MSG_SITES; w++)
				if (todo & (1u << w)) {
					build(&msg, st, (enum rules_msg_what)w);
					(void)client_send_msg(&msg, sizeof(msg));
				}
		atomic_flag_clear(&msg_busy);
	}
	shim_busy_leave(busy);
}
