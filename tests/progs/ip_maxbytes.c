/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_maxbytes - a pool capped by max_bytes: cache_entry() allocates a
 * hundred 1000-byte entries, more than the cap holds; those past the cap
 * come from the heap and the program keeps working with all of them.
 * Prints how many were protected by listen().
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

#define N 100
#define SIZE 1000

static char *cache_entry(int i)
{
	char *p = malloc(SIZE);
	if (!p)
		exit(3);
	memset(p, i, SIZE);
	return p;
}

int main(void)
{
	char *e[N];
	for (int i = 0; i < N; i++)
		e[i] = cache_entry(i);
	listen_once();
	int prot = 0, first_heap = -1, order_ok = 1, intact = 1;
	for (int i = 0; i < N; i++) {
		if (is_protected(e[i]) == 1) {
			prot++;
			if (first_heap >= 0)
				order_ok = 0;     /* a pool object after a heap one */
		} else {
			if (first_heap < 0)
				first_heap = i;
			memset(e[i], 0x7f, SIZE);   /* heap entries stay writable */
		}
		if (e[i][SIZE - 1] != (is_protected(e[i]) == 1 ? (char)i : 0x7f))
			intact = 0;
	}
	printf("pool entries %d (%d bytes), heap entries %d; pool first: %s; intact: %s\n", prot,
	       prot * SIZE, N - prot, order_ok ? "yes" : "no", intact ? "yes" : "no");
	for (int i = 0; i < N; i++)
		free(e[i]);
	char *late = cache_entry(1);
	late[0] = 1;
	printf("late entry protected %d\n", is_protected(late));
	free(late);
	return 0;
}
