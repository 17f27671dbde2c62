/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * budget.c - per-user budgets (see budget.h).
 *
 * Owns: struct uid_budget lifetime (one per uid with a connection or a
 * tracked forked child; freed with the last of them), the connection shares and
 * the root reserve, the entry caps, the journal-entry windows and their
 * summary timers.
 * Never: reads sockets or /proc, or blocks; its work is O(users) at
 * accept only, O(1) everywhere else.
 */
#define _GNU_SOURCE
#include "budget.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "list.h"
#include "log.h"

#define USEC_PER_SEC 1000000ULL

void budgets_init(struct budgets *b, sd_event *event, size_t max_clients, budget_summary_fn *summarise,
		  const struct persons *persons)
{
	memset(b, 0, sizeof(*b));
	b->persons = persons;
	b->event = event;
	b->summarise = summarise;
	b->max_clients = max_clients;
	b->report_burst = 20;
	b->report_interval_s = 10;
}

void budgets_set_rate(struct budgets *b, unsigned int report_burst, unsigned int report_interval_s)
{
	b->report_burst = report_burst;
	b->report_interval_s = report_interval_s;
}

static uint64_t now_usec(const struct budgets *b)
{
	uint64_t t = 0;
	(void)sd_event_now(b->event, CLOCK_MONOTONIC, &t);
	return t;
}

static void summary(struct uid_budget *u)
{
	if (u->dropped == 0)
		return;
	u->owner->summarise(u->uid, u->dropped, u->burst, u->interval_s);
	u->owner->summaries++;
	u->dropped = 0;
}

static int on_window_end(sd_event_source *src, uint64_t usec, void *userdata);

/* u's timer, armed (or re-armed) for the end of its journal window: 0 or
 * a negative errno from sd-event. */
static int arm_window_timer(struct budgets *b, struct uid_budget *u)
{
	int r;

	if (!u->timer)
		return sd_event_add_time(b->event, &u->timer, CLOCK_MONOTONIC, u->window_end, 100 * 1000,
					 on_window_end, u);
	r = sd_event_source_set_time(u->timer, u->window_end);
	return r < 0 ? r : sd_event_source_set_enabled(u->timer, SD_EVENT_ONESHOT);
}

/* Freed once it holds nothing and its journal window is over: a user
 * whose last process left and who comes straight back (a crash loop)
 * finds its budget as it was, not a fresh one. */
static void release_if_unused(struct uid_budget *u)
{
	struct budgets *b = u->owner;

	for (int k = 0; k < BUDGET_HOLDS; k++)
		if (u->held[k] > 0)
			return;
	if (u->window_end > now_usec(b) && b->event) {
		int r;

		r = arm_window_timer(b, u);
		if (r >= 0)
			return;                  /* on_window_end() frees it */
	}
	summary(u);
	u->timer = sd_event_source_disable_unref(u->timer);
	LIST_UNLINK(b->list, u);
	b->n_users--;
	free(u);
}

void budgets_done(struct budgets *b)
{
	while (b->list) {
		struct uid_budget *u = b->list;

		memset(u->held, 0, sizeof(u->held));
		u->window_end = 0;
		release_if_unused(u);
	}
}

static struct uid_budget *budget_get(struct budgets *b, uid_t uid)
{
	struct uid_budget *u;

	for (u = b->list; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->owner = b;
	u->uid = uid;
	LIST_PUSH(b->list, u);
	b->n_users++;
	return u;
}

size_t budget_cap(const struct budgets *b, enum budget_hold kind)
{
	size_t n = b->max_clients / BUDGET_CLIENTS_DIV;

	if (n == 0)
		n = 1;
	return kind == BUDGET_ENTRY ? BUDGET_ENTRIES_PER_CLIENT * n : n;
}

/* One more hold of kind on u: false, counted as refused, when u is not
 * root's and is at its cap. */
static bool hold(struct uid_budget *u, enum budget_hold kind)
{
	struct budgets *b = u->owner;

	if (u->uid != 0) {
		if (u->held[kind] >= budget_cap(b, kind)) {
			b->refused[kind]++;
			return false;
		}
		b->held_nonroot[kind]++;
	}
	u->held[kind]++;
	return true;
}

static void release(struct uid_budget *u, enum budget_hold kind)
{
	u->held[kind]--;
	if (u->uid != 0)
		u->owner->held_nonroot[kind]--;
	release_if_unused(u);
}

struct uid_budget *budget_client_add(struct budgets *b, uid_t uid)
{
	size_t users_cap = b->max_clients - b->max_clients / BUDGET_ROOT_RESERVE_DIV;
	struct uid_budget *u;

	uid = person_of(b->persons, uid);
	if (uid != 0 && b->held_nonroot[BUDGET_CLIENT] >= users_cap) {
		b->refused[BUDGET_CLIENT]++;
		return NULL;
	}
	u = budget_get(b, uid);
	if (u && !hold(u, BUDGET_CLIENT)) {
		release_if_unused(u);
		return NULL;
	}
	return u;
}

void budget_client_remove(struct uid_budget *u)
{
	if (u)
		release(u, BUDGET_CLIENT);
}

bool budget_entry_add(struct uid_budget *u)
{
	return !u || hold(u, BUDGET_ENTRY);
}

void budget_entry_remove(struct uid_budget *u)
{
	if (u)
		release(u, BUDGET_ENTRY);
}

static int on_window_end(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct uid_budget *u = userdata;

	(void)src;
	(void)usec;
	summary(u);
	release_if_unused(u);            /* a budget kept for its window alone goes */
	return 0;
}

bool budget_journal_admit(struct uid_budget *u)
{
	struct budgets *b;
	uint64_t now;
	int r;

	if (!u || u->uid == 0)
		return true;
	b = u->owner;
	if (b->report_burst == 0 || b->report_interval_s == 0)
		return true;                     /* rate limits off in the policy file */
	now = now_usec(b);
	if (now >= u->window_end) {
		summary(u);
		u->window_end = now + (uint64_t)b->report_interval_s * USEC_PER_SEC;
		u->count = 0;
		u->burst = BUDGET_JOURNAL_FACTOR * b->report_burst;
		u->interval_s = b->report_interval_s;
	}
	if (u->count < u->burst) {
		u->count++;
		return true;
	}
	u->dropped++;
	b->dropped_entries++;
	if (u->dropped == 1) {
		r = arm_window_timer(b, u);
		if (r < 0)
			log_warning_errno(r, "cannot arm the per-user budget timer: %m");
	}
	return false;
}

static void sym_window(uint64_t now, uint64_t *end, uint64_t *spent)
{
	if (now >= *end) {
		*end = now + BUDGET_SYM_WINDOW_US;
		*spent = 0;
	}
}

uint64_t budget_symbolize_allowance(struct uid_budget *u)
{
	struct budgets *b;
	uint64_t now, mine, all;

	if (!u || u->uid == 0)
		return UINT64_MAX;
	b = u->owner;
	now = now_usec(b);
	sym_window(now, &b->sym_window_end, &b->sym_spent);
	sym_window(now, &u->sym_window_end, &u->sym_spent);
	mine = u->sym_spent < BUDGET_SYM_USER_US ? BUDGET_SYM_USER_US - u->sym_spent : 0;
	all = b->sym_spent < BUDGET_SYM_ALL_US ? BUDGET_SYM_ALL_US - b->sym_spent : 0;
	return mine < all ? mine : all;
}

void budget_symbolize_spent(struct uid_budget *u, uint64_t us, bool cut)
{
	if (!u)
		return;
	if (cut)
		u->owner->sym_cut++;
	if (u->uid == 0)
		return;
	u->sym_spent += us;
	u->owner->sym_spent += us;
}
