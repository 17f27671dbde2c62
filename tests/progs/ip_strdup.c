/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_strdup - strdup() and strndup() charged to the function that called
 * them, not to libc: load_names() is the site, main() is not.
 *
 *   ip_strdup                  report and exit 0
 *   ip_strdup write-strdup     write the strdup copy (dies when protected)
 *   ip_strdup write-strndup    write the strndup copy's terminator (likewise)
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

/* Not const: the compiler must not fold the copies into malloc + memcpy. */
static char admin[] = "administrator";
static char endpoint[] = "localhost:8080";

static void load_names(char **name, char **host)
{
	*name = strdup(admin);
	*host = strndup(endpoint, 9);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char *name, *host;
	load_names(&name, &host);
	char *mine = strdup(admin);
	char *mine_n = strndup(endpoint, 4);
	if (!name || !host || !mine || !mine_n)
		return 3;
	listen_once();
	printf("strdup %d, strndup %d, main strdup %d, main strndup %d\n", is_protected(name),
	       is_protected(host), is_protected(mine), is_protected(mine_n));
	printf("\"%s\" \"%s\" (%zu) \"%s\" \"%s\"\n", name, host, strlen(host), mine, mine_n);
	mine[0] = 'A';
	mine_n[0] = 'L';
	fflush(stdout);
	if (strcmp(mode, "write-strdup") == 0)
		corrupt(name + 2, 'X');
	else if (strcmp(mode, "write-strndup") == 0)
		corrupt(host + 9, 'X');
	printf("done\n");
	return 0;
}
