/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_reload - plugins unloaded and others loaded in their place, as PAM,
 * NSS or a server's module reload do: each library given is dlopen'ed, its
 * plugin_init() called, the pool protected (pmalloc_protect_named, the
 * manual trigger), and the library dlclose'd.  Prints, per library, whether
 * it landed where the previous one was and whether its objects went to the
 * pool.
 *
 *   ip_reload LIB.so...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "prog.h"

struct plugin_conf {
	char *name;
	int *table;
	size_t n;
};

int main(int argc, char **argv)
{
	int (*protect_named)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "pmalloc_protect_named");
	if (!protect_named) {
		printf("no shim\n");
		return 1;
	}
	void *last_base = NULL;
	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			printf("%s\n", dlerror());
			return 2;
		}
		struct plugin_conf *(*init)(const char *) = (struct plugin_conf *(*)(const char *))dlsym(h, "plugin_init");
		Dl_info di;
		if (!init || !dladdr((void *)init, &di))
			return 2;
		char name[] = "module";
		struct plugin_conf *c = init(name);
		if (!c)
			return 3;
		protect_named("plugin");
		const char *base = strrchr(argv[i], '/');
		printf("%s%s: objects protected %d %d %d\n", base ? base + 1 : argv[i],
		       i == 1 ? "" : di.dli_fbase == last_base ? " (same address)" : " (new address)",
		       is_protected(c), is_protected(c->name), is_protected(c->table));
		last_base = di.dli_fbase;
		dlclose(h);
	}
	return 0;
}
