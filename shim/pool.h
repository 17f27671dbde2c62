/*
 * pool.h - pools: the seed API's objects, shared by the public API
 * (api.c) and the interposition, which creates one pool per policy pool.
 */
#ifndef PMALLOC_POOL_H
#define PMALLOC_POOL_H

#include "common.h"
#include "arena.h"

#include <pthread.h>

#define POOL_NAME 64

enum pool_mode { POOL_ENFORCE, POOL_AUDIT };

struct pmalloc_pool {
	uint64_t magic;                  /* POOL_MAGIC ^ address while alive */
	pthread_mutex_t lock;            /* guards everything below but the atomics */
	struct span *first, *last;       /* every span, by age (dedicated ones before cur) */
	struct span *dirty;              /* spans before it are wholly read-only */
	struct span *cur;                /* where small objects go; always last */
	size_t next_span_bytes;
	size_t max_bytes;                /* cap on used_bytes; 0: none */
	struct pmalloc_stats_internal {
		size_t objects, requested, used, protected_bytes, mapped, protect_calls;
		size_t protect_failures;
	} st;
	unsigned int flags;              /* PMALLOC_POOL_* */
	_Atomic int mode;                /* enum pool_mode, read by the fault handler */
	_Atomic size_t frees;            /* free()/realloc() of its objects, accepted and ignored */
	_Atomic int capped_said;         /* max_bytes reached, said once */
	int index;                       /* interposition pool number, -1 for API pools */
	char name[POOL_NAME];
	char policy[POOL_NAME];          /* "" for API pools */
	struct pmalloc_pool *reg_next, *reg_prev;
};

/* A new pool; NULL with errno = ENOMEM. */
struct pmalloc_pool *pool_create(const char *name, unsigned int flags);
/* Validate a caller's pool pointer: fatal() on anything but a live pool. */
void pool_check(const struct pmalloc_pool *p, const char *api);
/* size bytes aligned to align (a power of two >= PM_ALIGN) for call site
 * site; NULL with errno = ENOMEM (also past max_bytes). */
void *pool_alloc(struct pmalloc_pool *p, size_t size, size_t align, uint16_t site);
/* Protect what is new; returns the bytes newly made read-only. */
size_t pool_protect(struct pmalloc_pool *p, const char *api);
void pool_destroy(struct pmalloc_pool *p);

struct pool_hit {
	struct pmalloc_pool *pool;
	struct span *span;
	bool is_protected;
	bool in_object;
	uintptr_t object;                /* start, when in_object */
	size_t object_size;
	uint16_t site;
};
/* What p is in pool memory; false when it is not pool memory.  Lock-free,
 * async-signal-safe. */
bool pool_lookup(const void *p, struct pool_hit *ret);

/* free() of pool object p: counted, the memory stays; fatal() when p is
 * pool memory but not the start of an object (a corrupt pointer). */
void pool_note_free(void *p, const char *api);
/* Usable size of pool object p; fatal() like pool_note_free. */
size_t pool_usable_size(const void *p, const char *api);
/* 1 if p lies in protected pool memory. */
bool pool_is_protected(const void *p);

/* Install fork handlers and the fault handler (once). */
void pool_global_init(void);
/* Walk the live pools under the registry lock (no call may re-enter pools). */
void pool_for_each(void (*fn)(struct pmalloc_pool *p, void *ctx), void *ctx);

#endif
