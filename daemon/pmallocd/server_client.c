/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_client.c - what every part of pmallocd's server does to a
 * connected client: send it a message or an answer, retire a forked child
 * of it (see server_client.h).
 *
 * Owns the send buffer.  Never: blocks (every send MSG_DONTWAIT), frees
 * a client (server.c does, when a handler says to close), or runs outside
 * the event loop's thread.
 */
#define _GNU_SOURCE
#include "server_client.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "proc_entry.h"
#include "registry.h"

alignas(16) uint8_t tx_buf[PMW_MAX_MSG];

void child_retire(struct client *c, struct proc_entry *e, uint64_t now)
{
	struct uid_budget *u = e->budget;

	registry_retire(&c->server->manager->registry, e, now);
	budget_entry_remove(u);
}

int client_send(struct client *c, const void *msg, size_t len)
{
	ssize_t n = send(c->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int send_answer_fd(int fd, enum pmw_type type, uint64_t generation, const char *reason)
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
