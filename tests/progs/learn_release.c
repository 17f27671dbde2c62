/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * learn_release.c - learn mode gives back the pages of objects freed
 * before the trigger, and only those: a pair of objects of one context
 * (one page), the first freed (twice), the second still whole; a 5-page
 * buffer freed, its inner pages not resident any more.  Then listen(2)
 * (the trigger of learn_release.sh's policy), and a write into the
 * surviving object after it, which learning lets through and marks.
 * Prints what it saw: "pair kept", "buffer given back", "written".
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* Two objects from one call chain: one context, one page. */
__attribute__((noinline)) static void make_pair(char *p[2])
{
	for (int i = 0; i < 2; i++)
		p[i] = malloc(48);
}

__attribute__((noinline)) static char *make_buffer(size_t n)
{
	return malloc(n);
}

/* Is the page at p resident? */
static int resident(const void *p)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char v = 0;
	if (mincore((void *)((uintptr_t)p & ~(uintptr_t)(pg - 1)), (size_t)pg, &v) != 0)
		return -1;
	return v & 1;
}

int main(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *pair[2];
	make_pair(pair);
	if (!pair[0] || !pair[1])
		return 1;
	memset(pair[0], 0x11, 48);
	memset(pair[1], 0x5a, 48);
	free(pair[0]);
	free(pair[0]);         /* a double free: counted once, the page kept */
	int whole = 1;
	for (int i = 0; i < 48; i++)
		whole &= pair[1][i] == 0x5a;
	if (whole && resident(pair[1]) == 1)
		printf("pair kept\n");

	size_t n = 5 * (size_t)pg;
	char *buf = make_buffer(n);
	if (!buf)
		return 1;
	memset(buf, 0x77, n);
	char *inner = (char *)(((uintptr_t)buf + (uintptr_t)pg) & ~(uintptr_t)(pg - 1));
	free(buf);
	if (resident(inner) == 0 && resident(inner + pg) == 0)
		printf("buffer given back\n");

	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 1) != 0)
		return 1;
	pair[1][0] = 1;        /* after the trigger: learning lets it through */
	printf("written\n");
	fflush(stdout);
	close(s);
	return 0;
}
