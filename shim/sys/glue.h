/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * glue.h - force-included (-include) when the policy model (common/policy/,
 * written against plain libc because pmallocd and pmallocctl build it too)
 * is compiled into the shim: its allocations and reads go to the shim's
 * heap and kernel doors by name (heap.h, os.h), never through the malloc
 * and read the shim exports to the program.  musl's mallocng glue.h does
 * the same for its own malloc.  The libc headers come first, so their
 * declarations keep libc's names; only the calls are renamed.
 */
#ifndef PMALLOC_GLUE_H
#define PMALLOC_GLUE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heap.h"
#include "os.h"

/* read(2)'s own contract (-1 and errno), over os_read's -errno. */
static inline ssize_t glue_read(int fd, void *buf, size_t len)
{
	ssize_t n = os_read(fd, buf, len);
	if (n < 0) {
		errno = (int)-n;
		return -1;
	}
	return n;
}

#define malloc heap_malloc
#define calloc heap_calloc
#define realloc heap_realloc
#define free heap_free
#define strdup heap_strdup
#define strndup heap_strndup
#define read glue_read

#endif
