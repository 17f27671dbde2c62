/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_worker - a master with no event loop and a forked worker with one:
 * the master builds its configuration in setup() (malloc, strdup), forks a
 * worker that polls every 20 ms (as a server's worker would) and prints
 * "worker protected" once its copy of the configuration becomes read-only,
 * then prints "ready worker=PID" and reads commands from standard input
 * with a plain read(2), which the shim does not interpose:
 *   state   print "protected=N" (the master's copy)
 *   write   overwrite the master's configuration, as a heap bug would
 *   exit    stop the worker, exit 0 (so does end of input)
 * The worker exits when its master is gone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_victim.h"


static void worker(const struct config *c, pid_t master)
{
	int said = 0;
	while (getppid() == master) {
		poll(NULL, 0, 20);
		if (!said && is_protected(c->name) == 1) {
			printf("worker protected\n");
			fflush(stdout);
			said = 1;
		}
	}
	_exit(0);
}

int main(void)
{
	struct config *c = setup();
	pid_t master = getpid(), w;
	char line[64];
	size_t have = 0;

	fflush(stdout);
	w = fork();
	if (w < 0)
		return 3;
	if (w == 0)
		worker(c, master);
	printf("ready worker=%d\n", (int)w);
	fflush(stdout);
	for (;;) {
		ssize_t n = read(0, line + have, sizeof(line) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		line[have] = '\0';
		char *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if (strcmp(line, "state") == 0)
				printf("protected=%d\n", is_protected(c->name));
			else if (strcmp(line, "write") == 0)
				corrupt(c->name, 'm');
			else if (strcmp(line, "exit") == 0)
				goto out;
			fflush(stdout);
			have -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, have + 1);
		}
	}
out:
	kill(w, SIGTERM);
	waitpid(w, NULL, 0);
	return 0;
}
