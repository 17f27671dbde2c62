/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api.c - the public pool API of include/pmalloc.h: argument checks and
 * errno, then pool.c does the work.  Thin by design.
 *
 * Every entry validates its pool (NULL is refused gently; anything else
 * that is not a live pool is memory corruption and fatal()); allocations do
 * it on the fast path with one compare of the pool's stamp (pool.h).  No lock is
 * held on return; errno is only written on failure.
 */
#define _GNU_SOURCE
#include "pmalloc.h"
#include "pool.h"
#include "fault.h"
#include "hooks.h"
#include "site.h"
#include "os.h"

#include <errno.h>
#include <string.h>

#define CALLER() caller_site((uintptr_t)__builtin_return_address(0))

/* The site id of return address ra: a per-thread cache of the last one, as
 * a program allocates from one place many times in a row. */
static cold uint64_t caller_site_slow(uintptr_t ra)
{
	uint16_t id = site_id(ra);
	pool_tls.last_ra = ra;
	pool_tls.last_site = id;
	return id;
}

static inline uint64_t caller_site(uintptr_t ra)
{
	if (likely(pool_tls.last_ra == ra))
		return pool_tls.last_site;
	return caller_site_slow(ra);
}

/* A pool that exists can be protected: the fault handler is in place
 * (once; later calls cost a lock and a check). */
static struct pmalloc_pool *with_handler(struct pmalloc_pool *p)
{
	if (p)
		fault_install();
	return p;
}

PMALLOC_EXPORT struct pmalloc_pool *pmalloc_create_pool(void)
{
	return with_handler(pool_create(NULL, 0, 0));
}

PMALLOC_EXPORT struct pmalloc_pool *pmalloc_create_named_pool(const char *name, unsigned int flags)
{
	if (flags & ~PMALLOC_POOL_SEAL) {
		errno = EINVAL;
		return NULL;
	}
	return with_handler(pool_create(name, flags, 0));
}

/* NULL (EINVAL), a pool that is not live (fatal) and everything else
 * uncommon are found by the fast path's compares and handled slowly. */
static inline __attribute__((always_inline)) void *alloc_checked(struct pmalloc_pool *pool, size_t size,
								  uint64_t site, const char *api)
{
	return pool_alloc_api(pool, size, PM_ALIGN, site, api);
}

static cold void *pmalloc_new_site(struct pmalloc_pool *pool, size_t size, uintptr_t ra)
{
	return alloc_checked(pool, size, caller_site_slow(ra), "pmalloc");
}

/* The fast path: 35 instructions (36 a call with the slow paths amortised,
 * by callgrind in make bench), every branch out of it a tail call. */
PMALLOC_EXPORT void *pmalloc(struct pmalloc_pool *pool, size_t size)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	if (unlikely(pool_tls.last_ra != ra))
		return pmalloc_new_site(pool, size, ra);
	return alloc_checked(pool, size, pool_tls.last_site, "pmalloc");
}

PMALLOC_EXPORT void *pzalloc(struct pmalloc_pool *pool, size_t size)
{
	/* Pool memory is zero when handed out (never reused inside a span;
	 * a released span is decommitted to fresh pages), as calloc() in
	 * interpose.c relies on.  Cleared anyway: zero-filling is pzalloc's
	 * promise to the program, and must not hang on the arena's internals. */
	void *p = alloc_checked(pool, size, CALLER(), "pzalloc");
	if (p)
		memset(p, 0, size);
	return p;
}

PMALLOC_EXPORT void *pmalloc_array(struct pmalloc_pool *pool, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_checked(pool, total, CALLER(), "pmalloc_array");
}

PMALLOC_EXPORT void *pcalloc(struct pmalloc_pool *pool, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = alloc_checked(pool, total, CALLER(), "pcalloc");
	if (p)
		memset(p, 0, total);
	return p;
}

PMALLOC_EXPORT char *pstrdup(struct pmalloc_pool *pool, const char *s)
{
	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	size_t n = strlen(s) + 1;
	char *p = alloc_checked(pool, n, CALLER(), "pstrdup");
	if (p)
		memcpy(p, s, n);
	return p;
}

PMALLOC_EXPORT void pmalloc_protect_pool(struct pmalloc_pool *pool)
{
	if (!pool)
		return;
	pool_check(pool, "pmalloc_protect_pool");
	(void)fault_recheck(true);
	pool_protect(pool, "pmalloc_protect_pool");
}

PMALLOC_EXPORT void pmalloc_destroy_pool(struct pmalloc_pool *pool)
{
	if (!pool)
		return;
	pool_check(pool, "pmalloc_destroy_pool");
	pool_destroy(pool);
}

PMALLOC_EXPORT int pmalloc_pool_stats(const struct pmalloc_pool *pool, struct pmalloc_stats *st)
{
	if (!pool || !st) {
		errno = EINVAL;
		return -1;
	}
	pool_check(pool, "pmalloc_pool_stats");
	struct pmalloc_pool *p = (struct pmalloc_pool *)(uintptr_t)pool;
	struct pool_totals t;
	pool_totals(p, &t);
	st->objects = t.objects;
	st->requested_bytes = t.requested;
	st->used_bytes = t.used;
	st->protected_bytes = t.protected_bytes;
	st->mapped_bytes = t.mapped;
	st->protect_calls = t.protect_calls;
	st->frees = atomic_load_explicit(&p->frees, memory_order_relaxed);
	st->sealed = pool_seals(p) && os_have_mseal;
	return 0;
}

PMALLOC_EXPORT int pmalloc_is_protected(const void *addr)
{
	return pool_is_read_only(addr);
}

/* Interposition pools exist only in the preloaded shim, whose hook this
 * is; without one, no pool has a name a policy gave it. */
PMALLOC_EXPORT int pmalloc_protect_named(const char *pool)
{
	if (core_hook.protect_named)
		return core_hook.protect_named(pool);
	errno = ENOENT;
	return -1;
}
