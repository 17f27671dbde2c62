/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_victim.h - the victim the end-to-end programs (e2e_hold, e2e_loop,
 * e2e_worker, e2e_fork, e2e_respawn) share: a configuration built at
 * start-up by setup(), the call site their tests' policies name ("setup"),
 * and the loopback listen() that the policies' on-call:listen trigger
 * protects at (the deliberate bug, corrupt(), is prog.h's).
 *
 * Header-only, one copy per program: setup() must stay a function of its
 * own in each (never inlined into main, or the site would be main), and
 * the struct's layout is what the tests check object sizes against
 * (E2E_NAME_INLINE: the name inside the object, one 48-byte allocation;
 * otherwise a pointer to a strdup'ed name, two allocations of 16 bytes).
 * Knows nothing of pmalloc.
 */
#ifndef PMALLOC_TEST_E2E_VICTIM_H
#define PMALLOC_TEST_E2E_VICTIM_H

#include <stdlib.h>
#include <string.h>

#include "prog.h"

struct config {
#ifdef E2E_NAME_INLINE
	char name[32];
#else
	char *name;
#endif
	int port;
};

__attribute__((noinline, unused)) static struct config *setup(void)
{
	struct config *c = malloc(sizeof(*c));
	if (!c)
		exit(2);
#ifdef E2E_NAME_INLINE
	strcpy(c->name, "alice");
#else
	c->name = strdup("alice");
	if (!c->name)
		exit(2);
#endif
	c->port = 8080;
	return c;
}

/* A socket listening on loopback (an ephemeral port), kept open: the
 * policies' on-call:listen trigger.  Exits 2 when it fails. */
__attribute__((unused)) static int listen_loopback(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		perror("listen");
		exit(2);
	}
	return fd;
}

#endif
