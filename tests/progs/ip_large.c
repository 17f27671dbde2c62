/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_large - objects larger than a pool's first span but smaller than
 * what gets a span of its own (here 100000 bytes, and 70000 bytes with
 * 64 KiB alignment) from a site: each must be wholly writable while
 * initialising, and none may overlap another.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

static char *make_table(size_t n)
{
	char *p = malloc(n);
	if (!p)
		exit(3);
	printf("table of %zu bytes\n", n);
	fflush(stdout);
	memset(p, (int)(n & 0x7f), n);
	return p;
}

static char *make_aligned_table(size_t align, size_t n)
{
	char *p = aligned_alloc(align, n);
	if (!p)
		exit(3);
	printf("table of %zu bytes aligned to %zu: %s\n", n, align,
	       (uintptr_t)p % align == 0 ? "aligned" : "NOT ALIGNED");
	fflush(stdout);
	memset(p, (int)(n & 0x7f), n);
	return p;
}

static int intact(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)(n & 0x7f))
			return 0;
	return 1;
}

int main(void)
{
	size_t n1 = 100000, n2 = 70000, n3 = 200000;
	char *a = make_table(n1);
	char *b = make_aligned_table(65536, n2);
	char *c = make_table(n3);
	listen_once();
	printf("intact: %d %d %d\n", intact(a, n1), intact(b, n2), intact(c, n3));
	printf("protected: %d %d %d\n", is_protected(a), is_protected(b + n2 - 1), is_protected(c + n3 - 1));
	return 0;
}
