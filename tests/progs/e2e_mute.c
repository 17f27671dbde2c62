/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_mute PATH - a hung pmallocd: binds and listens on a SOCK_SEQPACKET
 * unix socket at PATH, accepts every client and never answers (the
 * connections are kept open).  Prints "listening" once ready and
 * "accepted N" after each client; exits when its standard input closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "prog.h"

int main(int argc, char **argv)
{
	struct sockaddr_un sa;
	if (argc != 2)
		return 2;
	int fd = unix_bound(argv[1], SOCK_SEQPACKET, &sa);
	if (fd < 0 || listen(fd, 64) < 0) {
		perror("e2e_mute");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	unsigned long n = 0;
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = 0, .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 2;
		if (p[1].revents) {
			char c;
			if (read(0, &c, 1) <= 0)
				break;
		}
		if (p[0].revents & POLLIN) {
			int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				printf("accepted %lu\n", ++n);
				fflush(stdout);
			}
		}
	}
	unlink(argv[1]);
	return 0;
}
