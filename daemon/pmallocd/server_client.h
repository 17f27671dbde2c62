/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_client.h - a connected client and the server that holds it, as
 * server.c and its message handlers (server_hello.c, server_ask.c,
 * server_reports.c) share them; pmallocd's other files see struct server
 * only through server.h.
 *
 * Owns the two structs, the one send buffer and the few sends and counts
 * every handler uses.  Never: used outside the event loop's thread (the
 * buffer is that thread's alone).
 */
#ifndef PMALLOCD_SERVER_CLIENT_H
#define PMALLOCD_SERVER_CLIENT_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "budget.h"
#include "log.h"
#include "protect.h"
#include "repeat.h"
#include "server.h"
#include "wire.h"

struct identify;
struct identify_job;
struct proc_entry;

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
	/* The first HELLO of a wake-up's batch (its accepts, or its reads),
	 * kept from the worker until the batch ends (answer_identified()):
	 * alone in its batch with the worker waiting, the loop identifies it
	 * itself, one thread's wake-up and one turn of the loop saved; a
	 * second HELLO sends both to the worker. */
	struct identify_job *held;
	unsigned int batch_hellos;        /* HELLOs read since the batch began */
	sd_event_source *trim_timer;      /* malloc_trim once frees stop */
	uint64_t last_free;               /* when the last client left */
};

/* The send buffer: only the loop's thread touches it (identify.c's worker
 * reads /proc into its jobs, nothing else). */
extern alignas(16) uint8_t tx_buf[PMW_MAX_MSG];

static inline uint64_t now_usec(const struct server *s)
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

/* A forked child's entry goes to the history; its uid's count drops. */
void child_retire(struct client *c, struct proc_entry *e, uint64_t now);
/* Send msg whole, never waiting: 0, or -errno (-EIO: sent in part). */
int client_send(struct client *c, const void *msg, size_t len);
/* An answer (PMW_REFUSED, PMW_NO_POLICY) on fd, which may be no client yet. */
int send_answer_fd(int fd, enum pmw_type type, uint64_t generation, const char *reason);

#endif
