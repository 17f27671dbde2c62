/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_hold - an unmodified-style server driven from its standard input, so
 * a test decides when things happen (no sleeps): a static setup() builds
 * its configuration with malloc() and strdup(), listen() (the policy's
 * trigger) makes it read-only, it prints "listening", then runs one command
 * per line:
 *   write   overwrite the configuration's name, as a heap bug would
 *   write N the same, N times (in audit mode, each is a violation)
 *   print   print the name
 *   fork    fork a child that exits 0 at once (exit(), so its destructors
 *           run); prints "forked PID: exit N"
 *   exit    exit 0 (so does end of input)
 * Knows nothing of pmalloc.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_victim.h"

int main(void)
{
	struct config *c = setup();
	int fd = listen_loopback();
	printf("listening\n");
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "write") == 0) {
			corrupt(c->name, 'm');
			printf("wrote: name \"%s\"\n", c->name);
		} else if (strncmp(line, "write ", 6) == 0) {
			long n = atol(line + 6);
			for (long i = 0; i < n; i++)
				corrupt(c->name, (char)('a' + i % 26));
			printf("wrote %ld times: name \"%s\"\n", n, c->name);
		} else if (strcmp(line, "fork") == 0) {
			fflush(stdout);
			pid_t child = fork();
			if (child == 0)
				exit(0);
			int status = 0;
			waitpid(child, &status, 0);
			printf("forked %d: exit %d\n", (int)child, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		} else if (strcmp(line, "print") == 0) {
			printf("name \"%s\"\n", c->name);
		} else if (strcmp(line, "exit") == 0) {
			break;
		} else {
			printf("unknown command \"%s\"\n", line);
		}
		fflush(stdout);
	}
	close(fd);
	return 0;
}
