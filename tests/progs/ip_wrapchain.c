/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_wrapchain - allocation wrappers several levels deep, shaped like
 * nginx's and redis's (names as theirs, code much smaller):
 *
 *   ngx_palloc -> ngx_palloc_block (small) -> ngx_memalign -> posix_memalign
 *   ngx_palloc -> ngx_palloc_large (large) -> ngx_memalign -> posix_memalign
 *   zmalloc -> ztrymalloc_usable -> malloc
 *   sdsnewlen -> s_malloc_usable -> ztrymalloc_usable -> malloc
 *
 * load_conf(), load_commands() and load_names() allocate through them
 * before listen(); handle_request() allocates through the same wrappers
 * before and after it; listen() is called twice.  A policy naming the
 * wrappers and the three functions as sites protects the first three's
 * objects only; with take = "until-trigger", what they allocate after the
 * first listen() is heap, and stays writable after the second.
 *
 *   ip_wrapchain               print, per object, whether it is protected
 *   ip_wrapchain write-request write a request object (allowed)
 *   ip_wrapchain write-conf    write a configuration object (dies when protected)
 *   ip_wrapchain hold          print, then "ready", and wait for the end of stdin
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

#define NOINLINE __attribute__((noinline))

/* Each wrapper's call is followed by code of its own: never a tail call,
 * so every level is a frame of the chain. */
NOINLINE void *ngx_memalign(size_t align, size_t size);
NOINLINE void *ngx_memalign(size_t align, size_t size)
{
	void *p = NULL;
	if (posix_memalign(&p, align, size) != 0)
		exit(3);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE void *ngx_palloc_block(size_t size);
NOINLINE void *ngx_palloc_block(size_t size)
{
	char *m = ngx_memalign(16, size + 64);
	__asm__ __volatile__("" ::: "memory");
	return m + 64;
}

NOINLINE void *ngx_palloc_large(size_t size);
NOINLINE void *ngx_palloc_large(size_t size)
{
	void *p = ngx_memalign(16, size);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE void *ngx_palloc(size_t size);
NOINLINE void *ngx_palloc(size_t size)
{
	void *p = size <= 256 ? ngx_palloc_block(size) : ngx_palloc_large(size);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE void *ztrymalloc_usable(size_t size);
NOINLINE void *ztrymalloc_usable(size_t size)
{
	void *p = malloc(size);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE void *zmalloc(size_t size);
NOINLINE void *zmalloc(size_t size)
{
	void *p = ztrymalloc_usable(size);
	if (!p)
		exit(3);
	return p;
}

NOINLINE void *s_malloc_usable(size_t size);
NOINLINE void *s_malloc_usable(size_t size)
{
	void *p = ztrymalloc_usable(size);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE char *sdsnewlen(const char *init, size_t len);
NOINLINE char *sdsnewlen(const char *init, size_t len)
{
	char *s = s_malloc_usable(len + 1);
	memcpy(s, init, len);
	s[len] = '\0';
	return s;
}

struct objs {
	char *small, *large, *cmd, *name;
};

NOINLINE static void load_conf(struct objs *o)
{
	o->small = ngx_palloc(100);
	strcpy(o->small, "server_name learn");
	o->large = ngx_palloc(1000);
	strcpy(o->large, "root /srv");
}

NOINLINE static void load_commands(struct objs *o)
{
	o->cmd = zmalloc(48);
	strcpy(o->cmd, "get");
}

NOINLINE static void load_names(struct objs *o)
{
	o->name = sdsnewlen("localhost", 9);
}

NOINLINE static void handle_request(struct objs *o)
{
	o->small = ngx_palloc(100);
	o->large = ngx_palloc(1000);
	o->cmd = zmalloc(48);
	o->name = sdsnewlen("GET /", 5);
}

static void show(const char *what, const struct objs *o)
{
	printf("%s %d %d %d %d\n", what, is_protected(o->small), is_protected(o->large), is_protected(o->cmd),
	       is_protected(o->name));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct objs conf, req, late_conf, late_req;
	load_conf(&conf);
	load_commands(&conf);
	load_names(&conf);
	handle_request(&req);
	listen_once();
	load_conf(&late_conf);
	load_commands(&late_conf);
	load_names(&late_conf);
	handle_request(&late_req);
	listen_once();                 /* protects what is new, if the pool took it */
	show("conf", &conf);
	show("request", &req);
	show("late conf", &late_conf);
	show("late request", &late_req);
	fflush(stdout);
	if (strcmp(mode, "write-request") == 0)
		req.cmd[0] = 'P';
	else if (strcmp(mode, "write-conf") == 0)
		conf.name[0] = 'X';
	printf("%s %s %s\n", conf.small, conf.cmd, conf.name);
	if (strcmp(mode, "hold") == 0) {
		printf("ready\n");
		fflush(stdout);
		while (getchar() != EOF)
			;
	}
	return 0;
}
