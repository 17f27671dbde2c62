/*
 * liblearn_inject.c - the attacker, for the server tests of learn mode:
 * preloaded before the shim, it counts the server's epoll_wait calls and
 * at call number $LEARN_INJECT_AFTER writes one byte at the start of the
 * first read-only pool mapping it finds (an anonymous read-only mapping
 * that pmalloc_is_protected() calls protected): a write into whatever
 * object of a proposed site lies there.  Without the variable, or with no
 * protected memory, it does nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

static long calls, inject_after;

/* Read at load: servers clear their workers' environment (nginx). */
__attribute__((constructor)) static void read_env(void)
{
	const char *after = getenv("LEARN_INJECT_AFTER");
	inject_after = after ? atol(after) : 0;
}

static void inject(void)
{
	int (*is_protected)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "pmalloc_is_protected");
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	if (!f || !is_protected) {
		if (f)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[8];
		unsigned int maj, min;
		unsigned long ino;
		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &maj, &min, &ino) != 7)
			continue;
		if (strcmp(perms, "r--p") != 0 || ino != 0 || !is_protected((const void *)lo))
			continue;
		fclose(f);
		fprintf(stderr, "learn_inject: writing at %#lx\n", lo);
		*(volatile char *)lo = 'X';
		return;
	}
	fclose(f);
}

int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout)
{
	static int (*real)(int, struct epoll_event *, int, int);
	if (!real)
		real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
	if (inject_after && ++calls == inject_after)
		inject();
	return real(epfd, ev, n, timeout);
}
