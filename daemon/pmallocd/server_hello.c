/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_hello.c - a client's HELLO and its hand-out (see server_hello.h):
 * the checks on the HELLO, the job to identify.c's worker (or the loop's
 * own identification), then the registry entry, the match against the
 * policy set in force, the answer and its journal entry; and the entry of
 * the process a later packet came from (the peer, or a forked child that
 * shares its connection).
 *
 * Owns: the CLIENT_NEW -> IDENTIFYING -> SERVED steps of a connection,
 * and the entries of a connection's forked children (at most
 * SERVER_MAX_CHILDREN).
 * Never: trusts the HELLO for who sent it (SCM_CREDENTIALS, SO_PEERCRED
 * and the worker's /proc reads do), hands out to a process whose ids
 * changed since it connected (but root's), blocks on the client, or
 * frees it (a negative return asks server.c to close it).
 */
#define _GNU_SOURCE
#include "server_hello.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "budget.h"
#include "identify.h"
#include "journal.h"
#include "log.h"
#include "match_cache.h"
#include "proc.h"
#include "proc_entry.h"
#include "registry.h"
#include "role.h"
#include "rules.h"
#include "server_client.h"
#include "strbuf.h"
#include "wire.h"

/* pid's role below peer, the process that said hello (main): its depth in
 * the kernel's process tree, capped (role.h).  A child whose parent died
 * was adopted by a subreaper and is no longer below peer: "child", the
 * least it can be. */
static unsigned int child_depth(pid_t pid, pid_t peer)
{
	for (unsigned int depth = 1; depth <= 16; depth++) {
		pid_t ppid;

		if (proc_read_stat(pid, &ppid, NULL) < 0 || ppid <= 1)
			break;
		if (ppid == peer)
			return depth > ROLE_DEPTH_MAX ? ROLE_DEPTH_MAX : depth;
		pid = ppid;
	}
	return 1;
}

struct proc_entry *sender_entry(struct client *c, const struct ucred *cred)
{
	struct registry *reg = &c->server->manager->registry;
	struct proc_entry *e;
	uint64_t now;

	if (!cred || cred->pid <= 0 || cred->pid == c->pid)
		return c->entry;
	for (size_t i = 0; i < c->n_children; i++)
		if (c->children[i]->pid == cred->pid)
			return c->children[i];

	now = now_usec(c->server);
	if (c->n_children == SERVER_MAX_CHILDREN) {
		/* Oldest child goes to the history; the cap holds. */
		child_retire(c, c->children[0], now);
		memmove(c->children, c->children + 1, (SERVER_MAX_CHILDREN - 1) * sizeof(c->children[0]));
		c->n_children--;
	}
	if (!budget_entry_add(c->budget))
		return NULL;
	e = registry_add(reg, cred->pid, cred->uid, now);
	if (!e) {
		budget_entry_remove(c->budget);
		return NULL;
	}
	e->budget = c->budget;
	e->gid = cred->gid;
	e->via_pid = c->pid;
	e->role_depth = (uint8_t)child_depth(cred->pid, c->pid);
	/* The child inherited its parent's shim state, hence its hand-out. */
	e->roles_named = c->entry->roles_named;
	e->has_policy = c->entry->has_policy;
	memcpy(e->policy, c->entry->policy, sizeof(e->policy));
	e->mode = c->entry->mode;
	e->generation = c->entry->generation;
	/* Its exe is the one the kernel named at the hand-out, never a later
	 * read of /proc/CHILD/exe: the shim's connection is close-on-exec, so
	 * a shim child that sends on it forked from the peer without exec'ing;
	 * a process that kept the descriptor across an exec (a setuid program
	 * run by a hostile parent) would otherwise report under the new exe. */
	if (c->entry->exe && proc_entry_set_exe(e, strdup(c->entry->exe), c->entry->exe_deleted) == 0)
		e->exe_pid = e->exe ? c->pid : 0;
	memcpy(e->comm, c->entry->comm, sizeof(e->comm));
	(void)rules_inherit(e, c->entry);
	(void)proc_read_stat(cred->pid, NULL, &e->starttime);
	c->children[c->n_children++] = e;
	return e;
}

int handle_hello(struct client *c, const struct pmw_hello *m, const struct ucred *cred)
{
	static struct identify_job inline_job;
	struct identify_job *j;

	if ((m->flags & ~PMW_HELLO_COMM) != 0 || m->reserved != 0) {
		client_drop(c, malformed, "HELLO with unknown flags 0x%x, dropped", client_drop_args(c),
			    (unsigned)m->flags);
		return -EINVAL;
	}
	/* (wire_check_client() saw to it that a HELLO with a comm is whole.) */
	if ((m->flags & PMW_HELLO_COMM) && !memchr(m->comm, '\0', sizeof(m->comm))) {
		client_drop(c, malformed, "HELLO with an unterminated comm, dropped", client_drop_args(c));
		return -EINVAL;
	}

	/* The hand-out is for the process that connected, and the /proc reads
	 * are about it: a HELLO sent by another process on its descriptor (a
	 * child it forked before exec'ing something else) would get that
	 * other program's policy and name. */
	if (!cred || cred->pid != c->pid) {
		client_drop(c, forged, "HELLO sent by PID %d (uid %u), not by the process that connected, dropped",
			    client_drop_args(c), cred ? (int)cred->pid : 0, cred ? (unsigned)cred->uid : 0u);
		return -EPERM;
	}

	/* Who it is, by the worker (the answer follows in answer_identified()),
	 * or by the loop: the batch's only HELLO while the worker waits
	 * (answer_identified() too), or here when IDENTIFY_QUEUE jobs are out
	 * already. */
	c->deadline = 0;
	j = identify_job_get(c->server->identify);
	if (!j)
		j = &inline_job;
	j->owner = c;
	j->fd = c->fd;
	j->pid = c->pid;
	/* Its comm, as it read it, saves the worker a /proc read (5 us):
	 * /proc/PID/comm says what the process set too (wire.h). */
	j->comm_given = (m->flags & PMW_HELLO_COMM) != 0;
	if (j->comm_given)
		str_copy(j->comm, sizeof(j->comm), m->comm);
	if (j == &inline_job) {
		identify_run(j);
		return hello_finish(c, j);
	}
	c->job = j;
	c->state = CLIENT_IDENTIFYING;
	if (c->server->batch_hellos++ == 0) {
		c->server->held = j;     /* the batch's first: see answer_identified() */
		return 0;
	}
	if (c->server->held) {
		identify_submit(c->server->identify, c->server->held);
		c->server->held = NULL;
	}
	identify_submit(c->server->identify, j);
	return 0;
}

/* The rest of a HELLO, once j says who c is: the registry, the match
 * against the policy set in force now (a reload meanwhile counts), the
 * answer, the journal entry.  0, or <0 to close. */
int hello_finish(struct client *c, const struct identify_job *j)
{
	struct server *s = c->server;
	const struct config *cfg = s->manager->config;
	const struct policy *p;
	struct proc_entry *e;
	const char *exe;
	bool changed = false;
	int idx, r = j->r;

	if (r < 0) {
		client_drop(c, unidentified, "cannot identify it (%s), dropped", client_drop_args(c),
			    strerror(-r));
		return r;
	}
	/* A user's process holding other ids than those it connected with
	 * (real, effective, saved or filesystem: a setuid or setgid program
	 * keeps the one it gained as saved id even after dropping it) exec'd
	 * such a program since: the exe read is not that of the program that
	 * connected, which could not have reported as it.  The shim is never
	 * preloaded into those (AT_SECURE) but through /etc/ld.so.preload, and
	 * then is refused here: they fall back to the policy file.  Root's
	 * processes may change their ids at will (dropping privileges). */
	for (int i = 0; i < 4; i++)
		changed |= j->uids[i] != c->uid || j->gids[i] != c->gid;
	if (c->uid != 0 && changed) {
		client_drop(c, forged, "now runs as uids %u/%u/%u/%u gids %u/%u/%u/%u, not only as the "
			    "ids it connected with (exec of a setuid or setgid program?), dropped",
			    client_drop_args(c), (unsigned)j->uids[0], (unsigned)j->uids[1],
			    (unsigned)j->uids[2], (unsigned)j->uids[3], (unsigned)j->gids[0],
			    (unsigned)j->gids[1], (unsigned)j->gids[2], (unsigned)j->gids[3]);
		return -EPERM;
	}

	/* A setuid-root program counts as the user who started it (its real
	 * uid): a user's 300 su processes waiting for a password are that
	 * user's 300 connections, not root's. */
	if (c->uid == 0 && j->uids[0] != 0) {
		struct uid_budget *u = budget_client_add(&s->budgets, j->uids[0]);

		if (!u) {
			client_drop(c, refused_busy, "runs for uid %u (its real uid), which holds its share of "
				    "connections already, refused", client_drop_args(c), (unsigned)j->uids[0]);
			(void)send_answer_fd(c->fd, PMW_REFUSED, cfg->generation,
					     "pmallocd is serving too many clients");
			return -EBUSY;
		}
		budget_client_remove(c->budget);
		c->budget = u;
	}

	e = registry_add(&s->manager->registry, c->pid, c->uid, now_usec(s));
	if (!e)
		return log_error_errno(ENOMEM, "out of memory");
	e->budget = c->budget;
	e->gid = c->gid;
	c->entry = e;                    /* retired with the connection, whatever follows */
	proc_entry_set_comm(e, j->comm);
	proc_object_set(&e->object, j->cgroup);
	if (proc_entry_set_exe(e, strdup(j->exe), j->exe_deleted) < 0 || !e->exe)
		return log_error_errno(ENOMEM, "out of memory");
	exe = e->exe;
	e->starttime_by = j->seen;
	e->generation = cfg->generation;
	c->state = CLIENT_SERVED;

	idx = match_cache_policy(cfg, exe, j->comm, c->uid, &p);
	if (p) {
		struct pmw_policy *out = (struct pmw_policy *)tx_buf;
		size_t len;

		if (idx < 0)
			return log_error_errno(EINVAL, "policy_set_match() returned a foreign policy");
		/* The image compiled at load (config.c): copied as it is. */
		len = sizeof(*out) + cfg->image_sizes[idx];
		memset(out, 0, sizeof(*out));
		pmw_header_init(&out->h, PMW_POLICY, (uint32_t)len);
		out->generation = cfg->generation;
		out->image_len = (uint32_t)cfg->image_sizes[idx];
		memcpy(out->image, cfg->images[idx], cfg->image_sizes[idx]);

		e->has_policy = true;
		str_copy(e->policy, sizeof(e->policy), p->name);
		e->mode = p->mode;
		if (proc_entry_set_handed(e, p) < 0)
			return log_error_errno(ENOMEM, "out of memory");
		r = client_send(c, out, len);
		if (r < 0) {
			client_drop(c, vanished, "gone before its policy was sent (%s)", client_drop_args(c),
				    strerror(-r));
			return r;
		}
		s->counters.handed++;
		journal_handed(e, p->name);
	} else {
		char reason[PMW_SYM];

		snprintf(reason, sizeof(reason), "no policy matches %s", proc_entry_exe(e));
		r = send_answer_fd(c->fd, PMW_NO_POLICY, cfg->generation, reason);
		if (r < 0) {
			client_drop(c, vanished, "gone before its answer was sent (%s)", client_drop_args(c),
				    strerror(-r));
			return r;
		}
		s->counters.no_policy++;
		log_debug("PID %d (%s): no policy", (int)c->pid, proc_entry_exe(e));
	}
	return 0;
}
