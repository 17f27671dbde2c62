/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_fork - an unmodified-style server that forks a worker after listen():
 * a static setup() builds its configuration with malloc(), listen() (the
 * policy's trigger) makes it read-only, then fork(); the CHILD writes to the
 * configuration, as a bug in a worker would.  The parent prints
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

#define E2E_NAME_INLINE
#include "e2e_victim.h"

int main(void)
{
	struct config *c = setup();
	int fd = listen_loopback();
	fflush(stdout);
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 2;
	}
	if (child == 0) {
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
