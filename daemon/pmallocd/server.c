/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server.c - pmallocd's socket: accepting clients, checking every message,
 * answering, and the limits on what a client can make the daemon hold.
 *
 * Owns: the listening socket's lifetime (listen.c makes it; its path is
 * unlinked at exit when pmallocd made it), a client's lifetime (struct
 * client: server_client.h), the per-connection state machine (NEW ->
 * IDENTIFYING -> SERVED, or NEW -> status or protect request -> closed),
 * reading and checking every packet and sending it to its handler (the
 * HELLO: server_hello.c; pmallocctl's requests: server_ask.c; a served
 * process's reports: server_reports.c), client caps, the clients' epoll
 * set and the silent-client timer.  It all runs in the event loop's
 * thread.
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
 * answer, PMW_REFUSED); user space is ~12,800 instructions a hand-out
 * in both threads (callgrind; 26,200 while the journal entry went through
 * vsnprintf and matching through fnmatch each time), ~1.5 us of the 35.
 * While the worker has a client, the loop
 * neither reads it (it is not watched, or unwatched when it speaks) nor
 * times it out, and keeps its socket open: messages after the HELLO are
 * read in order once it is answered.  With IDENTIFY_QUEUE jobs out, the
 * loop identifies a client itself, as it did alone; and a HELLO that came
 * alone in its wake-up's batch while the worker waits (an idle daemon: a
 * process starting now and then) is identified by the loop too, at the
 * batch's end: no thread to wake and wait for on a client's start-up.
 * Identity comes from the kernel only: SO_PEERCRED at accept, SO_PEERPIDFD
 * and /proc (proc.c) at HELLO, SCM_CREDENTIALS on each packet (the comm a
 * HELLO may tell is a name, not an identity: wire.h).
 * Never: blocks on a client (every socket is non-blocking, every send
 * MSG_DONTWAIT), reads a field before the header, length and type-specific
 * size are checked, keeps a file descriptor a client passed, or lets one
 * client's traffic stop others (bounded work per wake-up).
 */
#define _GNU_SOURCE
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
#include "registry.h"
#include "repeat.h"
#include "server_ask.h"
#include "server_client.h"
#include "server_hello.h"
#include "server_reports.h"
#include "wire.h"
#include "wire_decode.h"

#define USEC_PER_MSEC 1000ULL

/* One receive buffer: only the loop's thread touches it (identify.c's
 * worker reads /proc into its jobs, nothing else); the send buffer is
 * server_client.c's. */
static alignas(16) uint8_t rx_buf[PMW_MAX_MSG];

/* ---- client lifetime ---- */

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
		if (h->type == PMW_EXITING)
			return handle_exiting(c, (const struct pmw_exiting *)rx_buf, cred);
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

static void answer_one(struct server *s, struct identify_job *j)
{
	struct client *c = j->owner;
	int r;

	c->job = NULL;
	r = hello_finish(c, j);
	identify_job_put(s->identify, j);
	if (r < 0 || client_watch(c) < 0)
		client_free(c);
}

/* The end of a batch: the jobs back from identify.c's worker answered,
 * each then watched; and the batch's held HELLO (server_hello.c), when it
 * was the batch's only one, identified and answered here if the worker
 * has nothing to do, else given to it.  Inline, an idle daemon's hand-out
 * saves the worker's wake-up on the other core, its eventfd write and the
 * loop's turn to read it: on the VM of doc/figures.md, 35 us of a
 * client's start-up, and 30 us of the daemon's CPU.  Under load, batches
 * hold many HELLOs or the worker is busy: it keeps them all.  Called by
 * the eventfd's source, and at the end of the others' (no system call
 * when none is back): an answer waits for no turn of the loop. */
static void answer_identified(struct server *s, bool woken)
{
	struct identify_job *j, *next, *held = s->held;

	s->held = NULL;
	s->batch_hellos = 0;
	for (j = identify_take(s->identify, woken); j; j = next) {
		next = j->next;
		answer_one(s, j);
	}
	if (!held)
		return;
	if (!identify_idle(s->identify)) {
		identify_submit(s->identify, held);
		return;
	}
	identify_run(held);
	answer_one(s, held);
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
