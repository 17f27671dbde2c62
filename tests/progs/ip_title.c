/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_title - a program that retitles itself as setproctitle() does (nginx,
 * postgres, sshd ...): the argument area, argv[0] included, is rewritten in
 * place, and with it what program_invocation_short_name points to.  A write
 * into its protected secret afterwards must still be reported as this
 * program's (ip_title+0x...), not the title's.  make_secret() is the site,
 * listen() the trigger.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

STRING_SITE(make_secret, 48, "the secret")

int main(int argc, char **argv)
{
	(void)argc;
	char *s = make_secret();
	listen_once();
	/* setproctitle: "worker process nginx.conf ..." over argv[0]. */
	static const char title[] = "worker process nginx.conf ";
	size_t room = strlen(argv[0]);
	for (size_t i = 0; i < room; i++)
		argv[0][i] = title[i % (sizeof(title) - 1)];
	printf("retitled: %s\n", program_invocation_short_name);
	fflush(stdout);
	corrupt(s + 7, 'X');
	printf("not reached\n");
	return 0;
}
