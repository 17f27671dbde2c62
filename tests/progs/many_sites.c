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
/* M(a, b, c) for every c, then for every b: the functions and their table. */
#define EACH10(M, a, b) M(a, b, 0) M(a, b, 1) M(a, b, 2) M(a, b, 3) M(a, b, 4) \
			M(a, b, 5) M(a, b, 6) M(a, b, 7) M(a, b, 8) M(a, b, 9)
#define EACH100(M, a)                                                                   \
	EACH10(M, a, 0) EACH10(M, a, 1) EACH10(M, a, 2) EACH10(M, a, 3) EACH10(M, a, 4) \
	EACH10(M, a, 5) EACH10(M, a, 6) EACH10(M, a, 7) EACH10(M, a, 8) EACH10(M, a, 9)
EACH100(SITE, 0)
EACH100(SITE, 1)
EACH100(SITE, 2)

#define PTR(a, b, c) site_##a##b##c,
static void *(*const sites[])(size_t) = { EACH100(PTR, 0) EACH100(PTR, 1) EACH100(PTR, 2) };

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
