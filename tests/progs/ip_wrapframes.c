/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_wrapframes - many allocations through wrappers, alternating between
 * a named site and a function no rule names, so that resolve.c's reading
 * of a wrapper's caller off the stack (frames.c: each wrapper call's
 * unwind rule, confirmed by the unwinder for its first few) is what
 * charges most of them:
 *   xalloc      a wrapper with a fixed frame (its rule: the stack pointer
 *               plus a constant), called through xalloc_outer (a chain);
 *   valloc_pad  a wrapper whose frame varies from call to call (a
 *               variable-length array: its rule is the frame pointer's,
 *               which frames.c does not use: every call unwound).
 * load_conf() (the site) and handle_request() (no site) each make ROUNDS
 * allocations through each, interleaved, before listen().  Prints how
 * many of each are protected: "conf N N" and "request N N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

#define NOINLINE __attribute__((noinline))
#define ROUNDS 40

NOINLINE void *xalloc(size_t size);
NOINLINE void *xalloc(size_t size)
{
	void *p = malloc(size);
	if (!p)
		exit(3);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE void *xalloc_outer(size_t size);
NOINLINE void *xalloc_outer(size_t size)
{
	void *p = xalloc(size);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE void *valloc_pad(size_t size, size_t pad);
NOINLINE void *valloc_pad(size_t size, size_t pad)
{
	volatile char scratch[pad + 1];
	scratch[pad] = (char)size;
	void *p = malloc(size + (size_t)(scratch[pad] - (char)size));
	if (!p)
		exit(3);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

struct pair {
	void *fixed, *varying;
};

NOINLINE static void load_conf(struct pair *o, size_t i)
{
	o->fixed = xalloc_outer(24);
	o->varying = valloc_pad(24, 16 + 48 * (i % 7));
}

NOINLINE static void handle_request(struct pair *o, size_t i)
{
	o->fixed = xalloc_outer(24);
	o->varying = valloc_pad(24, 200 - 16 * (i % 5));
}

int main(void)
{
	static struct pair conf[ROUNDS], req[ROUNDS];
	for (size_t i = 0; i < ROUNDS; i++) {
		load_conf(&conf[i], i);
		handle_request(&req[i], i);
	}
	listen_once();
	int cf = 0, cv = 0, rf = 0, rv = 0;
	for (size_t i = 0; i < ROUNDS; i++) {
		cf += is_protected(conf[i].fixed) == 1;
		cv += is_protected(conf[i].varying) == 1;
		rf += is_protected(req[i].fixed) == 1;
		rv += is_protected(req[i].varying) == 1;
	}
	printf("conf %d %d\nrequest %d %d\n", cf, cv, rf, rv);
	return 0;
}
