/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kwrite_wait - a read(2) begun before the trigger, into a buffer that
 * make_config() (the site) allocated: another thread blocks in it (the
 * buffer not yet protected: the interposed read's fast path), listen()
 * (the trigger) then protects the buffer, and the data comes after.  The
 * kernel's copy then fails, and the shim makes the call again through its
 * bounce buffer: in audit mode it succeeds as without the shim (and is
 * reported), in enforce mode it fails with EFAULT and the data stays
 * unread.  Prints the read's result and what the buffer holds.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

static char *buf;
static int pfd[2];
static ssize_t got;
static int got_errno;

static void *reader(void *arg)
{
	(void)arg;
	got = read(pfd[0], buf, 32);
	got_errno = errno;
	return NULL;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	buf = make_config(64);
	pthread_t t;
	if (pipe(pfd) < 0 || pthread_create(&t, NULL, reader, NULL) != 0)
		return 2;
	usleep(200000);         /* the reader in its read (or not yet: the same result) */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0)
		return 2;
	if (write(pfd[1], "late data", 9) != 9)
		return 2;
	pthread_join(t, NULL);
	if (got < 0)
		printf("read: -1 %s\n", strerror(got_errno));
	else
		printf("read: %zd\n", got);
	printf("buf: %.9s\n", buf);
	return 0;
}
