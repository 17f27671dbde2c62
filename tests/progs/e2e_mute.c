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

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path))
		return 2;
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
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
