/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server.c - pmallocd's socket: accepting clients, checking every message,
 * answering, and the limits on what a client can make the daemon hold.
 *
 * Owns: the listening socket's lifetime (listen.c makes it; its path is
 * unlinked at exit when pmallocd made it), struct client,
 * the per-connection state machine (NEW -> IDENTIFYING -> SERVED, or NEW
 * -> status or protect request (protect.c decides it) -> closed), message
 * validation, client caps, the clients' epoll set and the silent-client
 * timer.  It all runs in the event loop's thread.
 * A hand-out is a pipeline of two threads.  The loop: accept4,
 * SO_PEERCRED, the HELLO and its SCM_CREDENTIALS check, then the job to
 * identify.c's worker (SO_PEERPIDFD, readlink exe, PIDFD_GET_INFO, the
 * pidfd's close; /proc/PID/comm only when the HELLO does not tell it,
 * /proc/PID/cgroup once per cgroup); when the job is back (one eventfd
 * wake-up per batch), the registry, the match against the policy set in
 * force then, the answer, the epoll add, its journal entry's share of one
 * sendmmsg(), and at the end the EOF and the close.  Measured
 * (tests/bench/daemon; strace -f, perf): about 13 system calls in the
 * loop and 5 in the worker per hand-out, 26 and 11 CPU us.  The loop's
 * share is nearly all kernel work any answer needs (accept, the answer's
 * send and the client's wake-up, the close: 17 us for the cheapest
 * answer, PMW_REFUSED); user space is ~5 us of it, the journal entry
 * ~3 us.  While the worker has a client, the loop
 * neither reads it (it is not watched, or unwatched when it speaks) nor
 * times it out, and keeps its socket open: messages after the HELLO are
 * read in order once it is answered.  With IDENTIFY_QUEUE jobs out, the
 * loop identifies a client itself, as it did alone.
 * Identity comes from the kernel only: SO_PEERCRED at accept, SO_PEERPIDFD
 * and /proc (proc.c) at HELLO, SCM_CREDENTIALS on each packet (the comm a
 * HELLO may tell is a name, not an identity: wire.h).
 * Never: blocks on a client (every socket is non-blocking, every send
 * MSG_DONTWAIT), reads a field before the header, length and type-specific
 * size are checked, keeps a file descriptor a client passed, or lets one
 * client's traffic stop others (bounded work per wake-up).
 */
#define _GNU_SOURCE
#include "role.h"
#include "server.h"

#include <errno.h>
#include <malloc.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "budget.h"
#include "identify.h"
#include "journal.h"
#include "jwriter.h"
#include "list.h"
#include "listen.h"
#include "log.h"
#include "proc.h"
#include "protect.h"
#include "repeat.h"
#include "rules.h"
#include "status_data.h"
#include "violation.h"
#include "wire.h"
#include "wire_decode.h"
#include "strbuf.h"

#define USEC_PER_MSEC 1000ULL

/* IDENTIFYING: its HELLO passed the credential check and identify.c's
 * worker reads who it is; the loop neither reads nor times it out then. */
enum client_state { CLIENT_NEW, CLIENT_IDENTIFYING, CLIENT_SERVED };

struct client {
	struct client *prev, *next;
	struct server *server;
	int fd;
	uint64_t deadline;               /* NEW: dropped if still silent then (usec); 0 once it spoke */
	enum client_state state;
	pid_t pid;                       /* SO_PEERCRED at accept */
	uid_t uid;                       /* its effective uid and gid then */
	gid_t gid;
	struct uid_budget *budget;       /* its uid's (budget.h), held while connected */
	struct proc_entry *entry;        /* once served */
	struct identify_job *job;        /* while IDENTIFYING: the worker's until it is back */
	bool watched;                    /* in the clients' epoll set */
	struct proc_entry *children[SERVER_MAX_CHILDREN];
	size_t n_children;
};

struct server {
	struct manager *manager;
	int fd;
	char *path;
	bool owns_path;
	bool activated;
	sd_event_source *listen_src;
	sd_event_source *retry_timer;
	/* The clients' sockets, in an epoll set of our own, watched as one
	 * source: one epoll_wait() hands over up to SERVER_IO_BATCH ready
	 * clients (sd-event dispatches one source per loop iteration, each an
	 * epoll_wait() of its own), and closing a client's socket removes it
	 * from the set (no EPOLL_CTL_DEL). */
	int client_epfd;
	sd_event_source *clients_src;
	/* One timer for every client that has not spoken yet, armed at the
	 * earliest deadline (none of sd-event's per-client timer sources, each
	 * a timerfd_settime() as clients come and go). */
	sd_event_source *silent_timer;
	uint64_t silent_at;              /* when it fires; 0 disarmed */
	struct client *clients;
	size_t n_clients;
	size_t max_clients;              /* SERVER_MAX_CLIENTS, less where descriptors are fewer */
	struct server_counters counters;
	struct log_limit drop_log;
	struct protect protect;           /* pmallocctl protect */
	struct budgets budgets;           /* per-user shares and budgets */
	struct repeats repeats;           /* crash loops: one executable's new processes */
	struct identify *identify;        /* the worker reading clients' identity */
	sd_event_source *identified_src;  /* its eventfd: jobs back */
	sd_event_source *trim_timer;      /* malloc_trim once frees stop */
	uint64_t last_free;               /* when the last client left */
};

/* One receive buffer, one send buffer: only the loop's thread touches them
 * (identify.c's worker reads /proc into its jobs, nothing else). */
static alignas(16) uint8_t rx_buf[PMW_MAX_MSG];
static alignas(16) uint8_t tx_buf[PMW_MAX_MSG];

static uint64_t now_usec(const struct server *s)
{
	uint64_t t = 0;
	(void)sd_event_now(s->manager->event, CLOCK_MONOTONIC, &t);
	return t;
}

/* Count and log (limited) a client we drop or refuse. */
#define client_drop(c, counter, ...)                                                      \
	do {                                                                              \
		(c)->server->counters.counter++;                                          \
		log_limited(&(c)->server->drop_log, LOG_NOTICE, "client PID %d (uid %u): " \
			    __VA_ARGS__);                                                   \
	} while (0)
#define client_drop_args(c) (int)(c)->pid, (unsigned)(c)->uid

/* ---- client lifetime ---- */

/* A forked child's entry goes to the history; its uid's count drops. */
static void child_retire(struct client *c, struct proc_entry *e, uint64_t now)
{
	struct uid_budget *u = e->budget;

	registry_retire(&c->server->manager->registry, e, now);
	budget_entry_remove(u);
}

static int on_trim(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct server *s = userdata;
	uint64_t due = s->last_free + SERVER_TRIM_IDLE_MS * USEC_PER_MSEC;

	(void)usec;
	/* Frees since it was armed: wait for them to stop. */
	if (due > now_usec(s)) {
		(void)sd_event_source_set_time(src, due);
		(void)sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
		return 0;
	}
	/* Hundreds of clients gone leave free chunks all over the heap:
	 * give their pages back, as glibc's free() alone does only at the top. */
	(void)malloc_trim(0);
	return 0;
}

/* Many clients may be leaving: trim once they are all gone, one timer
 * SERVER_TRIM_IDLE_MS after the last.  A free only notes its time (the
 * timer looks when it fires): moving the timer at every free re-armed the
 * loop's timerfd per client. */
static void trim_later(struct server *s)
{
	s->last_free = now_usec(s);
	if (!s->trim_timer) {
		if (sd_event_add_time(s->manager->event, &s->trim_timer, CLOCK_MONOTONIC,
				      s->last_free + SERVER_TRIM_IDLE_MS * USEC_PER_MSEC,
				      100 * USEC_PER_MSEC, on_trim, s) < 0)
			s->trim_timer = NULL;
		return;
	}
	if (sd_event_source_get_enabled(s->trim_timer, NULL) > 0)
		return;
	(void)sd_event_source_set_time(s->trim_timer, s->last_free + SERVER_TRIM_IDLE_MS * USEC_PER_MSEC);
	(void)sd_event_source_set_enabled(s->trim_timer, SD_EVENT_ONESHOT);
}

static void client_free(struct client *c)
{
	struct server *s = c->server;
	uint64_t now = now_usec(s);

	LIST_UNLINK(s->clients, c);
	s->n_clients--;

	for (size_t i = 0; i < c->n_children; i++)
		child_retire(c, c->children[i], now);
	if (c->entry)
		registry_retire(&s->manager->registry, c->entry, now);
	budget_client_remove(c->budget);
	close(c->fd);                    /* leaves the epoll set with it */
	free(c);
	trim_later(s);
}

static int client_send(struct client *c, const void *msg, size_t len)
{
	ssize_t n = send(c->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

static int send_answer_fd(int fd, enum pmw_type type, uint64_t generation, const char *reason)
{
	struct pmw_answer a;
	ssize_t n;

	memset(&a, 0, sizeof(a));
	pmw_header_init(&a.h, type, sizeof(a));
	a.generation = generation;
	str_copy(a.reason, sizeof(a.reason), reason);
	n = send(fd, &a, sizeof(a), MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return (size_t)n == sizeof(a) ? 0 : -EIO;
}

/* Read and discard what the client sent: closing a unix socket with unread
 * data makes the peer's next read fail with ECONNRESET, and it would lose
 * the answer queued just before the close. */
static void drain(int fd)
{
	char b[64];

	for (int i = 0; i < 4; i++)
		if (recv(fd, b, sizeof(b), MSG_DONTWAIT | MSG_TRUNC) <= 0)
			break;
}

static void silent_arm(struct server *s, uint64_t when)
{
	if (!s->silent_timer || (s->silent_at && s->silent_at <= when))
		return;
	if (sd_event_source_set_time(s->silent_timer, when) < 0 ||
	    sd_event_source_set_enabled(s->silent_timer, SD_EVENT_ONESHOT) < 0) {
		log_limited(&s->drop_log, LOG_WARNING, "cannot arm the silent-client timer");
		return;
	}
	s->silent_at = when;
}

/* Drop the clients silent past their deadline; wait for the next one. */
static int on_silent(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct server *s = userdata;
	uint64_t now = now_usec(s), next = 0;
	struct client *c, *following;

	(void)src;
	(void)usec;
	s->silent_at = 0;
	for (c = s->clients; c; c = following) {
		following = c->next;
		if (!c->deadline)
			continue;
		if (c->deadline <= now) {
			client_drop(c, timed_out, "said nothing before the deadline, dropped", client_drop_args(c));
			client_free(c);
		} else if (!next || c->deadline < next)
			next = c->deadline;
	}
	if (next)
		silent_arm(s, next);
	return 0;
}

static unsigned int silent_limit_ms(const struct server *s)
{
	unsigned int ms = s->manager->config->set->daemon.handshake_timeout_ms;

	ms = ms > SERVER_SILENT_MAX_MS / 10 ? SERVER_SILENT_MAX_MS : ms * 10;
	return ms < SERVER_SILENT_MIN_MS ? SERVER_SILENT_MIN_MS : ms;
}

/* ---- message handlers; each returns 0 to keep the connection, <0 to close ---- */

/* The process this packet came from: the peer, or a forked child that
 * shares its connection (SCM_CREDENTIALS of this packet says which).
 * NULL when that is a child over its uid's entry cap (budget.h): the
 * message is then counted and not logged. */
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

static struct proc_entry *sender_entry(struct client *c, const struct ucred *cred)
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

static int hello_finish(struct client *c, const struct identify_job *j);

static int handle_hello(struct client *c, const struct pmw_hello *m, const struct ucred *cred)
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
	 * or here when IDENTIFY_QUEUE jobs are out already. */
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
	identify_submit(c->server->identify, j);
	return 0;
}

/* The rest of a HELLO, once j says who c is: the registry, the match
 * against the policy set in force now (a reload meanwhile counts), the
 * answer, the journal entry.  0, or <0 to close. */
static int hello_finish(struct client *c, const struct identify_job *j)
{
	struct server *s = c->server;
	const struct config *cfg = s->manager->config;
	const struct policy *p;
	struct proc_entry *e;
	const char *exe;
	bool changed = false;
	int r = j->r;

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

	p = policy_set_match(cfg->set, exe, j->comm, c->uid);
	if (p) {
		int idx = config_policy_index(cfg, p);
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

static int handle_status_req(struct client *c)
{
	c->server->counters.status_requests++;
	resolve_starttimes(&c->server->manager->registry);
	return send_status_data(c, 0);
}

/* pmallocctl status PID: the detail view of one process (status.c). */
static int handle_status_pid_req(struct client *c, const struct pmw_status_pid_req *m)
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
static int handle_protect_req(struct client *c, const struct pmw_protect_req *m)
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

/* A report or protect message must name the policy handed out on this
 * connection (children inherit it) and one of its pools, or, for a report,
 * no policy (an API pool): anything else is refused and counted, the
 * connection kept. */
static bool handed_out(struct client *c, const char *what, bool api_ok, const char *policy,
		       const char *pool)
{
	if ((policy[0] || api_ok) && proc_entry_handed_check(c->entry, policy, pool) == 0)
		return true;
	client_drop(c, forged, "%s naming a policy or pool not handed to it, refused", client_drop_args(c),
		    what);
	return false;
}

/* The sender of a report or protect message that passes handed_out(), the
 * message counted in *counter; NULL when it does not pass, or when
 * sender_entry() refuses (counted by budget.c). */
static struct proc_entry *pool_message_sender(struct client *c, const char *what, bool api_ok,
					      const char *policy, const char *pool, const struct ucred *cred,
					      uint64_t *counter)
{
	if (!handed_out(c, what, api_ok, policy, pool))
		return NULL;
	(*counter)++;
	return sender_entry(c, cred);
}

/* Rate-limit site of a protect entry: its pool (FNV-1a of policy and name). */
static uint64_t pool_key(const char *policy, const char *pool)
{
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = policy; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL;
	for (const char *p = pool; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	return h == UINT64_MAX ? 0 : h;
}

static int handle_protected(struct client *c, struct pmw_protected *m, const struct ucred *cred)
{
	struct server *s = c->server;
	const struct policy_daemon_settings *d = &s->manager->config->set->daemon;
	char policy[ESCAPED_SIZE(PMW_NAME)], pool[ESCAPED_SIZE(PMW_NAME)], trigger[ESCAPED_SIZE(PMW_NAME)];
	struct proc_entry *e;
	struct reg_pool *rp;

	text_escape(policy, sizeof(policy), m->policy);
	text_escape(pool, sizeof(pool), m->pool);
	text_escape(trigger, sizeof(trigger), m->trigger);
	/* Only policy pools are protected on their triggers and announced. */
	e = pool_message_sender(c, "PROTECTED", false, m->policy, m->pool, cred, &s->counters.protects);
	if (!e)
		return 0;
	e->protects++;
	rp = proc_entry_pool(e, policy, pool);
	if (rp) {
		rp->protected_bytes = m->protected_bytes;
		rp->objects = m->objects;
		rp->protects++;
		str_copy(rp->last_trigger, sizeof(rp->last_trigger), trigger);
		/* A generation: a protect that made memory read-only (the
		 * shim numbers them; an older shim sends 0, numbered here). */
		if (m->new_bytes) {
			struct reg_generation *g = &rp->gens[rp->n_gens % PMW_SR_G_KEPT];

			g->generation = m->pool_generation ? m->pool_generation : rp->n_gens + 1;
			g->new_bytes = m->new_bytes;
			g->protected_bytes = m->protected_bytes;
			g->freed_bytes = m->freed_bytes;
			g->usec = now_usec(s);
			str_copy(g->trigger, sizeof(g->trigger), trigger);
			rp->n_gens++;
		}
	} else
		e->pools_untracked++;

	if (journal_limit_admit(s->manager->event, e, LIMIT_PROTECTED, pool_key(policy, pool), policy,
				pool, d->report_burst, d->report_interval_s))
		journal_protected(e, m, policy, pool, trigger);
	else
		e->protects_dropped++;
	return 0;
}

static int handle_report(struct client *c, struct pmw_report *m, const struct ucred *cred)
{
	struct server *s = c->server;
	const struct policy_daemon_settings *d = &s->manager->config->set->daemon;
	char policy[ESCAPED_SIZE(PMW_NAME)], pool[ESCAPED_SIZE(PMW_NAME)];
	struct proc_entry *e;

	e = pool_message_sender(c, "REPORT", true, m->policy, m->pool, cred, &s->counters.reports);
	if (!e)
		return 0;
	e->violations++;
	text_escape(policy, sizeof(policy), m->policy);
	text_escape(pool, sizeof(pool), m->pool);
	/* The process's own limit, then its executable's (a crash loop). */
	if (!journal_limit_admit(s->manager->event, e, LIMIT_VIOLATION, m->fault_ip, policy, pool,
				 d->report_burst, d->report_interval_s) ||
	    !repeat_admit(&s->repeats, REPEAT_VIOLATION, e, m, policy, pool)) {
		e->violations_dropped++;
		return 0;
	}
	violation_log(s->manager->symbolizer, e, m);
	return 0;
}

/* The shim put its fault handler right (wire.h's PMW_NOTICE): counted for
 * status; the shim wrote the journal entry itself. */
static int handle_notice(struct client *c, const struct pmw_notice *m, const struct ucred *cred)
{
	struct proc_entry *e = sender_entry(c, cred);

	if (!e)
		return 0;
	e->handler_notices++;
	e->handler_what |= m->what;
	return 0;
}

/* What a process says of its rules and sites (rules.c keeps it): checked
 * like a report, its pools those handed out on this connection. */
static int handle_rules(struct client *c, struct pmw_rules *m, const struct ucred *cred)
{
	struct proc_entry *e;
	int r;

	e = sender_entry(c, cred);
	if (!e)
		return 0;                /* counted by budget.c */
	r = rules_take(e, c->entry, m, now_usec(c->server));
	if (r == -EPERM)
		client_drop(c, forged, "RULES naming a policy or pool not handed to it, refused",
			    client_drop_args(c));
	return 0;                        /* -EBUSY: counted with the entry; -ENOMEM: not kept */
}

static int client_dispatch(struct client *c, size_t n, const struct ucred *cred)
{
	struct pmw_header *h = (struct pmw_header *)rx_buf;
	const struct policy_daemon_settings *d = &c->server->manager->config->set->daemon;
	char why[PMW_SYM];

	budgets_set_rate(&c->server->budgets, d->report_burst, d->report_interval_s);
	repeats_set_interval(&c->server->repeats, d->report_burst ? d->report_interval_s : 0);

	switch (wire_check_client(rx_buf, n, why, sizeof(why))) {
	case WIRE_OK:
		break;
	case WIRE_MALFORMED:
		client_drop(c, malformed, "%s, dropped", client_drop_args(c), why);
		return -EINVAL;
	case WIRE_NOT_FROM_CLIENT:
		client_drop(c, out_of_order, "%s, dropped", client_drop_args(c), why);
		return -EPROTO;
	case WIRE_OTHER_VERSION:
		if (h->type == PMW_HELLO && c->state == CLIENT_NEW) {
			char reason[PMW_SYM];

			snprintf(reason, sizeof(reason),
				 "protocol version %u not supported: pmallocd speaks version %u",
				 (unsigned)h->version, (unsigned)PMW_VERSION);
			drain(c->fd);
			(void)send_answer_fd(c->fd, PMW_REFUSED, c->server->manager->config->generation,
					     reason);
			client_drop(c, refused_version, "%s", client_drop_args(c), reason);
		} else
			client_drop(c, malformed, "%s, dropped", client_drop_args(c), why);
		return -EPROTO;
	}

	switch (c->state) {
	case CLIENT_IDENTIFYING:         /* not read then: no message reaches here */
		break;
	case CLIENT_NEW:
		if (h->type == PMW_HELLO)
			return handle_hello(c, (struct pmw_hello *)rx_buf, cred);
		if (h->type == PMW_STATUS_REQ)
			return handle_status_req(c);
		if (h->type == PMW_PROTECT_REQ)
			return handle_protect_req(c, (struct pmw_protect_req *)rx_buf);
		if (h->type == PMW_STATUS_PID_REQ)
			return handle_status_pid_req(c, (struct pmw_status_pid_req *)rx_buf);
		break;
	case CLIENT_SERVED:
		if (wire_check_fields(rx_buf, why, sizeof(why)) < 0) {
			client_drop(c, malformed, "%s, dropped", client_drop_args(c), why);
			return -EINVAL;
		}
		if (h->type == PMW_PROTECTED)
			return handle_protected(c, (struct pmw_protected *)rx_buf, cred);
		if (h->type == PMW_REPORT)
			return handle_report(c, (struct pmw_report *)rx_buf, cred);
		if (h->type == PMW_RULES)
			return handle_rules(c, (struct pmw_rules *)rx_buf, cred);
		if (h->type == PMW_NOTICE)
			return handle_notice(c, (const struct pmw_notice *)rx_buf, cred);
		break;
	}
	client_drop(c, out_of_order, "type %u message out of order (%s), dropped", client_drop_args(c),
		    (unsigned)h->type, c->state == CLIENT_NEW ? "before HELLO" : "after HELLO");
	return -EPROTO;
}

/* 1: a message was handled, 0: nothing more to read, <0: close. */
static int client_receive_one(struct client *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 32)];
	} control;
	struct iovec iov = { .iov_base = rx_buf, .iov_len = sizeof(rx_buf) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = &control,
		.msg_controllen = sizeof(control),
	};
	struct ucred cred_storage, *cred = NULL;
	bool fds = false;
	ssize_t n;

	/* MSG_TRUNC: n is the packet's real size, so an oversized one is seen. */
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n < 0) {
		int e = errno;

		if (e == EAGAIN || e == EINTR)
			return 0;
		client_drop(c, vanished, "receive failed (%s), dropped", client_drop_args(c), strerror(e));
		return -e;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_CREDENTIALS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
			memcpy(&cred_storage, CMSG_DATA(cm), sizeof(cred_storage));
			cred = &cred_storage;
		} else if (cm->cmsg_type == SCM_RIGHTS) {
			size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < nfd; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				close(fd);
			}
			fds = true;
		}
	}
	if (n == 0) {
		if (c->state == CLIENT_NEW)
			client_drop(c, vanished, "closed without a word", client_drop_args(c));
		return -ECONNRESET;
	}
	if (fds || (mh.msg_flags & MSG_CTRUNC)) {
		client_drop(c, fds_passed, "passed file descriptors, dropped", client_drop_args(c));
		return -EBADMSG;
	}
	if ((size_t)n > sizeof(rx_buf) || (mh.msg_flags & MSG_TRUNC)) {
		client_drop(c, oversized, "%zd-byte packet, more than %d, dropped", client_drop_args(c), n,
			    PMW_MAX_MSG);
		return -EMSGSIZE;
	}
	return client_dispatch(c, (size_t)n, cred) < 0 ? -EBADMSG : 1;
}

/* Add c to the clients' epoll set: 0, or -errno (logged; c is the
 * caller's to free).  Closing its socket takes it out again. */
static int client_watch(struct client *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	if (c->watched)
		return 0;
	if (epoll_ctl(c->server->client_epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		int r = -errno;

		log_limited(&c->server->drop_log, LOG_WARNING, "cannot watch a client: %m");
		return r;
	}
	c->watched = true;
	return 0;
}

static void client_unwatch(struct client *c)
{
	if (c->watched && epoll_ctl(c->server->client_epfd, EPOLL_CTL_DEL, c->fd, NULL) == 0)
		c->watched = false;
}

/* What c sent, up to SERVER_READ_BATCH messages: 0, or -1 when c was
 * freed (closed, or dropped). */
static int client_read(struct client *c)
{
	for (int i = 0; i < SERVER_READ_BATCH; i++) {
		enum client_state was = c->state;
		int r = client_receive_one(c);
		if (r < 0) {
			client_free(c);
			return -1;
		}
		/* Nothing more, or just served: a shim says nothing more until it
		 * has read its answer (one receive that would fail saved). */
		if (r == 0 || c->state != was)
			return 0;
	}
	return 0;
}

/* Jobs back from identify.c's worker: answer each, then watch it.  Called
 * by the eventfd's source, and at the end of the others' (no system call
 * when none is back): an answer waits for no turn of the loop. */
static void answer_identified(struct server *s, bool woken)
{
	struct identify_job *j, *next;

	for (j = identify_take(s->identify, woken); j; j = next) {
		struct client *c = j->owner;
		int r;

		next = j->next;
		c->job = NULL;
		r = hello_finish(c, j);
		identify_job_put(s->identify, j);
		if (r < 0 || client_watch(c) < 0)
			client_free(c);
	}
}

/* Ready clients, at most SERVER_IO_BATCH per call: the set stays readable
 * while more are, and the loop comes back after its other sources.
 * Handling one client frees no other (only the silent timer drops others). */
static int on_clients(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct server *s = userdata;
	struct epoll_event ev[SERVER_IO_BATCH];
	int n;

	(void)src;
	(void)revents;
	n = epoll_wait(fd, ev, SERVER_IO_BATCH, 0);
	jwriter_batch_begin();           /* the answers first, then the journal */
	for (int i = 0; i < n; i++) {
		struct client *c = ev[i].data.ptr;

		/* It spoke again, or left, while the worker has its HELLO: read
		 * in order once it is answered (watched again then).  A shim
		 * waits for its answer: only a hostile or vanishing client
		 * costs this. */
		if (c->state == CLIENT_IDENTIFYING)
			client_unwatch(c);
		else
			(void)client_read(c);
	}
	answer_identified(s, false);
	jwriter_batch_end();
	return 0;
}

static int on_identified(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct server *s = userdata;

	(void)src;
	(void)fd;
	(void)revents;
	jwriter_batch_begin();           /* the answers first, then the journal */
	answer_identified(s, true);
	jwriter_batch_end();
	return 0;
}

/* ---- accepting ---- */

static int on_retry_accept(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct server *s = userdata;

	(void)usec;
	(void)src;
	s->retry_timer = sd_event_source_disable_unref(s->retry_timer);
	return sd_event_source_set_enabled(s->listen_src, SD_EVENT_ON);
}

/* Out of descriptors or memory: stop accepting for a moment instead of
 * spinning on a listening socket that stays readable. */
static void pause_accepting(struct server *s)
{
	int r;

	(void)sd_event_source_set_enabled(s->listen_src, SD_EVENT_OFF);
	if (s->retry_timer)
		return;
	r = sd_event_add_time_relative(s->manager->event, &s->retry_timer, CLOCK_MONOTONIC,
				       100 * USEC_PER_MSEC, 10 * USEC_PER_MSEC, on_retry_accept, s);
	if (r < 0) {
		log_error_errno(r, "cannot arm the accept retry timer: %m");
		(void)sd_event_source_set_enabled(s->listen_src, SD_EVENT_ON);
	}
}

static void client_accept(struct server *s, int fd)
{
	struct ucred peer;
	socklen_t len = sizeof(peer);
	struct uid_budget *budget;
	struct client *c;

	s->counters.accepted++;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 || len != sizeof(peer) ||
	    peer.pid <= 0) {
		s->counters.unidentified++;
		log_limited(&s->drop_log, LOG_NOTICE, "client without peer credentials, dropped");
		close(fd);
		return;
	}
	budget = s->n_clients < s->max_clients ? budget_client_add(&s->budgets, peer.uid) : NULL;
	if (!budget) {
		s->counters.refused_busy++;
		log_limited(&s->drop_log, LOG_NOTICE, "client PID %d (uid %u): refused, %zu clients connected",
			    (int)peer.pid, (unsigned)peer.uid, s->n_clients);
		drain(fd);
		(void)send_answer_fd(fd, PMW_REFUSED, s->manager->config->generation,
				     "pmallocd is serving too many clients");
		close(fd);
		return;
	}

	c = calloc(1, sizeof(*c));
	if (!c) {
		log_error_errno(ENOMEM, "out of memory, client dropped");
		budget_client_remove(budget);
		close(fd);
		return;
	}
	c->budget = budget;
	c->server = s;
	c->fd = fd;
	c->pid = peer.pid;
	c->uid = peer.uid;
	c->gid = peer.gid;
	/* SO_PASSCRED comes from the listening socket (listen.c sets it). */
	LIST_PUSH(s->clients, c);
	s->n_clients++;

	/* A starting process sends its HELLO right after connect(): mostly
	 * it is there already, and is answered now, without a trip through
	 * the loop. */
	if (client_read(c) < 0)
		return;
	/* Its HELLO is with the worker: watched once it is answered. */
	if (c->state == CLIENT_IDENTIFYING)
		return;
	if (client_watch(c) < 0) {
		client_free(c);
		return;
	}
	if (c->state == CLIENT_NEW) {
		c->deadline = now_usec(s) + (uint64_t)silent_limit_ms(s) * USEC_PER_MSEC;
		silent_arm(s, c->deadline);
	}
}

static int on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct server *s = userdata;

	(void)src;
	(void)revents;
	jwriter_batch_begin();           /* the answers first, then the journal */
	for (int i = 0; i < SERVER_ACCEPT_BATCH; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			s->counters.accept_errors++;
			log_limited(&s->drop_log, LOG_WARNING, "accept failed: %m");
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				pause_accepting(s);
			break;
		}
		client_accept(s, cfd);
	}
	answer_identified(s, false);
	jwriter_batch_end();
	return 0;
}

/* One descriptor per client; keep SERVER_FD_RESERVE for the rest (journal,
 * notify, module files, /proc reads), so the cap refuses politely before
 * accept() runs out of descriptors. */
static size_t max_clients(void)
{
	struct rlimit rl;
	size_t n = SERVER_MAX_CLIENTS;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		if (rl.rlim_cur < SERVER_FD_RESERVE + 16)
			n = 16;
		else if (rl.rlim_cur - SERVER_FD_RESERVE < n)
			n = (size_t)(rl.rlim_cur - SERVER_FD_RESERVE);
	}
	return n;
}

int server_open(struct manager *m, const char *path, int activated_fd, struct server **ret)
{
	struct server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return log_error_errno(ENOMEM, "out of memory");
	s->manager = m;
	s->fd = -1;
	s->client_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->client_epfd < 0) {
		r = log_error_errno(errno, "epoll_create1: %m");
		free(s);
		return r;
	}
	s->drop_log = (struct log_limit)LOG_LIMIT_INIT(10, 10);
	s->protect = (struct protect)PROTECT_INIT;
	s->max_clients = max_clients();
	budgets_init(&s->budgets, m->event, s->max_clients, journal_budget_summary, &m->persons);
	repeats_init(&s->repeats, m->event);
	if (activated_fd >= 0) {
		r = listen_adopt(activated_fd, &s->path);
		s->fd = activated_fd;
		s->activated = true;
	} else {
		s->path = strdup(path);
		r = s->path ? listen_bind(path, &s->fd) : -ENOMEM;
		s->owns_path = r >= 0;
	}
	if (r < 0) {
		close(s->client_epfd);
		free(s->path);
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int server_start(struct server *s)
{
	int r = sd_event_add_io(s->manager->event, &s->listen_src, s->fd, EPOLLIN, on_listen, s);

	if (r < 0)
		return log_error_errno(r, "cannot watch the socket: %m");
	r = sd_event_add_io(s->manager->event, &s->clients_src, s->client_epfd, EPOLLIN, on_clients, s);
	if (r < 0)
		return log_error_errno(r, "cannot watch the clients: %m");
	r = sd_event_add_time(s->manager->event, &s->silent_timer, CLOCK_MONOTONIC, 0, 50 * USEC_PER_MSEC,
			      on_silent, s);
	if (r < 0)
		return log_error_errno(r, "cannot arm the silent-client timer: %m");
	(void)sd_event_source_set_enabled(s->silent_timer, SD_EVENT_OFF);
	/* Without the worker, the loop identifies every client itself. */
	r = identify_start(&s->identify);
	if (r < 0) {
		log_warning_errno(r, "cannot start the identification thread, clients are identified "
				  "by the event loop: %m");
		return 0;
	}
	r = sd_event_add_io(s->manager->event, &s->identified_src, identify_fd(s->identify), EPOLLIN,
			    on_identified, s);
	if (r < 0)
		return log_error_errno(r, "cannot watch the identification thread: %m");
	return 0;
}

void server_free(struct server *s)
{
	if (!s)
		return;
	/* The worker first: the sockets of the clients it identifies stay
	 * open until it is gone. */
	s->identified_src = sd_event_source_disable_unref(s->identified_src);
	identify_stop(s->identify);
	s->identify = NULL;
	while (s->clients)
		client_free(s->clients);
	repeats_done(&s->repeats);
	budgets_done(&s->budgets);
	s->trim_timer = sd_event_source_disable_unref(s->trim_timer);
	s->silent_timer = sd_event_source_disable_unref(s->silent_timer);
	s->clients_src = sd_event_source_disable_unref(s->clients_src);
	if (s->client_epfd >= 0)
		close(s->client_epfd);
	s->listen_src = sd_event_source_disable_unref(s->listen_src);
	s->retry_timer = sd_event_source_disable_unref(s->retry_timer);
	if (s->fd >= 0)
		close(s->fd);
	if (s->owns_path && s->path && unlink(s->path) < 0 && errno != ENOENT)
		log_warning_errno(errno, "cannot remove %s: %m", s->path);
	free(s->path);
	free(s);
}

const struct server_counters *server_get_counters(const struct server *s)
{
	return &s->counters;
}

const struct budgets *server_get_budgets(const struct server *s)
{
	return &s->budgets;
}

size_t server_n_clients(const struct server *s)
{
	return s->n_clients;
}

size_t server_max_clients(const struct server *s)
{
	return s->max_clients;
}

const char *server_socket_path(const struct server *s)
{
	return s->path ? s->path : "(socket activation)";
}

bool server_socket_activated(const struct server *s)
{
	return s->activated;
}

bool server_is_peer(const struct server *s, pid_t pid)
{
	for (const struct client *c = s->clients; c; c = c->next)
		if (c->pid == pid)
			return true;
	return false;
}
