/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_ask.c - what pmallocctl asks pmallocd on a connection of its own
 * (see server_ask.h): the status, of everything or of one process, and a
 * protect order for a served process.  Each gets one answer, then the
 * connection closes.
 *
 * Owns: the status answer's sealed memfd and its SCM_RIGHTS packet,
 * finding the connection of the process a protect names.
 * Never: decides a protect (protect.c does) or renders the status
 * (status.c does, through the manager's render_status), shows a user
 * another user's processes (render_status is given the asker's uid),
 * or blocks on a client.
 */
#define _GNU_SOURCE
#include "server_ask.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "proc_entry.h"
#include "protect.h"
#include "registry.h"
#include "rules.h"
#include "server_client.h"
#include "status_data.h"
#include "strbuf.h"
#include "wire.h"

/* Send text (in tx_buf after the PMW_STATUS header, text_len bytes without
 * the NUL) as the one answer; the connection then closes. */
static int send_status_text(struct client *c, size_t text_len, const char *what)
{
	struct pmw_status *out = (struct pmw_status *)tx_buf;
	size_t len = sizeof(*out) + text_len + 1;
	int r;

	pmw_header_init(&out->h, PMW_STATUS, (uint32_t)len);
	out->text_len = (uint32_t)(text_len + 1);
	out->reserved = 0;
	r = client_send(c, out, len);
	if (r < 0)
		client_drop(c, vanished, "gone before its %s was sent (%s)", client_drop_args(c), what,
			    strerror(-r));
	return -ECONNRESET;              /* one answer, then the connection closes */
}

/* The start times status compares, of the processes served since the
 * last status (see proc_entry.starttime_by). */
static void resolve_starttimes(struct registry *reg)
{
	for (struct proc_entry *e = reg->live; e; e = e->next)
		if (e->starttime_by) {
			e->starttime = proc_starttime_before(e->pid, e->starttime_by);
			e->starttime_by = 0;
		}
}

/* The status records for c's uid (status.c), in a sealed memfd passed
 * with a PMW_STATUS_DATA packet; the connection then closes. */
static int send_status_data(struct client *c, pid_t pid)
{
	struct status_data d = { 0 };
	struct pmw_status_data m;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cm;
	int fd;

	c->server->manager->render_status(c->server->manager, &d, c->uid, pid);
	fd = d.full ? -ENOBUFS : status_data_memfd(&d);
	if (fd < 0) {
		log_warning_errno(fd, "status for PID %d not sent: %m", (int)c->pid);
		status_data_done(&d);
		return -ECONNRESET;
	}
	pmw_header_init(&m.h, PMW_STATUS_DATA, sizeof(m));
	m.data_len = (uint32_t)d.len;
	m.n_records = d.n_records;
	status_data_done(&d);
	memset(&control, 0, sizeof(control));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		client_drop(c, vanished, "gone before its status was sent (%s)", client_drop_args(c), strerror(errno));
	close(fd);
	return -ECONNRESET;              /* one answer, then the connection closes */
}

int handle_status_req(struct client *c)
{
	c->server->counters.status_requests++;
	resolve_starttimes(&c->server->manager->registry);
	return send_status_data(c, 0);
}

/* pmallocctl status PID: the detail view of one process (status.c). */
int handle_status_pid_req(struct client *c, const struct pmw_status_pid_req *m)
{

	if (m->pid <= 0 || (m->flags & ~PMW_STATUS_NO_ASK) != 0) {
		client_drop(c, malformed, "STATUS_PID_REQ with bad fields, dropped", client_drop_args(c));
		return -EINVAL;
	}
	c->server->counters.status_requests++;
	/* A fresh site table, from a process that reads orders: the next
	 * request shows it (rules.c bounds the asking). */
	for (struct client *t = c->server->clients; t && !(m->flags & PMW_STATUS_NO_ASK); t = t->next)
		if (t->state == CLIENT_SERVED && t->pid == m->pid && t->entry &&
		    rules_ask(t->entry, c->uid, now_usec(c->server))) {
			struct pmw_sites_req q = { .generation = t->entry->generation };

			pmw_header_init(&q.h, PMW_SITES_REQ, sizeof(q));
			(void)client_send(t, &q, sizeof(q));
			break;
		}
	resolve_starttimes(&c->server->manager->registry);
	return send_status_data(c, m->pid);
}

/* protect.c decides and answers; finding the process's connection, the
 * counters and dropping a malformed request are ours. */
int handle_protect_req(struct client *c, const struct pmw_protect_req *m)
{
	struct server *s = c->server;
	struct pmw_status *out = (struct pmw_status *)tx_buf;
	struct protect_target target = { .fd = -1, .entry = NULL };
	struct strbuf text;
	int r;

	s->counters.protect_requests++;
	for (struct client *t = s->clients; t && !target.entry; t = t->next)
		if (t->state == CLIENT_SERVED && t->pid == m->pid && t->entry)
			target = (struct protect_target){ .fd = t->fd, .entry = t->entry };
	/* A forked child status lists (an nginx worker) has no connection of
	 * its own: known, with no descriptor, so that the answer says why. */
	for (const struct proc_entry *e = s->manager->registry.live; e && !target.entry; e = e->next)
		if (e->pid == m->pid && e->via_pid && !e->exited_usec)
			target = (struct protect_target){ .fd = -1, .entry = e, .via_gone = true };
	/* Whether the parent it names still runs (a daemon that forked away
	 * from its starter, as nginx's master, outlives it). */
	for (struct client *t = s->clients; target.via_gone && t; t = t->next)
		if (t->pid == target.entry->via_pid && t->entry && proc_is_alive(t->pid, t->entry->starttime))
			target.via_gone = false;
	strbuf_init_fixed(&text, out->text, PMW_MAX_MSG - sizeof(*out));
	r = protect_answer(&s->protect, m, c->pid, c->uid, &target, &text);
	if (r < 0) {
		client_drop(c, malformed, "PROTECT_REQ with bad fields, dropped", client_drop_args(c));
		return r;
	}
	if (r > 0)
		s->counters.protect_sent++;
	/* Status tells a pool asked for from one no trigger reached. */
	for (struct client *t = s->clients; r > 0 && m->reserved == 0 && t; t = t->next)
		if (t->entry == target.entry && t->fd == target.fd && memchr(m->pool, '\0', sizeof(m->pool)))
			proc_entry_manual_asked(t->entry, m->pool);
	return send_status_text(c, text.len, "protect answer");
}
