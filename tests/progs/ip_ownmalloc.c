/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_ownmalloc - a program whose executable defines the malloc family
 * itself (an allocator linked in statically): every object carries a tag
 * that its free() checks, and a pointer from any other allocator aborts
 * with "foreign pointer".  Under the shim, the shim's own strdup, strndup,
 * valloc, reallocarray ... must allocate from it.  Prints "ok" and exits 0.
 * (Alone it aborts: glibc's valloc does not know this allocator, the
 * shim's builds valloc on its memalign.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

#define TAG 0x6f776e6d616c6c63ull
#define HDR 32                    /* base, size, unused, TAG: right before the object */

static void *own_alloc(size_t align, size_t n)
{
	if (align < HDR)
		align = HDR;
	char *base = __libc_memalign(align, n + align);
	if (!base)
		return NULL;
	uint64_t *h = (uint64_t *)(base + align) - 4;
	h[0] = (uintptr_t)base;
	h[1] = n;
	h[3] = TAG;
	return base + align;
}

static uint64_t *header(void *q)
{
	uint64_t *h = (uint64_t *)q - 4;
	if (h[3] != TAG) {
		static const char msg[] = "ip_ownmalloc: foreign pointer\n";
		write(2, msg, sizeof(msg) - 1);
		abort();
	}
	return h;
}

void *malloc(size_t n) { return own_alloc(16, n); }
void *memalign(size_t align, size_t n) { return own_alloc(align, n); }
void *aligned_alloc(size_t align, size_t n) { return own_alloc(align, n); }
int posix_memalign(void **ret, size_t align, size_t n)
{
	void *p = own_alloc(align, n);
	if (!p)
		return ENOMEM;
	*ret = p;
	return 0;
}
void *calloc(size_t n, size_t size)
{
	void *p = own_alloc(16, n * size);
	return p ? memset(p, 0, n * size) : NULL;
}
size_t malloc_usable_size(void *q) { return q ? header(q)[1] : 0; }
void free(void *q)
{
	if (!q)
		return;
	uint64_t *h = header(q);
	h[3] = 0;
	__libc_free((void *)(uintptr_t)h[0]);
}
void *realloc(void *q, size_t n)
{
	void *p = own_alloc(16, n);
	if (p && q) {
		size_t have = header(q)[1];
		memcpy(p, q, have < n ? have : n);
		free(q);
	}
	return p;
}

int main(void)
{
	char *s = strdup("own allocator");
	char *t = strndup("own allocator", 3);
	void *v = valloc(100);
	void *r = reallocarray(NULL, 10, 10);
	if (!s || !t || !v || !r || strcmp(t, "own") != 0 || malloc_usable_size(s) != 14)
		return 1;
	free(s);
	free(t);
	free(v);
	free(r);
	printf("ok\n");
	return 0;
}
