/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libip_plugin - a plugin loaded with dlopen by ip_dlopen.  plugin_init()
 * is the allocation site a policy names ("libip_plugin.so*:plugin_init");
 * plugin_scratch() is not named.  Built -O1 as a library would be; no
 * call is in tail position, so each allocator call returns here.
 */
#include <stdlib.h>
#include <string.h>

struct plugin_conf {
	char *name;
	int *table;
	size_t n;
};

struct plugin_conf *plugin_init(const char *name);
char *plugin_scratch(size_t n);

struct plugin_conf *plugin_init(const char *name)
{
	struct plugin_conf *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	c->name = strdup(name);
	c->n = 8;
	c->table = calloc(c->n, sizeof(int));
	if (!c->name || !c->table) {
		free(c->name);
		free(c->table);
		free(c);
		return NULL;
	}
	for (size_t i = 0; i < c->n; i++)
		c->table[i] = (int)(i * i);
	return c;
}

char *plugin_scratch(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 's', n);
	return p;
}
