/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prog.h - what the test programs run under the shim share: asking the shim
 * whether an address is protected, and calling the "listen" trigger.
 *
 * Header-only: each program is one .c file.  Never allocates, so nothing here
 * is ever a call site a test's policy names.
 */
#ifndef PMALLOC_TEST_PROG_H
#define PMALLOC_TEST_PROG_H

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* pmalloc_is_protected(p), looked up at run time: 1, 0, or -1 when the shim
 * is not preloaded (the programs also run without it). */
static inline int is_protected(const void *p)
{
	int (*fn)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "pmalloc_is_protected");
	return fn ? fn(p) : -1;
}

/* One listen() on loopback: the call the tests' on-call:listen triggers
 * protect at, as a server's start-up ends.  Exits 2 when it fails. */
static inline void listen_once(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0) {
		perror("listen on loopback");
		exit(2);
	}
	close(fd);
}

#endif
