/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libconfig_private.c - what the shim's private libconfig binds to: its
 * standard streams and its allocator.
 *
 * The shim links libconfig statically with its symbols hidden (see the
 * Makefile: the program's own config_init must never be the one called).
 * Debian's archive reads stdin, stdout and stderr PC-relative, which a
 * shared object cannot do with libc's variables, so the build renames the
 * three to these.  libconfig's scanner only stores stdin and stdout as its
 * default input and output (the shim gives it strings), and writes to
 * stderr only in a fatal error; the constructor gives them libc's values.
 * The build renames its malloc, calloc, realloc, free and strdup to these
 * too: the shim's own allocations (heap.h), so that a policy file's parse
 * is the load's (scratch.h), never the program's heap and its routing.
 *
 * Never called by anyone but that libconfig.
 */
#include "heap.h"

#include <stdio.h>

/* Hidden, as everything in the shim not marked PMALLOC_EXPORT. */
FILE *pmalloc_libconfig_stdin;
FILE *pmalloc_libconfig_stdout;
FILE *pmalloc_libconfig_stderr;

__attribute__((constructor)) static void libconfig_streams_init(void)
{
	pmalloc_libconfig_stdin = stdin;
	pmalloc_libconfig_stdout = stdout;
	pmalloc_libconfig_stderr = stderr;
}

void *pmalloc_libconfig_malloc(size_t size);
void *pmalloc_libconfig_calloc(size_t n, size_t size);
void *pmalloc_libconfig_realloc(void *p, size_t size);
void pmalloc_libconfig_free(void *p);
char *pmalloc_libconfig_strdup(const char *s);

void *pmalloc_libconfig_malloc(size_t size)
{
	return heap_malloc(size);
}

void *pmalloc_libconfig_calloc(size_t n, size_t size)
{
	return heap_calloc(n, size);
}

void *pmalloc_libconfig_realloc(void *p, size_t size)
{
	return heap_realloc(p, size);
}

void pmalloc_libconfig_free(void *p)
{
	heap_free(p);
}

char *pmalloc_libconfig_strdup(const char *s)
{
	return heap_strdup(s);
}
