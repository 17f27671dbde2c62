/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libc.c - libc's definition of a name the shim interposes (libc.h): the
 * next one after the shim's, found with dlsym, and the read-only table of
 * those the interposers call.  Never looks a name up in the shim itself.
 */
#define _GNU_SOURCE
#include "libc.h"
#include "guard.h"

#include <dlfcn.h>

union libc_page libc_ro __attribute__((aligned(RO_PAGE)));
static_assert(sizeof(libc_ro) == RO_PAGE, "the table has its page to itself");

static const char *const libc_names[LIBC_FN_COUNT] = {
#define LIBC_NAME_(n) #n,
	LIBC_NAMES(LIBC_NAME_)
#undef LIBC_NAME_
};

/* dlsym may allocate; with shim_busy set that goes straight to the heap. */
void *libc_symbol(const char *name)
{
	int busy = shim_busy_enter();
	void *fn = dlsym(RTLD_NEXT, name);
	shim_busy_leave(busy);
	return fn;
}

void *libc_fn_slow(enum libc_fn i)
{
	void *fn = libc_symbol(libc_names[i]);
	/* Before the freeze only: the page is read-only after it (a name libc
	 * lacks is looked up at each call then; glibc has them all). */
	if (fn && !__atomic_load_n(&libc_ro.s.frozen, __ATOMIC_ACQUIRE))
		__atomic_store_n(&libc_ro.s.fn[i], fn, __ATOMIC_RELEASE);
	return fn;
}

int libc_freeze(void)
{
	if (__atomic_load_n(&libc_ro.s.frozen, __ATOMIC_ACQUIRE))
		return 0;
	for (int i = 0; i < LIBC_FN_COUNT; i++)
		if (!libc_ro.s.fn[i])
			(void)libc_fn_slow((enum libc_fn)i);
	__atomic_store_n(&libc_ro.s.frozen, true, __ATOMIC_RELEASE);
	return os_protect_ro(&libc_ro, sizeof(libc_ro));
}
