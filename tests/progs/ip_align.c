/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_align - the aligned allocators from a site: posix_memalign,
 * aligned_alloc, memalign, valloc and pvalloc give pool memory with the
 * asked alignment and a usable size no smaller than asked; a bad alignment
 * is refused as glibc refuses it.  Prints one line per allocation.
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

struct obj {
	const char *how;
	size_t align, size;
	void *p;
};

#define N_OBJ 8

static void make_aligned(struct obj *o)
{
	int r;
	o[0] = (struct obj){ "posix_memalign", 64, 100, NULL };
	r = posix_memalign(&o[0].p, 64, 100);
	if (r)
		o[0].p = NULL;
	o[1] = (struct obj){ "aligned_alloc", 256, 512, aligned_alloc(256, 512) };
	o[2] = (struct obj){ "memalign", 4096, 10, memalign(4096, 10) };
	o[3] = (struct obj){ "valloc", 4096, 100, valloc(100) };
	o[4] = (struct obj){ "pvalloc", 4096, 4096, pvalloc(100) };
	o[5] = (struct obj){ "posix_memalign", 32, 0, NULL };
	r = posix_memalign(&o[5].p, 32, 0);
	if (r)
		o[5].p = NULL;
	o[6] = (struct obj){ "aligned_alloc", 65536, 16, aligned_alloc(65536, 16) };
	o[7] = (struct obj){ "memalign", 16, 24, memalign(16, 24) };
}

static int refuse_bad_alignment(void)
{
	void *p = (void *)1;
	int r = posix_memalign(&p, 24, 16);
	return r == EINVAL && p == (void *)1;
}

int main(void)
{
	struct obj o[N_OBJ];
	make_aligned(o);
	printf("posix_memalign(24): %s\n", refuse_bad_alignment() ? "EINVAL" : "accepted");
	for (int i = 0; i < N_OBJ; i++)
		if (o[i].p)
			memset(o[i].p, 0x11, o[i].size);
	listen_once();
	for (int i = 0; i < N_OBJ; i++) {
		if (!o[i].p) {
			printf("%s(%zu, %zu): NULL\n", o[i].how, o[i].align, o[i].size);
			continue;
		}
		size_t us = malloc_usable_size(o[i].p);
		printf("%s(%zu, %zu): aligned %s, usable %s, protected %d\n", o[i].how, o[i].align,
		       o[i].size, (uintptr_t)o[i].p % o[i].align == 0 ? "yes" : "NO",
		       us >= o[i].size ? "enough" : "TOO SMALL", is_protected(o[i].p));
	}
	return 0;
}
