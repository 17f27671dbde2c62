/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libc.h - the door to libc's own definitions of the names the shim
 * interposes (libc.c): the interposers call the real function through it.
 * Owns nothing else; never called from a signal handler before its cache
 * is filled (dlsym may allocate and take the loader's lock).
 */
#ifndef PMALLOC_LIBC_H
#define PMALLOC_LIBC_H

#include "common.h"

/* libc's definition of name (dlsym RTLD_NEXT), NULL if none. */
void *libc_symbol(const char *name);
/* libc's name, as a function of type, found once and cached. */
#define REAL(name, type) ({ \
	static type _Atomic real_; \
	type fn_ = atomic_load_explicit(&real_, memory_order_relaxed); \
	if (unlikely(!fn_)) { \
		fn_ = (type)libc_symbol(#name); \
		atomic_store_explicit(&real_, fn_, memory_order_relaxed); \
	} \
	fn_; })
/* The same, cached in var, a file-scope _Atomic pointer that a constructor
 * may fill before the first call (for calls made in signal handlers, where
 * dlsym must not run). */
#define LIBC(var, name) ({ \
	__typeof__(var) f_ = atomic_load_explicit(&(var), memory_order_relaxed); \
	if (unlikely(!f_)) { \
		f_ = (__typeof__(f_))libc_symbol(name); \
		atomic_store_explicit(&(var), f_, memory_order_relaxed); \
	} \
	f_; })

#endif
