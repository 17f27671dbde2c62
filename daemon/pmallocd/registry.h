/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * registry.h - what pmallocd knows about each process it served: identity
 * (from the kernel), the hand-out, pools and protected bytes, violation
 * counts; live entries, then a bounded history of exited ones.
 */
#ifndef PMALLOCD_REGISTRY_H
#define PMALLOCD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc_entry.h"

#define REGISTRY_HISTORY 256             /* exited processes kept for status */

struct registry {
	struct proc_entry *live;         /* newest first */
	size_t n_live;
	struct proc_entry *history;      /* newest first */
	struct proc_entry *history_tail;
	size_t n_history;
	uint64_t n_evicted;
};

void registry_init(struct registry *r);
void registry_done(struct registry *r);

/* A new live entry (zeroed but for pid, uid, since); NULL on ENOMEM. */
struct proc_entry *registry_add(struct registry *r, pid_t pid, uid_t uid, uint64_t now);
/* The connection is gone: flush its rate-limit summaries, move it to the
 * history (dropping the oldest past REGISTRY_HISTORY). */
void registry_retire(struct registry *r, struct proc_entry *e, uint64_t now);

/* Take exe (malloc'ed, raw from /proc; may be NULL) as e's, with its
 * escaped form for display.  0 or -ENOMEM (exe is freed then). */
int proc_entry_set_exe(struct proc_entry *e, char *exe, bool deleted);
/* comm as read from /proc, kept escaped. */
void proc_entry_set_comm(struct proc_entry *e, const char *comm);
/* The pool (policy, name) of e, added on first use; NULL when e already
 * tracks REGISTRY_POOLS pools or on ENOMEM. */
struct reg_pool *proc_entry_pool(struct proc_entry *e, const char *policy, const char *name);

/* Remember the pools of p, the policy handed to e (as it was then: a reload
 * does not change what the process got).  0 or -ENOMEM. */
int proc_entry_set_handed(struct proc_entry *e, const struct policy *p);
/* Whether e's handed policy has pool name with a manual trigger: 0 yes,
 * -ENOENT no such pool, -EPERM no manual trigger, -ENODATA no hand-out. */
int proc_entry_handed_manual(const struct proc_entry *e, const char *name);
/* pmallocctl protect passed a request for e's manual pool name on: status
 * says so while no protect message came (an empty pool sends none). */
void proc_entry_manual_asked(struct proc_entry *e, const char *name);
bool proc_entry_manual_was_asked(const struct proc_entry *e, const char *name);
/* Whether a report or protect message naming (policy, pool) can come from
 * a process handed e's policy: 0 when policy is e's and pool one of its
 * pools, or policy is "" (an API pool, outside any policy); -EPERM else. */
int proc_entry_handed_check(const struct proc_entry *e, const char *policy, const char *pool);

#endif
