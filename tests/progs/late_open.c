/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * late_open - a preloaded library's file replaced before the library first
 * allocates, as a package upgrade would: argv[1] is renamed over argv[2]
 * (the path the library was loaded from), then its plugin_init()
 * (libip_plugin's, found with dlsym) allocates.
 *
 *   late_open NEW PATH    prints "plugin_init ok" and exits 0
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	if (rename(argv[1], argv[2]) < 0) {
		perror("late_open: rename");
		return 2;
	}
	void *(*init)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "plugin_init");
	if (!init)
		return 2;
	printf("plugin_init %s\n", init("late") ? "ok" : "failed");
	return 0;
}
