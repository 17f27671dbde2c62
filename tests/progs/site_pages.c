/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * site_pages - what the shim's call-site table costs a program: 64
 * functions, each a call site of malloc that its policy leaves to the heap,
 * each allocating (and freeing) once, and the page faults they took.
 *
 *   site_pages     "main", then "64 sites: N page faults" (minor faults,
 *                  getrusage), the sites' first allocations only: one
 *                  more site allocates first, so that reading the
 *                  program's symbols (at its first allocation) is not
 *                  counted
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "prog.h"

/* Distinct return addresses: one function each, never inlined. */
#define SITE(n) \
	static __attribute__((noinline)) void *site_##n(void) { return malloc(16 + (n)); }
#define SITES8(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
SITES8(1) SITES8(2) SITES8(3) SITES8(4) SITES8(5) SITES8(6) SITES8(7) SITES8(8) SITE(0)
#define CALL8(a) site_##a##0, site_##a##1, site_##a##2, site_##a##3, site_##a##4, site_##a##5, site_##a##6, \
		 site_##a##7
static void *(*const sites[])(void) = { CALL8(1), CALL8(2), CALL8(3), CALL8(4),
					CALL8(5), CALL8(6), CALL8(7), CALL8(8) };

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

int main(void)
{
	/* Unbuffered: the first write marks main's start in a trace. */
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("main\n");
	free(site_0());
	long before = minor_faults();
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		free(sites[i]());
	long faults = minor_faults() - before;
	printf("%zu sites: %ld page faults\n", sizeof(sites) / sizeof(sites[0]), faults);
	return 0;
}
