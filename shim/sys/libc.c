/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libc.c - libc's definition of a name the shim interposes (libc.h): the
 * next one after the shim's, found with dlsym.  Never caches (REAL and LIBC
 * do, at their call sites) and never looks a name up in the shim itself.
 */
#define _GNU_SOURCE
#include "libc.h"
#include "guard.h"

#include <dlfcn.h>

/* dlsym may allocate; with shim_busy set that goes straight to the heap. */
void *libc_symbol(const char *name)
{
	int busy = shim_busy_enter();
	void *fn = dlsym(RTLD_NEXT, name);
	shim_busy_leave(busy);
	return fn;
}
