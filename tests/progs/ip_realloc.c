/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_realloc - realloc, reallocarray, free and malloc_usable_size of pool
 * objects, before and after the pool is protected.  cfg_alloc() and
 * cfg_resize() are the sites; main() is not.  Every step prints one line;
 * any surprise prints "BAD: ..." and the program carries on, so a test sees
 * all of them.  The trigger is listen(), called twice.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

static int bad;
#define CHECK(cond, ...) do { if (!(cond)) { bad++; printf("BAD: " __VA_ARGS__); printf("\n"); } } while (0)

static void *cfg_alloc(size_t n)
{
	char *p = malloc(n);
	if (!p)
		exit(3);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)('a' + i % 26);
	return p;
}

static void *cfg_resize(void *p, size_t n)
{
	return realloc(p, n);
}

static void *cfg_resize_array(void *p, size_t n, size_t size)
{
	return reallocarray(p, n, size);
}

static int pattern_ok(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)('a' + i % 26))
			return 0;
	return 1;
}

int main(void)
{
	/* Before protect. */
	char *a = cfg_alloc(10);
	size_t us = malloc_usable_size(a);
	printf("usable size of a 10-byte pool object: %zu\n", us);
	CHECK(us >= 10, "usable size %zu < 10", us);
	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) != 0");

	char *a2 = cfg_resize(a, 16);
	CHECK(a2 && pattern_ok(a2, 10), "contents lost growing within the object");
	char *a3 = cfg_resize(a2, 100);
	CHECK(a3 && a3 != a2, "grow past the object did not move it");
	CHECK(a3 && pattern_ok(a3, 10), "contents lost growing past the object");
	us = malloc_usable_size(a3);
	printf("after realloc to 100: usable %zu\n", us);
	CHECK(us >= 100, "usable size %zu < 100", us);
	memset(a3 + 10, 'z', 90);

	char *f = cfg_alloc(24);
	free(f);
	char *g = cfg_alloc(24);
	printf("free before protect: accepted, memory %s\n", g == f ? "reused" : "not reused");

	char *z = cfg_alloc(10);
	errno = 0;
	void *z2 = cfg_resize(z, 0);
	printf("realloc to 0 before protect: %s\n", z2 ? "not NULL" : "NULL");
	if (z2)
		free(z2);

	char *toheap = cfg_alloc(20);
	char *onheap = realloc(toheap, 4000);         /* main is no site: to the heap */
	CHECK(onheap && pattern_ok(onheap, 20), "contents lost moving to the heap");

	char *arr = cfg_alloc(8);
	char *arr2 = cfg_resize_array(arr, 16, 8);
	CHECK(arr2 && pattern_ok(arr2, 8), "contents lost in reallocarray");
	errno = 0;
	void *ovf = cfg_resize_array(arr2, (size_t)-1 / 2, 4);
	printf("reallocarray overflow: %s, errno %s\n", ovf ? "not NULL" : "NULL",
	       errno == ENOMEM ? "ENOMEM" : "other");

	char *b = cfg_alloc(30), *c = cfg_alloc(30), *d = cfg_alloc(30), *e = cfg_alloc(30);
	listen_once();

	/* After protect. */
	printf("protected: a3 %d, g %d, arr2 %d, b %d, heap copy %d\n", is_protected(a3),
	       is_protected(g), is_protected(arr2), is_protected(b), is_protected(onheap));
	us = malloc_usable_size(b);
	printf("usable size of a protected 30-byte object: %zu\n", us);
	CHECK(us >= 30, "usable size %zu < 30", us);

	free(g);
	printf("free after protect: accepted\n");

	/* Pool memory is permanent: the old copy can still be looked at. */
	volatile uintptr_t b_addr = (uintptr_t)b, d_addr = (uintptr_t)d;
	const char *b_old = (const char *)b_addr, *d_old = (const char *)d_addr;
	char *m = realloc(b, 200);                    /* main: to the heap */
	CHECK(m && m != b_old, "realloc of a protected object did not move it");
	CHECK(m && pattern_ok(m, 30), "contents lost moving a protected object");
	if (m) {
		m[0] = 'W';
		m[199] = 'W';
	}
	printf("realloc (not a site) of a protected object: moved, copy protected %d, old still "
	       "protected %d and intact %d\n", is_protected(m), is_protected(b_old), pattern_ok(b_old, 30));

	char *s = cfg_resize(c, 16);                  /* a site, shrinking: still must move */
	CHECK(s && s != c, "shrinking a protected object did not move it");
	CHECK(s && pattern_ok(s, 16), "contents lost shrinking a protected object");
	if (s)
		s[0] = 'W';
	printf("realloc (site) of a protected object: moved, copy protected %d, writable\n",
	       is_protected(s));

	void *n0 = cfg_resize(d, 0);
	printf("realloc to 0 after protect: %s, old intact %d\n", n0 ? "not NULL" : "NULL",
	       pattern_ok(d_old, 30));

	char *ra = cfg_resize_array(e, 10, 10);
	CHECK(ra && ra != e && pattern_ok(ra, 30), "reallocarray of a protected object");

	listen_once();                                /* protects what is new */
	printf("after a second listen: site copy protected %d, heap copy protected %d\n",
	       is_protected(s), is_protected(m));
	free(m);
	free(onheap);
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
