/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmalloc.h - protectable memory pools for user space.
 *
 * Objects are allocated from a pool and initialised; pmalloc_protect_pool()
 * then makes everything the pool holds read-only for good.  There is no
 * unprotect and no per-object free: pmalloc_destroy_pool() releases the whole
 * pool.  A write to protected memory is caught by the library's SIGSEGV
 * handler, reported on stderr (and to pmallocd or the journal when present),
 * and the process dies by SIGSEGV as it would without the library.
 *
 * Link with -lpmalloc_shim (pkg-config: pmalloc).  All functions are
 * thread-safe.  Returned memory is aligned for any type (alignof(max_align_t)).
 */
#ifndef PMALLOC_H
#define PMALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pmalloc_pool;

/* The seed API (Linux 2018 pmalloc proposal), with its exact signatures. */

/* A new, empty pool; NULL with errno = ENOMEM when memory is exhausted. */
struct pmalloc_pool *pmalloc_create_pool(void);
/* size bytes from pool, uninitialised; NULL (errno set) on failure or NULL pool. */
void *pmalloc(struct pmalloc_pool *pool, size_t size);
/* As pmalloc(), zero-filled. */
void *pzalloc(struct pmalloc_pool *pool, size_t size);
/* n objects of size bytes; NULL with errno = ENOMEM when n * size overflows. */
void *pmalloc_array(struct pmalloc_pool *pool, size_t n, size_t size);
/* As pmalloc_array(), zero-filled. */
void *pcalloc(struct pmalloc_pool *pool, size_t n, size_t size);
/* A copy of s in pool (NULL s gives NULL with errno = EINVAL). */
char *pstrdup(struct pmalloc_pool *pool, const char *s);
/* Make every object allocated so far read-only, permanently.  Objects
 * allocated afterwards stay writable until the next call.  Costs one
 * mprotect per contiguous range, none when nothing is new.  The unused tail
 * of the last page protected is given up. */
void pmalloc_protect_pool(struct pmalloc_pool *pool);
/* Release the pool and all its memory to the system (except sealed memory,
 * which the kernel never lets go; see PMALLOC_POOL_SEAL). */
void pmalloc_destroy_pool(struct pmalloc_pool *pool);

/* Extensions. */

/* Seal protected memory with mseal(2): it can then never be unprotected,
 * remapped or released, even by pmalloc_destroy_pool().  Where the kernel
 * lacks mseal the pool is only mprotected (pmalloc_pool_stats says which). */
#define PMALLOC_POOL_SEAL 0x1u

/* A pool whose name (copied, at most 63 bytes kept) appears in fault reports. */
struct pmalloc_pool *pmalloc_create_named_pool(const char *name, unsigned int flags);

struct pmalloc_stats {
	size_t objects;          /* objects allocated */
	size_t requested_bytes;  /* sum of the sizes asked for */
	size_t used_bytes;       /* bytes handed out, with alignment padding */
	size_t protected_bytes;  /* bytes made read-only, page-rounded */
	size_t mapped_bytes;     /* address space the pool holds */
	size_t protect_calls;    /* pmalloc_protect_pool() calls that protected something */
	size_t frees;            /* free()/realloc() of its objects: accepted, memory kept */
	int sealed;              /* 1 when protected memory is mseal()ed */
};
/* Fill *st for pool; 0, or -1 with errno = EINVAL. */
int pmalloc_pool_stats(const struct pmalloc_pool *pool, struct pmalloc_stats *st);

/* 1 if addr lies in protected pool memory, else 0: once it says 1, the
 * protect is complete and a write there faults.  Lock-free, O(1). */
int pmalloc_is_protected(const void *addr);

/* For programs run under the shim's interposition (LD_PRELOAD): protect the
 * interposition pool that the policy names pool (the "manual" trigger).
 * 0 on success, -1 with errno = ENOENT when no such pool is active. */
int pmalloc_protect_named(const char *pool);

#ifdef __cplusplus
}
#endif

#endif
