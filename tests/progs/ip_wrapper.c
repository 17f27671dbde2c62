/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_wrapper - an allocation wrapper looked through to its caller.
 *
 * xmalloc() is named as a wrapper, load_config() as a site: what
 * load_config() gets from xmalloc() goes to the pool; what
 * handle_request() gets from the same xmalloc() stays on the heap.
 *
 *   ip_wrapper                  report and exit 0
 *   ip_wrapper write-request    write the request object (allowed)
 *   ip_wrapper write-config     write the config object (dies when protected)
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

void *xmalloc(size_t n);

__attribute__((noinline)) void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		perror("xmalloc");
		exit(3);
	}
	return p;
}

static char *load_config(void)
{
	char *c = xmalloc(40);
	strcpy(c, "config: port=8080");
	return c;
}

static char *handle_request(void)
{
	char *r = xmalloc(40);
	strcpy(r, "GET /");
	return r;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char *config = load_config();
	char *request = handle_request();
	listen_once();
	char *late = handle_request();
	printf("config %d, request %d, late request %d\n", is_protected(config), is_protected(request),
	       is_protected(late));
	fflush(stdout);
	if (strcmp(mode, "write-request") == 0)
		corrupt(request + 1, 'P');
	else if (strcmp(mode, "write-config") == 0)
		corrupt(config + 8, 'X');
	printf("%s | %s\n", config, request);
	free(late);
	free(request);
	free(config);
	return 0;
}
