/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wire_notify.c - stands in for systemd's NOTIFY_SOCKET in the daemon
 * tests: binds a datagram socket at PATH and prints each sd_notify
 * message on one line (newlines shown as ' | ') until STOPPING=1 arrives
 * or SECONDS pass.
 *
 *   wire_notify PATH SECONDS
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[4096];
	time_t end;
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: wire_notify PATH SECONDS\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	end = time(NULL) + atoi(argv[2]);
	while (time(NULL) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *c = buf; *c; c++)
			if (*c == '\n')
				*c = '|';
		printf("%s\n", buf);
		if (strstr(buf, "STOPPING=1"))
			break;
	}
	unlink(argv[1]);
	return 0;
}
