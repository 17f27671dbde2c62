/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * many_sites - a program with 300 allocating functions, site_000 to
 * site_299, each calling malloc() once: a policy naming them all has more
 * rules by name for this one object than the shim applies, and the tests
 * see how the rest are reported (and what pmallocctl propose writes for
 * it).  Calls each once, listens on loopback (a policy's trigger), prints
 * "ready", then holds until its standard input ends; never writes what it
 * allocated.  Knows nothing of pmalloc.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* site_ABC(n): malloc(n + ABC), so no two functions are the same code. */
#define SITE(a, b, c)                                                                                   \
	__attribute__((noinline)) void *site_##a##b##c(size_t n);                                      \
	__attribute__((noinline)) void *site_##a##b##c(size_t n) { return malloc(n + (a) * 100 + (b) * 10 + (c)); }
#define SITES10(a, b)                                                                                   \
	SITE(a, b, 0) SITE(a, b, 1) SITE(a, b, 2) SITE(a, b, 3) SITE(a, b, 4)                           \
	SITE(a, b, 5) SITE(a, b, 6) SITE(a, b, 7) SITE(a, b, 8) SITE(a, b, 9)
#define SITES100(a)                                                                                     \
	SITES10(a, 0) SITES10(a, 1) SITES10(a, 2) SITES10(a, 3) SITES10(a, 4)                           \
	SITES10(a, 5) SITES10(a, 6) SITES10(a, 7) SITES10(a, 8) SITES10(a, 9)
SITES100(0)
SITES100(1)
SITES100(2)

#define PTR(a, b, c) site_##a##b##c,
#define PTRS10(a, b)                                                                                    \
	PTR(a, b, 0) PTR(a, b, 1) PTR(a, b, 2) PTR(a, b, 3) PTR(a, b, 4)                                \
	PTR(a, b, 5) PTR(a, b, 6) PTR(a, b, 7) PTR(a, b, 8) PTR(a, b, 9)
#define PTRS100(a)                                                                                      \
	PTRS10(a, 0) PTRS10(a, 1) PTRS10(a, 2) PTRS10(a, 3) PTRS10(a, 4)                                \
	PTRS10(a, 5) PTRS10(a, 6) PTRS10(a, 7) PTRS10(a, 8) PTRS10(a, 9)
static void *(*const sites[])(size_t) = { PTRS100(0) PTRS100(1) PTRS100(2) };

int main(void)
{
	char buf[64];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s;

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (!sites[i](16))
			return 2;
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
		return 3;
	printf("ready\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
