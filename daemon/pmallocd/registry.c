/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * registry.c - the table of processes pmallocd has served.
 *
 * Owns: proc_entry lifetime, the live list and the bounded history.
 * Never: reads /proc or sockets, logs, or grows past its bounds (live
 * entries are bounded by the server's client and child caps, the history
 * by REGISTRY_HISTORY, pools by REGISTRY_POOLS).
 */
#define _GNU_SOURCE
#include "role.h"
#include "registry.h"
#include "journal.h"
#include "list.h"
#include "proc_rules.h"
#include "strbuf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void entry_free(struct proc_entry *e)
{
	free(e->exe);
	free(e->exe_shown);
	proc_object_free(&e->object);
	free(e->pools);
	free(e->handed_pools);
	proc_rules_free(e->rules);
	free(e);
}

void registry_init(struct registry *r)
{
	memset(r, 0, sizeof(*r));
}

void registry_done(struct registry *r)
{
	struct proc_entry *e, *next;

	for (e = r->live; e; e = next) {
		next = e->next;
		journal_limit_finish(e);
		entry_free(e);
	}
	for (e = r->history; e; e = next) {
		next = e->next;
		entry_free(e);
	}
	memset(r, 0, sizeof(*r));
}

struct proc_entry *registry_add(struct registry *r, pid_t pid, uid_t uid, uint64_t now)
{
	struct proc_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->pid = pid;
	e->uid = uid;
	e->since_usec = now;
	LIST_PUSH(r->live, e);
	r->n_live++;
	return e;
}

void registry_retire(struct registry *r, struct proc_entry *e, uint64_t now)
{
	journal_limit_finish(e);
	e->budget = NULL;                /* the caller still holds it, to release */

	LIST_UNLINK(r->live, e);
	r->n_live--;
	free(e->handed_pools);
	e->handed_pools = NULL;
	e->handed_pools_len = 0;

	e->exited_usec = now ? now : 1;
	if (!r->history)
		r->history_tail = e;
	LIST_PUSH(r->history, e);
	r->n_history++;

	while (r->n_history > REGISTRY_HISTORY) {
		struct proc_entry *old = r->history_tail;

		r->history_tail = old->prev;
		r->history_tail->next = NULL;
		r->n_history--;
		r->n_evicted++;
		entry_free(old);
	}
}

struct reg_pool *proc_entry_pool(struct proc_entry *e, const char *policy, const char *name)
{
	struct reg_pool *p;

	for (size_t i = 0; i < e->n_pools; i++)
		if (strcmp(e->pools[i].name, name) == 0 && strcmp(e->pools[i].policy, policy) == 0)
			return &e->pools[i];
	if (e->n_pools >= REGISTRY_POOLS)
		return NULL;
	p = realloc(e->pools, (e->n_pools + 1) * sizeof(*p));
	if (!p)
		return NULL;
	e->pools = p;
	p = &e->pools[e->n_pools++];
	memset(p, 0, sizeof(*p));
	str_copy(p->policy, sizeof(p->policy), policy);
	str_copy(p->name, sizeof(p->name), name);
	return p;
}

int proc_entry_set_handed(struct proc_entry *e, const struct policy *p)
{
	size_t len = 0, off = 0;
	char *buf;

	for (size_t i = 0; i < p->n_pools; i++)
		len += 1 + strlen(p->pools[i].name) + 1;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_pools; i++) {
		const struct policy_pool *pp = &p->pools[i];
		size_t n = strlen(pp->name) + 1;
		bool manual = false;

		for (size_t t = 0; t < pp->n_triggers; t++)
			manual |= pp->triggers[t].kind == POLICY_TRIGGER_MANUAL;
		buf[off++] = manual ? 'M' : '-';
		memcpy(buf + off, pp->name, n);
		off += n;
	}
	e->roles_named = 0;
	for (size_t i = 0; i < p->n_pools; i++)
		e->roles_named |= p->pools[i].roles ? p->pools[i].roles : ROLE_MASK_ALL;
	free(e->handed_pools);
	e->handed_pools = buf;
	e->handed_pools_len = len;
	return 0;
}

int proc_entry_handed_manual(const struct proc_entry *e, const char *name)
{
	const char *q, *end;

	if (!e->has_policy || !e->handed_pools)
		return -ENODATA;
	end = e->handed_pools + e->handed_pools_len;
	for (q = e->handed_pools; q < end; q += 1 + strlen(q + 1) + 1)
		if (strcmp(q + 1, name) == 0)
			return q[0] == 'M' || q[0] == 'A' ? 0 : -EPERM;
	return -ENOENT;
}

void proc_entry_manual_asked(struct proc_entry *e, const char *name)
{
	const char *end;

	if (!e->handed_pools)
		return;
	end = e->handed_pools + e->handed_pools_len;
	for (char *q = e->handed_pools; q < end; q += 1 + strlen(q + 1) + 1)
		if (q[0] == 'M' && strcmp(q + 1, name) == 0)
			q[0] = 'A';
}

bool proc_entry_manual_was_asked(const struct proc_entry *e, const char *name)
{
	const char *end;

	if (!e->handed_pools)
		return false;
	end = e->handed_pools + e->handed_pools_len;
	for (const char *q = e->handed_pools; q < end; q += 1 + strlen(q + 1) + 1)
		if (strcmp(q + 1, name) == 0)
			return q[0] == 'A';
	return false;
}

int proc_entry_handed_check(const struct proc_entry *e, const char *policy, const char *pool)
{
	if (!policy[0])
		return 0;
	if (!e->has_policy || strcmp(policy, e->policy) != 0)
		return -EPERM;
	return proc_entry_handed_manual(e, pool) == -ENOENT ? -EPERM : 0;
}

int proc_entry_set_exe(struct proc_entry *e, char *exe, bool deleted)
{
	size_t size;
	char *shown = NULL;

	if (exe) {
		size = ESCAPED_SIZE(strlen(exe));
		shown = malloc(size);
		if (!shown) {
			free(exe);
			return -ENOMEM;
		}
		text_escape(shown, size, exe);
	}
	free(e->exe);
	free(e->exe_shown);
	e->exe = exe;
	e->exe_shown = shown;
	e->exe_deleted = deleted;
	return 0;
}

void proc_entry_set_comm(struct proc_entry *e, const char *comm)
{
	text_escape(e->comm, sizeof(e->comm), comm);
}
