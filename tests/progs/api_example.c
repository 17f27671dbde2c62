/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * api_example.c - a small program written against include/pmalloc.h as its
 * documentation describes it, and nothing else: it keeps its configuration
 * in a pool, protects it, and goes on working.
 *
 *   api_example            build the configuration, protect it, check that
 *                          it reads back, allocate more; exit 0
 *   api_example attack     then write into the protected configuration, as
 *                          a memory-corruption bug would: the process must
 *                          die by SIGSEGV (the line before the write says
 *                          where it goes, for the test to check the report)
 *
 * Exit status 1 means the library did not behave as documented.
 */
#include <pmalloc.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct listener {
	char *address;
	int port;
};

struct config {
	char *server_name;
	int n_listeners;
	struct listener *listeners;
	int *allowed_uids;
	size_t n_uids;
	int debug;
};

static int failures;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "api_example: check failed: %s (line %d)\n", \
				#cond, __LINE__);                                     \
			failures++;                                                   \
		}                                                                     \
	} while (0)

static struct config *load_config(struct pmalloc_pool *pool)
{
	static const char *addresses[] = { "0.0.0.0", "::", "127.0.0.1" };
	struct config *c = pzalloc(pool, sizeof(*c));
	if (!c)
		return NULL;
	c->server_name = pstrdup(pool, "www.example.org");
	c->n_listeners = 3;
	c->listeners = pcalloc(pool, (size_t)c->n_listeners, sizeof(*c->listeners));
	if (!c->server_name || !c->listeners)
		return NULL;
	for (int i = 0; i < c->n_listeners; i++) {
		c->listeners[i].address = pstrdup(pool, addresses[i]);
		c->listeners[i].port = 8080 + i;
		if (!c->listeners[i].address)
			return NULL;
	}
	c->n_uids = 4;
	c->allowed_uids = pmalloc_array(pool, c->n_uids, sizeof(int));
	if (!c->allowed_uids)
		return NULL;
	for (size_t i = 0; i < c->n_uids; i++)
		c->allowed_uids[i] = 1000 + (int)i;
	return c;
}

static void verify_config(const struct config *c)
{
	CHECK(strcmp(c->server_name, "www.example.org") == 0);
	CHECK(c->n_listeners == 3);
	CHECK(strcmp(c->listeners[1].address, "::") == 0);
	CHECK(c->listeners[2].port == 8082);
	CHECK(c->allowed_uids[3] == 1003);
	CHECK(c->debug == 0);
	CHECK(((uintptr_t)c % _Alignof(max_align_t)) == 0);
}

int main(int argc, char **argv)
{
	int attack = argc > 1 && strcmp(argv[1], "attack") == 0;

	struct pmalloc_pool *pool = pmalloc_create_pool();
	if (!pool) {
		perror("pmalloc_create_pool");
		return 1;
	}
	struct config *cfg = load_config(pool);
	if (!cfg) {
		perror("load_config");
		return 1;
	}

	/* Documented errors. */
	errno = 0;
	CHECK(pcalloc(pool, SIZE_MAX / 2, 4) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(pstrdup(pool, NULL) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(pmalloc(NULL, 8) == NULL && errno == EINVAL);

	pmalloc_protect_pool(pool);
	verify_config(cfg);

	/* Allocation goes on after protect; new objects are writable. */
	char *note = pstrdup(pool, "written after protect");
	CHECK(note != NULL);
	if (note) {
		note[0] = 'W';
		CHECK(strcmp(note, "Written after protect") == 0);
	}
	pmalloc_protect_pool(pool);
	pmalloc_protect_pool(pool);
	verify_config(cfg);

	if (attack) {
		volatile int *target = &cfg->debug;
		printf("attack: pid %d object %p address %p size %zu\n", (int)getpid(),
		       (void *)cfg, (void *)(uintptr_t)target, sizeof(*cfg));
		fflush(stdout);
		*target = 1;                 /* must not return */
		fprintf(stderr, "api_example: write into protected configuration succeeded\n");
		return 1;
	}

	pmalloc_destroy_pool(pool);
	pmalloc_destroy_pool(NULL);
	if (failures)
		return 1;
	printf("api_example: ok\n");
	return 0;
}
