/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_after - the after:DURATION trigger: make_token()'s object is
 * writable right after start-up, and read-only once the delay has passed.
 * The program waits by polling pmalloc_is_protected() (bounded: 5 s).
 *
 *   ip_after          report and exit 0 (exit 1 when never protected)
 *   ip_after write    then write into the token
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prog.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

STRING_SITE(make_token, 24, "token-abcdef")

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double start = now_ms();
	char *t = make_token();
	int before = is_protected(t);
	t[0] = 'T';                           /* still initialising: allowed */
	printf("at start: protected %d, write ok\n", before);
	fflush(stdout);
	int prot = 0;
	double waited = 0;
	while (!(prot = is_protected(t) == 1) && (waited = now_ms() - start) < 5000) {
		struct timespec pause = { 0, 1000000 };
		nanosleep(&pause, NULL);
	}
	waited = now_ms() - start;
	if (!prot) {
		printf("never protected\n");
		return 1;
	}
	printf("protected after the delay (%s)\n", waited >= 150 ? "not early" : "TOO EARLY");
	fflush(stdout);
	if (strcmp(mode, "write") == 0)
		corrupt(t + 3, 'X');
	printf("token %s\n", t);
	return 0;
}
