/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_errno - errno survives successful calls of the allocator family, from
 * a site (pool objects) and from elsewhere (heap objects), and the trigger.
 * Every call is made with errno set to a marker; any change is printed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MARK EILSEQ

static int changed;

static void check(const char *what, int e)
{
	if (e != MARK) {
		changed++;
		printf("errno changed by %s: %d (%s)\n", what, e, strerror(e));
	}
}

/* Run expr with errno = MARK and check it afterwards. */
#define KEEP(what, expr) do { errno = MARK; expr; check(what, errno); } while (0)

struct objs {
	void *m, *c, *r, *a, *pm, *s, *sn;
};

/* The same calls from two functions: cfg_load() is the site, heap_load()
 * is not; the calls must be in their bodies to be charged to them. */
#define ALLOC_ALL(o, tag) do { \
	KEEP(tag " malloc", (o)->m = malloc(40)); \
	KEEP(tag " calloc", (o)->c = calloc(4, 10)); \
	KEEP(tag " realloc", (o)->r = realloc(NULL, 24)); \
	KEEP(tag " realloc grow", (o)->r = realloc((o)->r, 4000)); \
	KEEP(tag " aligned_alloc", (o)->a = aligned_alloc(64, 128)); \
	KEEP(tag " posix_memalign", if (posix_memalign(&(o)->pm, 32, 64)) (o)->pm = NULL); \
	KEEP(tag " strdup", (o)->s = strdup(tag)); \
	KEEP(tag " strndup", (o)->sn = strndup(tag, 2)); \
} while (0)

static void cfg_load(struct objs *o)
{
	ALLOC_ALL(o, "site");
}

static void heap_load(struct objs *o)
{
	ALLOC_ALL(o, "heap");
}

static void free_all(struct objs *o, const char *tag)
{
	char name[64];
	void *ps[] = { o->m, o->c, o->r, o->a, o->pm, o->s, o->sn };
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		if (!ps[i]) {
			printf("allocation %zu of %s failed\n", i, tag);
			changed++;
			continue;
		}
		snprintf(name, sizeof(name), "%s malloc_usable_size", tag);
		KEEP(name, (void)malloc_usable_size(ps[i]));
		snprintf(name, sizeof(name), "%s free", tag);
		KEEP(name, free(ps[i]));
	}
}

int main(void)
{
	struct objs site, heap;
	cfg_load(&site);
	heap_load(&heap);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return 2;
	int r;
	KEEP("listen (trigger)", r = listen(fd, 1));
	if (r < 0)
		return 2;
	KEEP("free(NULL)", free(NULL));
	free_all(&site, "site");
	free_all(&heap, "heap");
	printf("%s\n", changed ? "FAILED" : "errno preserved");
	return changed ? 1 : 0;
}
