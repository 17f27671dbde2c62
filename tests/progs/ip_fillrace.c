/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_fillrace - the shim's own copies into pool objects race protect:
 * three threads strdup(), strndup() and realloc() from the pool's site
 * (load_names) while the main thread protects that pool over and over
 * (pmalloc_protect_named: the manual trigger).  Each copy the shim makes
 * into a fresh pool object must complete, intact, and never be reported as
 * a write of the program's.  Prints "ok: N copies" and exits 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 3
#define ROUNDS 300
#define LEN 6000

static char text[LEN + 1];
static atomic_int running = THREADS;
static atomic_long protects;
static atomic_long copies;

static void check(const char *s, size_t len, const char *what)
{
	if (!s || strlen(s) != len || s[0] != 'a' || s[len - 1] != text[len - 1]) {
		printf("FAIL: %s copy wrong\n", what);
		exit(1);
	}
}

/* The site: every allocation here goes to the pool "names". */
__attribute__((noinline)) static void load_names(void)
{
	char *a = strdup(text);
	check(a, LEN, "strdup");
	char *b = strndup(text, LEN / 2);
	check(b, LEN / 2, "strndup");
	char *c = realloc(a, 2 * LEN);          /* a pool object moved: copied */
	check(c, LEN, "realloc");
	atomic_fetch_add(&copies, 3);
}

static void *worker(void *arg)
{
	(void)arg;
	while (atomic_load(&protects) == 0)
		;                                /* the race starts with the protects */
	for (int i = 0; i < ROUNDS; i++)
		load_names();
	atomic_fetch_sub(&running, 1);
	return NULL;
}

int main(void)
{
	int (*protect_named)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "pmalloc_protect_named");
	if (!protect_named) {
		printf("no shim\n");
		return 1;
	}
	for (int i = 0; i < LEN; i++)
		text[i] = (char)('a' + i % 26);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	while (atomic_load(&running) > 0) {
		if (protect_named("names") != 0) {
			printf("FAIL: pmalloc_protect_named\n");
			return 1;
		}
		atomic_fetch_add(&protects, 1);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("ok: %ld copies\n", atomic_load(&copies));
	return 0;
}
