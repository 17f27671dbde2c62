/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jwriter.h - pmallocd's one way into the journal: entries sent without
 * ever blocking the event loop, queued (bounded) while journald is not
 * reading, counted when dropped.
 *
 * Contract: jwriter_send() returns at once, whatever journald does.  Every
 * entry is either sent, queued behind the entries already queued (order is
 * kept), or dropped and counted; status shows the counts, and once journald
 * reads again one entry says how many were lost.
 */
#ifndef PMALLOCD_JWRITER_H
#define PMALLOCD_JWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <systemd/sd-event.h>

#define JWRITER_SOCKET "/run/systemd/journal/socket"
#define JWRITER_QUEUE_MAX 256            /* entries held while journald does not read */
#define JWRITER_QUEUE_BYTES (4u << 20)   /* ... and their bytes */
/* Of those, kept for entries sent with reserve (pmallocd's own, and those
 * about root's processes): entries about users' processes never fill them. */
#define JWRITER_RESERVE 64
#define JWRITER_RESERVE_BYTES (1u << 20)
#define JWRITER_DGRAM_MAX (40 * 1024)    /* one entry in the native protocol */
#define JWRITER_EXIT_WAIT_MS 250         /* at exit, for journald to take the queue */

/* Make the socket and connect it (journald may be absent: connecting is
 * retried with each entry).  Call once, before the sandbox: later
 * reconnects reuse this descriptor.  0 or -errno. */
int jwriter_open(void);
/* The socket's descriptor (the one connect() the sandbox allows), or -1. */
int jwriter_fd(void);
/* Flush the queue from event when the socket turns writable (journald
 * read).  Entries queued before the call are flushed then too. */
int jwriter_attach(sd_event *event);
/* At exit: flush what is queued, waiting at most JWRITER_EXIT_WAIT_MS for
 * journald to make room; what is left is dropped and counted.  Releases the socket and the watch.  Returns the number of
 * entries dropped so. */
size_t jwriter_close(void);

/* One entry: items are "FIELD=value" (value may hold newlines: sent in the
 * binary form); reserve: it may take the queue's last JWRITER_RESERVE
 * slots.  0: sent or queued; -ENOBUFS: the queue (its share of it) is full;
 * -ENOENT/-ECONNREFUSED: no journald; other -errno: not sendable.  Every
 * failure is counted as a dropped entry. */
int jwriter_send(const struct iovec *items, size_t n, bool reserve);

/* Around a batch of work (the server's clients of one wake-up): entries
 * sent in between are held and go at jwriter_batch_end(), in one
 * sendmmsg() (FLUSH_BATCH at most; a fuller batch is sent as it fills),
 * order kept.  What journald has no room for then is queued as usual. */
void jwriter_batch_begin(void);
void jwriter_batch_end(void);

struct jwriter_stats {
	uint64_t sent;                   /* entries journald accepted */
	uint64_t sent_late;              /* of those, after waiting in the queue */
	uint64_t dropped_full;           /* the queue was full */
	uint64_t dropped_absent;         /* no journald to send to */
	uint64_t dropped_error;          /* too big, or a send error */
	size_t queued;                   /* waiting now */
	size_t queued_bytes;
	bool connected;
};
void jwriter_get_stats(struct jwriter_stats *ret);

#endif
