/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * liblearn_inject.c - the attacker, for the server tests of learn mode:
 * preloaded before the shim, it counts the server's epoll_wait calls and
 * at call number $LEARN_INJECT_AFTER writes one byte at the start of the
 * first read-only pool mapping it finds (an anonymous read-only mapping
 * that pmalloc_is_protected() calls protected): a write into whatever
 * object of a proposed site lies there.  With $LEARN_INJECT_NEEDLE, it
 * writes instead at the first place in protected pool memory that holds
 * that text read backwards (so that the variable itself, which the server
 * may copy, does not match): a value of the server's configuration, the
 * proof that what the server keeps of its configuration is protected.
 * Without the variable, or with no protected memory (or no needle in it),
 * it says so on stderr and writes nothing.  A process that chroots (a
 * haproxy worker) has no /proc inside: its maps are opened at its chroot
 * call, before the real one, and read from that descriptor.  With
 * $LEARN_INJECT_AFTER_S, the count starts only that many seconds after the
 * library was loaded (a server whose processes are protected late:
 * apache2's children, at their on-wait fallback).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static long calls, inject_after;
static time_t count_from;       /* CLOCK_MONOTONIC seconds; 0: at once */
static int maps_fd = -1;         /* opened at chroot, for maps_pid */
static pid_t maps_pid;
static char needle[256];

/* Read at load: servers clear their workers' environment (nginx). */
__attribute__((constructor)) static void read_env(void)
{
	const char *after = getenv("LEARN_INJECT_AFTER");
	inject_after = after ? atol(after) : 0;
	const char *s = getenv("LEARN_INJECT_AFTER_S");
	if (s) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		count_from = now.tv_sec + atol(s);
	}
	const char *n = getenv("LEARN_INJECT_NEEDLE");
	size_t len = n ? strnlen(n, sizeof(needle) - 1) : 0;
	for (size_t i = 0; i < len; i++)
		needle[i] = n[len - 1 - i];
}

/* Where to write in [lo, hi): its start, or the needle's first byte. */
static char *target(unsigned long lo, unsigned long hi)
{
	if (!needle[0])
		return (char *)lo;
	return memmem((const void *)lo, hi - lo, needle, strlen(needle));
}

static void inject(void)
{
	int (*is_protected)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "pmalloc_is_protected");
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f && maps_fd >= 0 && maps_pid == getpid() && lseek(maps_fd, 0, SEEK_SET) == 0) {
		int fd = dup(maps_fd);
		if (fd >= 0 && !(f = fdopen(fd, "r")))
			close(fd);
	}
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
		char *at = target(lo, hi);
		if (!at)
			continue;
		fclose(f);
		fprintf(stderr, "learn_inject: writing at %p\n", (void *)at);
		*(volatile char *)at = 'X';
		return;
	}
	fclose(f);
	fprintf(stderr, "learn_inject: %s%s%s not found in protected memory\n", needle[0] ? "\"" : "",
		needle[0] ? needle : "a pool mapping", needle[0] ? "\"" : "");
}

int chroot(const char *path)
{
	static int (*real)(const char *);
	if (!real)
		real = (int (*)(const char *))dlsym(RTLD_NEXT, "chroot");
	if (inject_after) {
		if (maps_fd >= 0)
			close(maps_fd);
		maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		maps_pid = getpid();
	}
	return real(path);
}

int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout)
{
	static int (*real)(int, struct epoll_event *, int, int);
	if (!real)
		real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
	if (inject_after && count_from) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec < count_from)
			return real(epfd, ev, n, timeout);
	}
	if (inject_after && ++calls == inject_after)
		inject();
	return real(epfd, ev, n, timeout);
}
