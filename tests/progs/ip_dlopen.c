/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_dlopen - an allocation site in a library loaded with dlopen after
 * start-up.  The plugin's plugin_init() builds its configuration; the
 * program and the plugin's plugin_scratch() allocate too; listen() ends
 * start-up.  Where each object went is printed (pmalloc_is_protected).
 *
 *   ip_dlopen PLUGIN.so          report and exit 0
 *   ip_dlopen PLUGIN.so write    then write into the plugin's name
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

struct plugin_conf {
	char *name;
	int *table;
	size_t n;
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ip_dlopen PLUGIN.so [write]\n");
		return 2;
	}
	const char *mode = argc > 2 ? argv[2] : "";
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "ip_dlopen: %s\n", dlerror());
		return 2;
	}
	struct plugin_conf *(*init)(const char *) = (struct plugin_conf *(*)(const char *))dlsym(h, "plugin_init");
	char *(*scratch)(size_t) = (char *(*)(size_t))dlsym(h, "plugin_scratch");
	if (!init || !scratch)
		return 2;
	char name[] = "alpha";
	struct plugin_conf *c = init(name);
	char *s = scratch(32);
	char *mine = malloc(32);
	if (!c || !s || !mine)
		return 3;
	listen_once();
	printf("plugin_init: struct %d, name %d, table %d\n", is_protected(c), is_protected(c->name),
	       is_protected(c->table));
	printf("plugin_scratch %d, main %d\n", is_protected(s), is_protected(mine));
	printf("name %s, table[3] %d\n", c->name, c->table[3]);
	s[0] = mine[0] = 'w';
	fflush(stdout);
	if (strcmp(mode, "write") == 0)
		corrupt(c->name + 1, 'X');
	printf("name is now %s\n", c->name);
	return 0;
}
