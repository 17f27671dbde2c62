/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_sink PATH - a systemd-journald that stalls on command: binds a
 * SOCK_DGRAM unix socket at PATH (the journal's native socket, in a test's
 * own mount namespace) and reads and discards what arrives, until the line
 * "stall" comes on its standard input.  Then it stops reading and fills the
 * socket's receive queue itself, so that every later blocking send to PATH
 * waits, as it does when the real journald is stopped or busy, and prints
 * "full N" (N datagrams queued).  Prints "ready" once bound; exits when its
 * standard input closes.
 */
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
	int fd = unix_bound(argv[1], SOCK_DGRAM, &sa);
	int tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || tx < 0) {
		perror("e2e_sink");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	static char buf[1 << 16];
	char line[64];
	size_t used = 0;
	int stalled = 0;
	for (;;) {
		struct pollfd p[2] = { { .fd = 0, .events = POLLIN }, { .fd = fd, .events = stalled ? 0 : POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 2;
		}
		if (p[1].revents & POLLIN)
			(void)recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (!p[0].revents)
			continue;
		ssize_t n = read(0, line + used, sizeof(line) - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
		line[used] = '\0';
		if (!strchr(line, '\n') && used < sizeof(line) - 1)
			continue;
		if (!stalled && strncmp(line, "stall\n", 6) == 0) {
			static const char msg[] = "MESSAGE=filler\n";
			unsigned long q = 0;
			while (sendto(tx, msg, sizeof(msg) - 1, MSG_DONTWAIT, (struct sockaddr *)&sa,
				      sizeof(sa)) >= 0)
				q++;
			if (errno != EAGAIN) {
				perror("e2e_sink: fill");
				return 2;
			}
			stalled = 1;
			printf("full %lu\n", q);
			fflush(stdout);
		}
		used = 0;
	}
	unlink(argv[1]);
	return 0;
}
