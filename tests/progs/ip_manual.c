/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_manual - the manual trigger: the program protects its pool itself
 * with pmalloc_protect_named() (found with dlsym, as a program that only
 * optionally runs under the shim would), and an unknown name is ENOENT.
 *
 *   ip_manual          report and exit 0
 *   ip_manual write    then write into the key
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

static char *make_key(void)
{
	char *k = malloc(64);
	if (!k)
		exit(3);
	memset(k, 'k', 63);
	k[63] = '\0';
	return k;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int (*protect_named)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "pmalloc_protect_named");
	if (!protect_named) {
		printf("no shim\n");
		return 1;
	}
	char *k = make_key();
	printf("before: protected %d\n", is_protected(k));
	errno = 0;
	int r = protect_named("keys");
	printf("pmalloc_protect_named(\"keys\") = %d; protected %d\n", r, is_protected(k));
	errno = 0;
	r = protect_named("no-such-pool");
	printf("pmalloc_protect_named(\"no-such-pool\") = %d, errno %s\n", r,
	       errno == ENOENT ? "ENOENT" : strerror(errno));
	r = protect_named("keys");
	printf("again, nothing new: %d\n", r);
	char *k2 = make_key();
	k2[0] = 'K';
	printf("new key protected %d\n", is_protected(k2));
	fflush(stdout);
	if (strcmp(mode, "write") == 0)
		corrupt(k + 40, 'X');
	printf("done\n");
	return 0;
}
