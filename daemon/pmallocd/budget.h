/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * budget.h - what one unprivileged user can make pmallocd hold and write:
 * a user is a person (person.h: the uids of its subordinate range count
 * as its own; server.c counts a setuid program as its real uid's),
 * connections, registry entries (its processes and their forked children),
 * journal entries per interval.  Root (uid 0) has no per-user budget (only
 * the per-process rate limit and the global caps), and a share of the
 * connection table is kept for it, so that users, however many and however
 * loud, never keep root's services from their policy or root's reports
 * from the journal (jwriter.c keeps a reserve of its queue for root too).
 */
#ifndef PMALLOCD_BUDGET_H
#define PMALLOCD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "person.h"

#define BUDGET_CLIENTS_DIV 4             /* a non-root uid: at most max_clients / 4 connections */
#define BUDGET_ROOT_RESERVE_DIV 8        /* all non-root uids: max_clients less 1/8 of it */
#define BUDGET_ENTRIES_PER_CLIENT 2      /* a uid's tracked forked children: twice its
					  * connection cap (its connections' own entries
					  * are bounded by that cap) */
#define BUDGET_JOURNAL_FACTOR 8          /* a uid's journal entries per report_interval_s:
					  * 8 x report_burst */
/* Time the event loop spends opening and reading module files named in
 * reports (symbolize.c), per window: a user's, and all users' together
 * (root's reports are not held to it).  What is over it is shown as
 * module+offset.  With one look-up bounded by SYM_TABLES_MAX, no window
 * stalls the loop for much more than BUDGET_SYM_ALL_US. */
#define BUDGET_SYM_WINDOW_US 1000000
#define BUDGET_SYM_USER_US 20000
#define BUDGET_SYM_ALL_US 50000

/* What a uid's budget counts, each kind with its cap per non-root uid. */
enum budget_hold {
	BUDGET_CLIENT,                   /* its connections: max_clients / BUDGET_CLIENTS_DIV */
	BUDGET_ENTRY,                    /* its forked children's live registry entries:
					  * BUDGET_ENTRIES_PER_CLIENT times that */
	BUDGET_HOLDS
};

struct uid_budget {
	struct uid_budget *prev, *next;
	struct budgets *owner;
	uid_t uid;
	size_t held[BUDGET_HOLDS];       /* now, per kind */
	/* Journal entries in the current window, and those refused. */
	uint64_t window_end;             /* CLOCK_MONOTONIC usec */
	unsigned int count;
	uint64_t dropped;                /* in this window: the summary says how many */
	unsigned int burst, interval_s;  /* as when the window opened */
	sd_event_source *timer;          /* the summary at the window's end */
	uint64_t sym_window_end;         /* symbolization time in this window */
	uint64_t sym_spent;
};

/* Writes the summary entry of a uid's dropped entries (journal.c's
 * journal_budget_summary, given by the server: budget.c imports no journal). */
typedef void budget_summary_fn(uid_t uid, uint64_t dropped, unsigned int burst, unsigned int interval_s);

struct budgets {
	sd_event *event;
	const struct persons *persons;   /* the manager's; NULL: each uid its own */
	budget_summary_fn *summarise;
	struct uid_budget *list;
	size_t n_users;                  /* uids with a budget now */
	size_t held_nonroot[BUDGET_HOLDS];  /* all non-root uids' holds: connections are
					     * capped at max_clients less the root reserve */
	size_t max_clients;              /* the server's cap */
	unsigned int report_burst, report_interval_s;  /* the policy file's, in force */
	/* Totals, for status. */
	uint64_t refused[BUDGET_HOLDS];  /* holds refused: a uid over its cap (connections:
					  * or all users over theirs) */
	uint64_t dropped_entries;        /* journal entries over a uid's budget */
	uint64_t summaries;              /* budget summary entries written */
	uint64_t sym_window_end;         /* all users' symbolization time in this window */
	uint64_t sym_spent;
	uint64_t sym_cut;                /* reports not fully symbolized for the time budgets */
};

void budgets_init(struct budgets *b, sd_event *event, size_t max_clients, budget_summary_fn *summarise,
		  const struct persons *persons);
/* Writes the summaries still due and frees every budget. */
void budgets_done(struct budgets *b);
/* The journal budget follows the policy file's report_burst and
 * report_interval_s (BUDGET_JOURNAL_FACTOR times the burst). */
void budgets_set_rate(struct budgets *b, unsigned int report_burst, unsigned int report_interval_s);

/* The cap of one non-root uid's holds of kind. */
size_t budget_cap(const struct budgets *b, enum budget_hold kind);
/* A new connection of uid: its person's budget (u->uid is the person's) (held until budget_client_remove),
 * or NULL when refused (uid over max_clients / BUDGET_CLIENTS_DIV, all
 * users over max_clients less the root reserve; or ENOMEM).  Root is
 * refused only on ENOMEM: the server's global cap is its limit. */
struct uid_budget *budget_client_add(struct budgets *b, uid_t uid);
void budget_client_remove(struct uid_budget *u);
/* A registry entry for a forked child of u's uid: false when u is over its
 * cap (BUDGET_ENTRIES_PER_CLIENT times its connection share). */
bool budget_entry_add(struct uid_budget *u);
void budget_entry_remove(struct uid_budget *u);

/* May one more journal entry about a process of u's uid be written now?
 * Counted; when not, counted as dropped, and one summary entry
 * (MID_DROPPED, PMALLOC_UID) at the window's end says how many.  NULL or
 * root: always. */
bool budget_journal_admit(struct uid_budget *u);

/* Microseconds of symbolization a report about a process of u may take
 * now (0: none left in this window; root or NULL: UINT64_MAX). */
uint64_t budget_symbolize_allowance(struct uid_budget *u);
/* It took us microseconds (cut: it stopped for the allowance). */
void budget_symbolize_spent(struct uid_budget *u, uint64_t us, bool cut);

#endif
