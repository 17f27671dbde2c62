/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_calloc - calloc() from a site returns zeroed pool memory, also right
 * after the site dirtied the pool, for small, page-sized and dedicated-span
 * sizes; n * size overflow is ENOMEM.  Prints one line per check.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

static void *cfg_dirty(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 0xa5, n);
	return p;
}

static void *cfg_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

static int zeroed(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(void)
{
	static const size_t sizes[][2] = { { 1, 1 }, { 3, 7 }, { 100, 40 }, { 1, 4096 }, { 1, 300000 } };
	void *objs[sizeof(sizes) / sizeof(sizes[0])];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		free(cfg_dirty(64 * (i + 1)));   /* dirty the pool right before (free keeps it) */
		unsigned char *p = cfg_calloc(sizes[i][0], sizes[i][1]);
		objs[i] = p;
		size_t n = sizes[i][0] * sizes[i][1];
		printf("calloc(%zu, %zu): %s\n", sizes[i][0], sizes[i][1],
		       !p ? "NULL" : zeroed(p, n) ? "zeroed" : "NOT ZEROED");
		if (p)
			memset(p, 0x5a, n);       /* writable while initialising */
	}
	errno = 0;
	void *ovf = cfg_calloc(SIZE_MAX / 2, 4);
	printf("calloc overflow: %s, errno %s\n", ovf ? "not NULL" : "NULL", errno == ENOMEM ? "ENOMEM" : "other");
	listen_once();
	printf("protected:");
	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
		printf(" %d", is_protected(objs[i]));
	printf("\n");
	return 0;
}
