/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_fork - an unmodified-style server that forks a worker after listen():
 * a static setup() builds its configuration with malloc(), listen() (the
 * policy's trigger) makes it read-only, then fork(); the CHILD starts as a
 * worker does, writing the configuration it inherited (its port), prints
 * "child: started, protected N" (pmalloc_is_protected() before that write:
 * 0 under the shim, -1 without), listens itself (its own trigger), prints
 * "child: protected N" again, then writes to the configuration, as a bug in
 * a worker would.  The parent prints
 * "parent=PID child=PID", then the child's fate ("child: signal N" or
 * "child: exit N") and its own configuration (untouched), and exits 0.
 * Knows nothing of pmalloc.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog.h"

struct config {
	char name[32];
	int port;
};

static struct config *setup(void)
{
	struct config *c = malloc(sizeof(*c));
	if (!c)
		exit(2);
	strcpy(c->name, "alice");
	c->port = 0;
	return c;
}

int main(void)
{
	struct config *c = setup();
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		perror("listen");
		return 2;
	}
	fflush(stdout);
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 2;
	}
	if (child == 0) {
		int before = is_protected(c);
		c->port = 1;                /* the worker's start-up write */
		printf("child: started, protected %d\n", before);
		fflush(stdout);
		listen_once();
		printf("child: protected %d\n", is_protected(c));
		fflush(stdout);
		corrupt(c->name, 'm');
		_exit(0);
	}
	printf("parent=%d child=%d\n", (int)getpid(), (int)child);
	int st;
	if (waitpid(child, &st, 0) < 0) {
		perror("waitpid");
		return 2;
	}
	if (WIFSIGNALED(st))
		printf("child: signal %d\n", WTERMSIG(st));
	else
		printf("child: exit %d\n", WEXITSTATUS(st));
	printf("parent: name \"%s\"\n", c->name);
	close(fd);
	return 0;
}
