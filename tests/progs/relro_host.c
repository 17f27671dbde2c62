/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relro_host - a full-RELRO program (linked -z relro -z now, see the
 * Makefile) that makes the calls a server makes (malloc, free, poll,
 * sigaction, read), says "ready" and waits on stdin: relro.sh reads its
 * memory meanwhile.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

int main(void)
{
	char *p = malloc(64);
	if (!p)
		return 1;
	strcpy(p, "config");
	free(p);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	poll(NULL, 0, 0);
	printf("ready\n");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
