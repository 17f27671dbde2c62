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

/* Threads allocate from one of a pool's stripes (chosen per thread, once),
 * each with its own lock and current span: threads of one pool neither
 * wait for each other nor write into each other's pages. */
#define POOL_STRIPES 4

struct pool_stripe {
	pthread_mutex_t lock;            /* guards the fields below, and cur's cursor */
	struct span *cur;                /* where this stripe's small objects go */
	size_t next_span_bytes;
	size_t objects, requested, used;
} __attribute__((aligned(64)));

struct pool_totals {
	size_t objects, requested, used, protected_bytes, mapped, protect_calls, protect_failures;
};

struct pmalloc_pool {
	uint64_t magic;                  /* POOL_MAGIC ^ address while alive */
	pthread_mutex_t lock;            /* the span list and the protect state */
	struct span *first, *last;       /* every span, by age */
	struct span *dirty;              /* spans before it are wholly read-only */
	size_t protected_bytes, mapped, protect_calls, protect_failures;
	size_t max_bytes;                /* cap on bytes handed out; 0: none */
	_Atomic size_t capped_used;      /* bytes handed out, kept only under a cap */
	unsigned int flags;              /* PMALLOC_POOL_* */
	_Atomic int mode;                /* enum pool_mode, read by the fault handler */
	_Atomic size_t frees;            /* free()/realloc() of its objects, accepted and ignored */
	_Atomic int capped_said;         /* max_bytes reached, said once */
	int index;                       /* interposition pool number, -1 for API pools */
	char name[POOL_NAME];
	char policy[POOL_NAME];          /* "" for API pools */
	struct pmalloc_pool *reg_next, *reg_prev;
	struct pool_stripe stripes[POOL_STRIPES];
};

/* Lock order: registry, then a pool's stripes (in index order), then the
 * pool's lock, then the arena's. */

/* Consistent totals of p (takes its locks). */
void pool_totals(struct pmalloc_pool *p, struct pool_totals *ret);

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

#endif
