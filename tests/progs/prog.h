/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prog.h - what the test programs run under the shim share: asking the shim
 * whether an address is protected, calling the "listen" trigger, the
 * deliberate bug (corrupt), the string-making call sites their policies name
 * (STRING_SITE), the kernel-write tests' buffers (make_config), and the unix socket the fake daemons and journals
 * (e2e_mute, e2e_sink) bind.
 *
 * Header-only: each program is one .c file.  Allocates only in the sites a
 * program defines with STRING_SITE, each a function of its own in that
 * program, named as the tests' policies name it.
 */
#ifndef PMALLOC_TEST_PROG_H
#define PMALLOC_TEST_PROG_H

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* pmalloc_is_protected(p), looked up at run time: 1, 0, or -1 when the shim
 * is not preloaded (the programs also run without it). */
static inline int is_protected(const void *p)
{
	int (*fn)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "pmalloc_is_protected");
	return fn ? fn(p) : -1;
}

/* A zeroed buffer of n bytes from the call site make_config, which the
 * kernel-write tests' policies name (exits 3 when malloc fails). */
__attribute__((noinline, unused)) static void *make_config(size_t n)
{
	void *p = malloc(n);
	if (!p)
		exit(3);
	memset(p, 0, n);
	return p;
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

/* The deliberate bug: a store through a volatile pointer, so the compiler
 * keeps it, in a function of its own, so a fault's location names it. */
__attribute__((noinline, unused)) static void corrupt(volatile char *where, char what)
{
	*where = what;
}

/* STRING_SITE(FN, SIZE, TEXT): a static function FN() that allocates SIZE
 * bytes with malloc() and copies TEXT in (exit 3 when malloc fails): a call
 * site of its own, found by its name, whose object size the tests check. */
#define STRING_SITE(fn, size, text)                                       \
	__attribute__((noinline)) static char *fn(void)                   \
	{                                                                 \
		char *s_ = malloc(size);                                  \
		if (!s_)                                                  \
			exit(3);                                          \
		strcpy(s_, text);                                         \
		return s_;                                                \
	}

/* A unix socket of TYPE (| SOCK_CLOEXEC) bound at PATH, where an old one is
 * removed first; its address in *SA.  -1 (with errno) when it cannot be
 * made, or PATH is too long. */
static inline int unix_bound(const char *path, int type, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa->sun_path))
		return -1;
	strcpy(sa->sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

#endif
