/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * protect.c - pmallocctl protect PID POOL: the daemon's side.
 *
 * Owns: the checks of a PMW_PROTECT_REQ's fields, its authorisation (root
 * or the target process's own user; a pool handed to it with a manual
 * trigger), the PMW_PROTECT sent on, the answer text and the request's
 * log line (limited).
 * Never: finds or keeps connections (server.c passes the target), blocks
 * on the target (MSG_DONTWAIT), lets an unchecked pool name reach the log
 * or the wire, or counts (server.c counts from the return value).
 */
#define _GNU_SOURCE
#include "protect.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "policy.h"

/* A policy pool name: [A-Za-z0-9_.-]{1,POLICY_NAME_MAX}, as policy_setting.c checks. */
static bool pool_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > POLICY_NAME_MAX)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

static int protect_send(int fd, const void *msg, size_t len)
{
	ssize_t n = send(fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

/* A forked child served over its parent's connection: its shim reads
 * orders in a thread of the parent's, which the child does not have, so
 * nothing sent on that connection reaches it.  Said instead of "not
 * connected", which status would contradict. */
static int forked_child(const struct protect_target *t, pid_t pid, struct strbuf *text, const char **ret_why)
{
	if (t->via_gone) {
		strbuf_printf(text, "error: PID %d is a forked child of PID %d, which has exited, and shares its "
			      "connection: it reads no orders (a learning process writes what it learned when "
			      "it exits: stop the service)", (int)pid, (int)t->entry->via_pid);
		*ret_why = "forked child of an exited process";
		return -ESRCH;
	}
	strbuf_printf(text, "error: PID %d is a forked child of PID %d and shares its connection: "
		      "it reads no orders of its own (ask PID %d; a learning child writes what it "
		      "learned when it exits)", (int)pid, (int)t->entry->via_pid, (int)t->entry->via_pid);
	*ret_why = "forked child without a connection";
	return -ESRCH;
}

/* Decide a request of a checked pid and pool and, when it holds, send
 * PMW_PROTECT; the answer goes to text, a few words for the log to
 * *ret_why.  Returns 0 when sent, <0 otherwise. */
static int protect_request(const struct protect_target *t, uid_t from_uid, pid_t pid, const char *pool,
			   struct strbuf *text, const char **ret_why)
{
	const struct proc_entry *e;
	struct pmw_protect msg;
	const char *exe;
	int r;

	if (!t->entry) {
		strbuf_printf(text, "error: PID %d is not connected to pmallocd "
			      "(not running, not preloaded with pmalloc, or its connection closed)", (int)pid);
		*ret_why = "not connected";
		return -ESRCH;
	}
	e = t->entry;
	if (t->fd < 0)
		return forked_child(t, pid, text, ret_why);
	if (from_uid != 0 && from_uid != e->uid) {
		strbuf_printf(text, "error: permission denied: PID %d is not yours "
			      "(only root or its own user may protect its pools)", (int)pid);
		*ret_why = "permission denied";
		return -EPERM;
	}
	exe = proc_entry_exe(e);
	r = proc_entry_handed_manual(e, pool);
	if (r == -ENODATA) {
		strbuf_printf(text, "error: PID %d (%s) was not served a policy", (int)pid, exe);
		*ret_why = "no policy";
		return r;
	}
	if (r == -ENOENT) {
		strbuf_printf(text, "error: pool \"%s\" is not in the policy \"%s\" of PID %d (%s) "
			      "(generation %" PRIu64 ")", pool, e->policy, (int)pid, exe, e->generation);
		*ret_why = "pool not in its policy";
		return r;
	}
	if (r < 0) {
		strbuf_printf(text, "error: pool \"%s\" of policy \"%s\" has no manual trigger "
			      "(protect = [ \"manual\" ] in pmalloc.conf(5))", pool, e->policy);
		*ret_why = "no manual trigger";
		return r;
	}

	memset(&msg, 0, sizeof(msg));
	pmw_header_init(&msg.h, PMW_PROTECT, sizeof(msg));
	msg.generation = e->generation;
	str_copy(msg.pool, sizeof(msg.pool), pool);
	r = protect_send(t->fd, &msg, sizeof(msg));
	if (r == -EAGAIN) {
		strbuf_printf(text, "error: PID %d (%s) is not reading its connection "
			      "(its socket buffer is full); try again later", (int)pid, exe);
		*ret_why = "its socket buffer is full";
		return r;
	}
	if (r < 0) {
		strbuf_printf(text, "error: cannot send to PID %d (%s): %s", (int)pid, exe, strerror(-r));
		*ret_why = "send failed";
		return r;
	}
	*ret_why = "sent";
	strbuf_printf(text, "ok: protect request for pool \"%s\" sent to PID %d (%s); "
		      "the process applies it on receipt", pool, (int)pid, exe);
	return 0;
}

/* pmallocctl learn-flush PID: the same checks of who asks, then a process
 * under a learn policy gets a PMW_PROTECT with an empty pool. */
static int learn_flush_request(const struct protect_target *t, uid_t from_uid, pid_t pid,
			       struct strbuf *text, const char **ret_why)
{
	struct pmw_protect msg;
	int r;

	if (!t->entry) {
		strbuf_printf(text, "error: PID %d is not connected to pmallocd", (int)pid);
		*ret_why = "not connected";
		return -ESRCH;
	}
	if (t->fd < 0)
		return forked_child(t, pid, text, ret_why);
	if (from_uid != 0 && from_uid != t->entry->uid) {
		strbuf_printf(text, "error: permission denied: PID %d is not yours", (int)pid);
		*ret_why = "permission denied";
		return -EPERM;
	}
	if (!t->entry->has_policy || t->entry->mode != POLICY_MODE_LEARN) {
		strbuf_printf(text, "error: PID %d (%s) is not under a learn policy", (int)pid,
			      proc_entry_exe(t->entry));
		*ret_why = "not learning";
		return -EINVAL;
	}
	memset(&msg, 0, sizeof(msg));
	pmw_header_init(&msg.h, PMW_PROTECT, sizeof(msg));
	msg.generation = t->entry->generation;
	r = protect_send(t->fd, &msg, sizeof(msg));
	if (r < 0) {
		strbuf_printf(text, "error: cannot send to PID %d: %s", (int)pid, strerror(-r));
		*ret_why = "send failed";
		return r;
	}
	*ret_why = "sent";
	strbuf_printf(text, "ok: learn-flush sent to PID %d (%s); its sites go to the journal",
		      (int)pid, proc_entry_exe(t->entry));
	return 0;
}

int protect_answer(struct protect *p, const struct pmw_protect_req *m, pid_t from_pid, uid_t from_uid,
		   const struct protect_target *target, struct strbuf *text)
{
	char pool[PMW_NAME];
	const char *why = "";
	int r = -EINVAL;

	if (m->reserved == PMW_LEARN_FLUSH && m->pool[0] == '\0' && m->pid > 0) {
		r = learn_flush_request(target, from_uid, (pid_t)m->pid, text, &why);
		log_limited(&p->log, LOG_INFO, "PID %d (uid %u) asked PID %d to flush what it learned: %s",
			    (int)from_pid, (unsigned)from_uid, (int)m->pid, why);
		return r == 0 ? 1 : 0;
	}
	if (m->reserved != 0 || !memchr(m->pool, '\0', sizeof(m->pool)))
		return -EINVAL;
	memcpy(pool, m->pool, sizeof(pool));
	if (m->pid <= 0) {
		strbuf_printf(text, "error: invalid PID %d", (int)m->pid);
		why = "invalid PID";
	} else if (!pool_name_valid(pool)) {
		strbuf_puts(text, "error: invalid pool name (want 1 to 63 of A-Z a-z 0-9 _ . -)");
		why = "invalid pool name";
	} else
		r = protect_request(target, from_uid, (pid_t)m->pid, pool, text, &why);
	/* Only a checked pool name reaches the log. */
	log_limited(&p->log, LOG_INFO, "PID %d (uid %u) asked to protect pool \"%s\" of PID %d: %s",
		    (int)from_pid, (unsigned)from_uid, pool_name_valid(pool) ? pool : "(invalid)",
		    (int)m->pid, why);
	return r == 0 ? 1 : 0;
}
