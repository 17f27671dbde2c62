/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_respawn - a server whose worker dies at every respawn, for a bounded
 * time: setup() builds its configuration with malloc(), listen() (the
 * policy's trigger) makes it read-only, then for SECONDS it forks a worker
 * that listens (its own trigger) and writes the configuration (and dies by
 * SIGSEGV under an enforce policy) and forks the next one as soon as it is gone.  With "exec", each
 * worker execs this program again (argument "worker"), which sets up,
 * listens and writes on its own: a new process with its own hand-out.
 * Prints "workers=N killed=K" (K: died by SIGSEGV) and exits 0.
 * Knows nothing of pmalloc.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define E2E_NAME_INLINE
#include "e2e_victim.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct config *c;
	double end;
	long workers = 0, killed = 0;
	int exec_mode, fd;

	if (argc == 2 && strcmp(argv[1], "worker") == 0) {
		c = setup();
		fd = listen_loopback();
		corrupt(c->name, 'm');
		close(fd);
		return 0;
	}
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "exec") != 0)) {
		fprintf(stderr, "usage: e2e_respawn SECONDS [exec]\n");
		return 2;
	}
	exec_mode = argc == 3;
	end = now() + atof(argv[1]);
	c = setup();
	fd = listen_loopback();
	while (now() < end) {
		pid_t child;
		int st;

		fflush(stdout);
		child = fork();
		if (child < 0) {
			perror("fork");
			return 2;
		}
		if (child == 0) {
			if (exec_mode) {
				execl("/proc/self/exe", argv[0], "worker", (char *)NULL);
				_exit(3);
			}
			/* A worker starts (its own listen: its own trigger),
			 * then writes what it inherited. */
			listen_once();
			corrupt(c->name, 'm');
			_exit(0);
		}
		workers++;
		if (waitpid(child, &st, 0) < 0) {
			perror("waitpid");
			return 2;
		}
		killed += WIFSIGNALED(st) && WTERMSIG(st) == 11;
	}
	printf("workers=%ld killed=%ld\n", workers, killed);
	close(fd);
	return 0;
}
