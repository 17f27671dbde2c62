/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e_loop - an unmodified-style server whose event loop is poll(): a
 * static setup() builds its configuration with malloc() and strdup(),
 * prints "ready", then serves commands from standard input, one per line,
 * polling with a 50 ms timeout in between (as servers poll their sockets):
 *   state   print "protected=N" (N from pmalloc_is_protected, found with
 *           dlsym so the program does not need the shim to run)
 *   write   overwrite the configuration's name, as a heap bug would
 *   exit    exit 0 (so does end of input)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e_victim.h"


int main(void)
{
	struct config *c = setup();
	char line[64];
	size_t have = 0;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		ssize_t n = read(0, line + have, sizeof(line) - 1 - have);
		if (n <= 0)
			return 0;
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
				return 0;
			fflush(stdout);
			have -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, have + 1);
		}
	}
}
