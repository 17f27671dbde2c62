/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jwriter.c - pmallocd's journal entries, in the journal's native protocol,
 * on a non-blocking datagram socket.
 *
 * Owns: the socket connected to /run/systemd/journal/socket, the queue of
 * entries journald has no room for yet, the EPOLLOUT watch that flushes
 * it, the drop counters and the summary entry that reports drops once
 * journald takes entries again; batches: entries written while the server
 * handles a batch of clients wait in the queue until it is done (answers
 * first) and go in one sendmmsg() (still one datagram per entry).
 * Never: blocks (SOCK_NONBLOCK, and MSG_DONTWAIT on every send), reorders
 * entries (while anything is queued, new entries go behind it), holds more
 * than JWRITER_QUEUE_MAX entries or JWRITER_QUEUE_BYTES bytes, lets
 * entries about users' processes into root's reserve of those, allocates
 * except to queue, or logs through log.c (log.c writes through here).
 *
 * Why not sd_journal_sendv(): it sends with a blocking sendmsg() that no
 * flag changes, and pmallocd answers clients from one thread (its event
 * loop; identify.c's worker never writes entries), so a journald that stops
 * reading (stopped, or busy with its queue full) used to stop hand-outs,
 * status answers and SIGTERM with it.  A connect()ed datagram socket gives
 * what it lacks: EAGAIN instead of a wait, and EPOLLOUT once the peer's
 * queue has room (the kernel's peer-wake for connected unix datagram
 * sockets).  Nothing in pmallocd uses sd-journal any more.
 *
 * Native protocol: one datagram per entry, "FIELD=value\n" per field; a
 * value holding '\n' goes as "FIELD\n", its length as a little-endian
 * uint64, the bytes, "\n".
 */
#define _GNU_SOURCE
#include "jwriter.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_BATCH 64                   /* entries per wake-up: clients get turns;
					  * entries per sendmmsg() */

struct qentry {
	struct qentry *next;
	size_t len;
	bool summary;                    /* our own summary: not counted as late */
	bool batched;                    /* held for the batch's end, not for journald */
	char data[];
};

/* Since the last summary: what the summary will say. */
struct episode {
	uint64_t start_usec;             /* first wait or drop; 0: nothing to report */
	uint64_t late, full, absent, error;
};

static struct {
	int fd;
	bool connected;
	sd_event_source *watch;
	struct qentry *head, *tail;
	size_t n, bytes;
	bool batching;                   /* between jwriter_batch_begin() and _end() */
	size_t n_batched;                /* entries in the queue only for the batch */
	struct jwriter_stats st;
	struct episode ep;
} w = { .fd = -1 };

/* One datagram at a time: only the event loop's thread writes entries
 * (identify.c's worker never logs). */
static char dgram[JWRITER_DGRAM_MAX];

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static void episode_mark(void)
{
	if (w.ep.start_usec == 0)
		w.ep.start_usec = now_usec();
}

static bool is_absent(int r)
{
	return r == -ENOENT || r == -ECONNREFUSED || r == -ENOTCONN || r == -ECONNRESET ||
	       r == -ENOTDIR;
}

static void count_drop(int r)
{
	episode_mark();
	if (r == -ENOBUFS) {
		w.st.dropped_full++;
		w.ep.full++;
	} else if (is_absent(r)) {
		w.st.dropped_absent++;
		w.ep.absent++;
	} else {
		w.st.dropped_error++;
		w.ep.error++;
	}
}

/* Items into the native protocol in dgram; its length, or -EMSGSIZE.
 * Items without "FIELD=" are our bug: left out rather than sent broken. */
static int serialize(const struct iovec *items, size_t n, size_t *ret_len)
{
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = items[i].iov_base, *eq = memchr(s, '=', items[i].iov_len);
		size_t klen, vlen;
		uint64_t le;

		if (!eq || eq == s)
			continue;
		klen = (size_t)(eq - s);
		vlen = items[i].iov_len - klen - 1;
		if (!memchr(eq + 1, '\n', vlen)) {
			if (items[i].iov_len + 1 > sizeof(dgram) - used)
				return -EMSGSIZE;
			memcpy(dgram + used, s, items[i].iov_len);
			used += items[i].iov_len;
			dgram[used++] = '\n';
			continue;
		}
		if (klen + 1 + sizeof(le) + vlen + 1 > sizeof(dgram) - used)
			return -EMSGSIZE;
		memcpy(dgram + used, s, klen);
		used += klen;
		dgram[used++] = '\n';
		le = htole64((uint64_t)vlen);
		memcpy(dgram + used, &le, sizeof(le));
		used += sizeof(le);
		memcpy(dgram + used, eq + 1, vlen);
		used += vlen;
		dgram[used++] = '\n';
	}
	*ret_len = used;
	return 0;
}

/* connect() on the same descriptor, also after journald went away: a
 * datagram socket may be connected again, and the sandbox allows connect()
 * on this descriptor only. */
static int journal_connect(void)
{
	static const struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JWRITER_SOCKET };

	if (w.fd < 0)
		return -EBADF;
	if (connect(w.fd, (const struct sockaddr *)&sa,
		    offsetof(struct sockaddr_un, sun_path) + sizeof(JWRITER_SOCKET)) < 0) {
		w.connected = false;
		return -errno;
	}
	w.connected = true;
	return 0;
}

/* 0 sent; -EAGAIN journald has no room now; other -errno: not sendable. */
static int send_now(const char *buf, size_t len)
{
	for (int attempt = 0;; attempt++) {
		int r;

		if (!w.connected) {
			r = journal_connect();
			if (r < 0)
				return r;
		}
		if (send(w.fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return 0;
		r = -errno;
		if (r == -EWOULDBLOCK || r == -EINTR)
			return -EAGAIN;
		if (!is_absent(r))
			return r;
		/* The peer closed (journald restarted, a new socket): the kernel
		 * disconnected us; connect to whoever listens now, once. */
		w.connected = false;
		if (attempt > 0)
			return r;
	}
}

static void watch_enable(bool on)
{
	if (w.watch)
		(void)sd_event_source_set_enabled(w.watch, on ? SD_EVENT_ON : SD_EVENT_OFF);
}

static int enqueue(const char *buf, size_t len, bool summary, bool reserve, bool batched)
{
	size_t max = reserve ? JWRITER_QUEUE_MAX : JWRITER_QUEUE_MAX - JWRITER_RESERVE;
	size_t max_bytes = reserve ? JWRITER_QUEUE_BYTES : JWRITER_QUEUE_BYTES - JWRITER_RESERVE_BYTES;
	struct qentry *q;

	if (!batched)
		episode_mark();
	if (w.n >= max || w.bytes + len > max_bytes) {
		episode_mark();
		return -ENOBUFS;
	}
	q = malloc(sizeof(*q) + len);
	if (!q)
		return -ENOMEM;
	q->next = NULL;
	q->len = len;
	q->summary = summary;
	q->batched = batched;
	memcpy(q->data, buf, len);
	if (w.tail)
		w.tail->next = q;
	else
		w.head = q;
	w.tail = q;
	w.n++;
	w.bytes += len;
	if (batched)
		w.n_batched++;
	else
		watch_enable(true);
	return 0;
}

static void dequeue(void)
{
	struct qentry *q = w.head;

	w.head = q->next;
	if (!w.head)
		w.tail = NULL;
	w.n--;
	w.bytes -= q->len;
	if (q->batched)
		w.n_batched--;
	free(q);
}

/* The head was sent. */
static void sent_head(void)
{
	w.st.sent++;
	if (!w.head->summary && !w.head->batched) {
		w.st.sent_late++;
		w.ep.late++;
	}
	dequeue();
}

/* Up to budget entries from the head in one sendmmsg(): how many went
 * (journald took them), 0 when the first did not (send_now() then says
 * why, with its reconnect). */
static unsigned int send_many(unsigned int budget)
{
	struct mmsghdr mm[FLUSH_BATCH];
	struct iovec iov[FLUSH_BATCH];
	unsigned int k = 0;
	int n;

	if (!w.connected)
		return 0;
	for (struct qentry *q = w.head; q && k < budget && k < FLUSH_BATCH; q = q->next, k++) {
		iov[k] = (struct iovec){ q->data, q->len };
		memset(&mm[k], 0, sizeof(mm[k]));
		mm[k].msg_hdr.msg_iov = &iov[k];
		mm[k].msg_hdr.msg_iovlen = 1;
	}
	n = sendmmsg(w.fd, mm, k, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		sent_head();
	return (unsigned int)n;
}

static int submit(const struct iovec *items, size_t n, bool summary, bool reserve);
static void batch_flush(void);

/* journald takes entries again: say what was lost since it stopped.  Only
 * losses are worth an entry; a wait alone (a burst meeting a short socket
 * queue) is ordinary. */
static void summary_if_due(void)
{
	struct episode ep = w.ep;
	uint64_t lost = ep.full + ep.absent + ep.error, ms;
	static const char ident[] = "SYSLOG_IDENTIFIER=pmallocd", prio[] = "PRIORITY=4";
	char msg[512], dropped[48], late[48];
	struct iovec items[5];

	if (ep.start_usec == 0)
		return;
	memset(&w.ep, 0, sizeof(w.ep));
	if (lost == 0)
		return;
	ms = (now_usec() - ep.start_usec) / 1000;
	snprintf(msg, sizeof(msg),
		 "MESSAGE=pmallocd: %llu journal entries lost while journald took none "
		 "(%llu with the queue full, %llu with no journald, %llu not sendable) over %llu.%03llu s; "
		 "%llu more written late",
		 (unsigned long long)lost, (unsigned long long)ep.full,
		 (unsigned long long)ep.absent, (unsigned long long)ep.error,
		 (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000),
		 (unsigned long long)ep.late);
	snprintf(dropped, sizeof(dropped), "PMALLOC_JOURNAL_DROPPED=%llu", (unsigned long long)lost);
	snprintf(late, sizeof(late), "PMALLOC_JOURNAL_LATE=%llu", (unsigned long long)ep.late);
	items[0] = (struct iovec){ msg, strlen(msg) };
	items[1] = (struct iovec){ (void *)(uintptr_t)prio, sizeof(prio) - 1 };
	items[2] = (struct iovec){ (void *)(uintptr_t)ident, sizeof(ident) - 1 };
	items[3] = (struct iovec){ dropped, strlen(dropped) };
	items[4] = (struct iovec){ late, strlen(late) };
	(void)submit(items, 5, true, true);
}

/* Send what the queue holds, oldest first, at most budget entries. */
static void flush(unsigned int budget)
{
	while (w.head && budget > 0) {
		unsigned int n = w.n > 1 ? send_many(budget) : 0;
		int r;

		if (n > 0) {
			budget -= n;
			continue;
		}
		budget--;
		r = send_now(w.head->data, w.head->len);
		if (r == -EAGAIN)
			return;
		if (r < 0 && is_absent(r)) {
			/* No journald behind it any more: all of it is lost. */
			while (w.head) {
				if (!w.head->summary)
					count_drop(r);
				dequeue();
			}
			break;
		}
		if (r < 0) {
			count_drop(r);
			dequeue();
		} else
			sent_head();
	}
	if (!w.head) {
		watch_enable(false);
		if (w.connected)
			summary_if_due();
	}
}

static int submit(const struct iovec *items, size_t n, bool summary, bool reserve)
{
	size_t len = 0;
	int r;

	r = serialize(items, n, &len);
	if (r < 0)
		goto drop;
	/* In a batch, behind nothing that waits for journald: held for its end. */
	if (w.batching && w.n_batched == w.n) {
		r = enqueue(dgram, len, summary, reserve, true);
		if (r < 0)
			goto drop;
		if (w.n_batched >= FLUSH_BATCH)
			batch_flush();
		return 0;
	}
	if (!w.head) {
		r = send_now(dgram, len);
		if (r == 0) {
			w.st.sent++;
			if (!summary)
				summary_if_due();
			return 0;
		}
		if (r != -EAGAIN)
			goto drop;
	}
	r = enqueue(dgram, len, summary, reserve, false);
	if (r == 0)
		return 0;
drop:
	if (!summary)
		count_drop(r);
	return r;
}

int jwriter_send(const struct iovec *items, size_t n, bool reserve)
{
	return submit(items, n, false, reserve);
}

/* Send what the batch holds; what journald has no room for waits in the
 * queue like any entry (late, counted so, flushed on EPOLLOUT). */
static void batch_flush(void)
{
	if (w.n_batched == 0)
		return;
	flush(FLUSH_BATCH);
	if (w.n_batched == 0)
		return;
	for (struct qentry *q = w.head; q; q = q->next)
		q->batched = false;
	w.n_batched = 0;
	episode_mark();
	watch_enable(true);
}

void jwriter_batch_begin(void)
{
	w.batching = true;
}

void jwriter_batch_end(void)
{
	w.batching = false;
	batch_flush();
}

static int on_writable(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	(void)src;
	(void)fd;
	(void)revents;
	(void)userdata;
	flush(FLUSH_BATCH);
	return 0;
}

int jwriter_open(void)
{
	int r;

	if (w.fd >= 0)
		return 0;
	w.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (w.fd < 0)
		return -errno;
	r = journal_connect();
	return is_absent(r) || r == 0 ? 0 : r;
}

int jwriter_fd(void)
{
	return w.fd;
}

int jwriter_attach(sd_event *event)
{
	int r;

	if (w.fd < 0 || w.watch)
		return 0;
	r = sd_event_add_io(event, &w.watch, w.fd, EPOLLOUT, on_writable, NULL);
	if (r < 0)
		return r;
	(void)sd_event_source_set_description(w.watch, "journal-writer");
	watch_enable(w.head != NULL);
	return 0;
}

size_t jwriter_close(void)
{
	uint64_t deadline = now_usec() + JWRITER_EXIT_WAIT_MS * 1000ULL;
	size_t left;

	/* The loop is over: a short, bounded wait lets a slow journald take
	 * what is queued (the last summaries); a stalled one costs no more. */
	for (;;) {
		struct pollfd p = { .fd = w.fd, .events = POLLOUT };
		uint64_t now;

		flush(JWRITER_QUEUE_MAX);
		now = now_usec();
		if (!w.head || w.fd < 0 || now >= deadline)
			break;
		if (poll(&p, 1, (int)((deadline - now + 999) / 1000)) <= 0)
			break;
	}
	left = w.n;
	while (w.head) {
		if (!w.head->summary)
			count_drop(-ENOBUFS);
		dequeue();
	}
	w.watch = sd_event_source_disable_unref(w.watch);
	if (w.fd >= 0)
		close(w.fd);
	w.fd = -1;
	w.connected = false;
	return left;
}

void jwriter_get_stats(struct jwriter_stats *ret)
{
	*ret = w.st;
	ret->queued = w.n;
	ret->queued_bytes = w.bytes;
	ret->connected = w.connected;
}
