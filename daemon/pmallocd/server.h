/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server.h - the listening socket and the connected clients.
 */
#ifndef PMALLOCD_SERVER_H
#define PMALLOCD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "manager.h"

#define SERVER_MAX_CLIENTS 4096          /* concurrent connections; more are refused */
#define SERVER_FD_RESERVE 128            /* descriptors not given to clients (RLIMIT_NOFILE) */
/* Per-user shares of the client slots, and the reserve for root: budget.h. */
#define SERVER_MAX_CHILDREN 16           /* forked children tracked per connection */
#define SERVER_ACCEPT_BATCH 64           /* accepts per wake-up, so clients get turns */
#define SERVER_READ_BATCH 16             /* messages per client per wake-up */
#define SERVER_IO_BATCH 64               /* ready clients per wake-up */
#define SERVER_SILENT_MIN_MS 1000        /* a client must say HELLO, STATUS_REQ or PROTECT_REQ within */
#define SERVER_SILENT_MAX_MS 30000       /* handshake_timeout_ms * 10, clamped to these */
#define SERVER_TRIM_IDLE_MS 1000         /* freed memory goes back to the system once the
					  * frees stop for this long (malloc_trim) */

/* Everything refused or dropped is counted; status shows these. */
struct server_counters {
	uint64_t accepted;
	uint64_t handed;                 /* PMW_POLICY sent */
	uint64_t no_policy;              /* PMW_NO_POLICY sent */
	uint64_t status_requests;
	uint64_t protect_requests;       /* PMW_PROTECT_REQ received (pmallocctl protect) */
	uint64_t protect_sent;           /* of those, PMW_PROTECT sent to the process */
	uint64_t protects;
	uint64_t reports;
	uint64_t refused_busy;           /* over SERVER_MAX_CLIENTS, or its uid's share (budget.h) */
	uint64_t refused_version;
	uint64_t malformed;              /* bad magic, length, size, field */
	uint64_t oversized;
	uint64_t out_of_order;           /* a type the connection's state does not allow */
	uint64_t fds_passed;             /* SCM_RIGHTS: closed, client dropped */
	uint64_t timed_out;              /* silent past the handshake deadline */
	uint64_t vanished;               /* gone before or while answered */
	uint64_t unidentified;           /* the kernel could not say who it is */
	uint64_t forged;                 /* HELLO not from the process that connected, or its
					  * credentials changed since; a report or protect naming
					  * a policy or pool not handed out on the connection */
	uint64_t accept_errors;
};

struct server;

/* Listen on path (created, mode 0666; a stale socket is replaced), or on
 * activated_fd (socket activation: checked to be a listening
 * SOCK_SEQPACKET unix socket) when it is >= 0. */
int server_open(struct manager *m, const char *path, int activated_fd, struct server **ret);
/* Start accepting, and the worker thread that identifies clients
 * (identify.h): before the sandbox, whose filter must reach that thread
 * too (the sandbox allows no thread creation).  Without the thread, the
 * loop identifies clients itself. */
int server_start(struct server *s);
/* Drop every client, close the socket, unlink it if server_open made it. */
void server_free(struct server *s);

const struct server_counters *server_get_counters(const struct server *s);
struct budgets;
const struct budgets *server_get_budgets(const struct server *s);
size_t server_n_clients(const struct server *s);
size_t server_max_clients(const struct server *s);
const char *server_socket_path(const struct server *s);
bool server_socket_activated(const struct server *s);
/* True when pid is connected right now (served, or asking for status). */
bool server_is_peer(const struct server *s, pid_t pid);

#endif
