/*
 * pool.c - protectable pools: bump allocation inside spans of the arena,
 * protection of what is new, and destruction.
 *
 * Costs: an allocation takes its thread's stripe lock once (uncontended
 * unless more threads than stripes allocate at once) and touches the span's
 * side metadata (two bitmap words, one site id): no system call unless a
 * new span is needed (one per 64 KiB .. 4 MiB).  pool_protect() takes every
 * stripe, so no allocation is half done while it runs, and makes one
 * mprotect per contiguous range of new spans, none when nothing is new.
 *
 * Lock order (pool.h): registry_lock, a pool's stripes in index order, the
 * pool's lock, the arena's.  No lock is held while calling anything outside
 * the shim.  Never calls malloc.
 * Pool structs live in their own mapping, apart from the heap and from the
 * pages that get protected, and are validated on every API call.
 */
#define _GNU_SOURCE
#include "pool.h"
#include "pmalloc.h"
#include "fault.h"
#include "fmt.h"
#include "os.h"

#include <errno.h>
#include <string.h>

#define POOL_MAGIC UINT64_C(0x706d616c6c6f6331)
#define POOL_MAX 65536u
#define SPAN_FIRST ((size_t)64 << 10)
#define SPAN_MAX ((size_t)4 << 20)
#define DEDICATED_MIN ((size_t)256 << 10)   /* objects this large get a span of their own */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pmalloc_pool *registry;       /* live pools */
static struct pmalloc_pool *slab;           /* POOL_MAX pool structs, reserved */
static struct pmalloc_pool *slab_free;      /* recycled structs (reg_next links) */
static uint32_t slab_next;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_ok;

/* Owner of sealed spans whose pool was destroyed: the kernel keeps them.
 * Only ever read (by lookups); never allocated from or locked. */
static struct pmalloc_pool sealed_orphans = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .index = -1, .name = "(destroyed sealed pool)",
	.flags = PMALLOC_POOL_SEAL,
};

static void lock_all(struct pmalloc_pool *p)
{
	for (int i = 0; i < POOL_STRIPES; i++)
		pthread_mutex_lock(&p->stripes[i].lock);
	pthread_mutex_lock(&p->lock);
}

static void unlock_all(struct pmalloc_pool *p)
{
	pthread_mutex_unlock(&p->lock);
	for (int i = POOL_STRIPES - 1; i >= 0; i--)
		pthread_mutex_unlock(&p->stripes[i].lock);
}

static void atfork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next)
		lock_all(p);
	arena_lock();
}

static void atfork_release(void)
{
	arena_unlock();
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next)
		unlock_all(p);
	pthread_mutex_unlock(&registry_lock);
}

/* This thread's stripe: handed out round-robin at its first allocation. */
static __thread unsigned int my_stripe __attribute__((tls_model("initial-exec")));
static _Atomic unsigned int next_stripe;

static inline unsigned int stripe_index(void)
{
	if (unlikely(!my_stripe))
		my_stripe = atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) % POOL_STRIPES + 1;
	return my_stripe - 1;
}

static void global_init_once(void)
{
	void *p;
	os_init();
	if (arena_init() < 0)
		return;
	size_t len = ALIGN_UP(POOL_MAX * sizeof(struct pmalloc_pool), os_page_size);
	if (os_reserve(len, &p) < 0 || os_commit(p, len) < 0)
		return;
	slab = p;
	pthread_atfork(atfork_prepare, atfork_release, atfork_release);
	fault_install();
	global_ok = 1;
}

void pool_global_init(void)
{
	pthread_once(&global_once, global_init_once);
}

void pool_check(const struct pmalloc_pool *p, const char *api)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)slab;
	if (unlikely(!slab || off >= POOL_MAX * sizeof(*p) || off % sizeof(*p) != 0 ||
		     p->magic != (POOL_MAGIC ^ (uintptr_t)p)))
		fatal(api, "not a live pool (corrupt, or used after pmalloc_destroy_pool)");
}

struct pmalloc_pool *pool_create(const char *name, unsigned int flags)
{
	pool_global_init();
	if (!global_ok) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	struct pmalloc_pool *p = slab_free;
	if (p)
		slab_free = p->reg_next;
	else if (slab_next < POOL_MAX)
		p = &slab[slab_next++];
	if (!p) {
		pthread_mutex_unlock(&registry_lock);
		errno = ENOMEM;
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	/* Adaptive: the critical section is a few nanoseconds, so a contending
	 * thread spins briefly instead of sleeping in the kernel. */
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&p->lock, &attr);
	for (int i = 0; i < POOL_STRIPES; i++) {
		pthread_mutex_init(&p->stripes[i].lock, &attr);
		p->stripes[i].next_span_bytes = SPAN_FIRST;
	}
	pthread_mutexattr_destroy(&attr);
	p->flags = flags;
	p->index = -1;
	if (name) {
		size_t n = strnlen(name, POOL_NAME - 1);
		memcpy(p->name, name, n);
	}
	p->magic = POOL_MAGIC ^ (uintptr_t)p;
	p->reg_next = registry;
	if (registry)
		registry->reg_prev = p;
	registry = p;
	pthread_mutex_unlock(&registry_lock);
	return p;
}

/* Append span s to p's list (the pool's lock held). */
static void list_add(struct pmalloc_pool *p, struct span *s)
{
	s->next = NULL;
	s->prev = p->last;
	if (p->last)
		p->last->next = s;
	else
		p->first = s;
	p->last = s;
	if (!p->dirty)
		p->dirty = s;
	p->mapped += s->bytes;
}

/* A new span, for the stripe's small objects or for one large object;
 * the stripe's lock held. */
static cold void *alloc_slow(struct pmalloc_pool *p, struct pool_stripe *st, size_t need, size_t align,
			     uint16_t site)
{
	struct span *s;
	bool dedicated = need + align > DEDICATED_MIN;
	if (!dedicated)
		while (st->next_span_bytes < need + align)
			st->next_span_bytes *= 2;
	size_t bytes = dedicated ? need + align : st->next_span_bytes;
	pthread_mutex_lock(&p->lock);
	if (arena_span_alloc(bytes, p, &s) < 0) {
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
	size_t off = ALIGN_UP(s->base, align) - s->base;
	s->cursor = off + need;
	span_mark(s, off, need, site);
	if (dedicated) {
		s->single_off = off;
		s->single_size = need;
		atomic_store_explicit(&s->single, true, memory_order_release);
	} else {
		if (st->cur)
			st->cur->is_cur = false;   /* its tail is protected whole next time */
		s->is_cur = true;
		st->cur = s;
		if (st->next_span_bytes < SPAN_MAX)
			st->next_span_bytes *= 2;
	}
	list_add(p, s);
	pthread_mutex_unlock(&p->lock);
	return (void *)(s->base + off);
}

/* The fast path: one lock (this thread's stripe), a bump, three metadata
 * stores; a pool with a cap adds one atomic add. */
void *pool_alloc(struct pmalloc_pool *p, size_t size, size_t align, uint16_t site)
{
	size_t need = ALIGN_UP(size ? size : 1, PM_ALIGN);
	if (unlikely(need < size || need > ((size_t)1 << 46))) {
		errno = ENOMEM;
		return NULL;
	}
	/* The cap is checked before and counted after: threads racing at the
	 * limit may pass it by an object each, never more. */
	if (unlikely(p->max_bytes) &&
	    atomic_load_explicit(&p->capped_used, memory_order_relaxed) + need > p->max_bytes) {
		if (!atomic_exchange(&p->capped_said, 1))
			debug_printf("pool \"%s\" reached max_bytes: further allocations go to the heap", p->name);
		errno = ENOMEM;
		return NULL;
	}
	struct pool_stripe *st = &p->stripes[stripe_index()];
	void *r;
	pthread_mutex_lock(&st->lock);
	struct span *s = st->cur;
	size_t off = s ? ALIGN_UP(s->base + s->cursor, align) - s->base : 0;
	if (likely(s && off + need <= s->bytes)) {
		s->cursor = off + need;
		span_mark(s, off, need, site);
		r = (void *)(s->base + off);
	} else {
		r = alloc_slow(p, st, need, align, site);
	}
	if (likely(r)) {
		st->objects++;
		st->requested += size;
		st->used += need;
	}
	pthread_mutex_unlock(&st->lock);
	if (unlikely(!r)) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(p->max_bytes))
		atomic_fetch_add_explicit(&p->capped_used, need, memory_order_relaxed);
	return r;
}

/* mprotect (and mseal) one contiguous range: 0, or -ENOMEM when the
 * process is out of memory mappings (vm.max_map_count). */
static int protect_range(struct pmalloc_pool *p, uintptr_t a, uintptr_t b, const char *api)
{
	if (a == b)
		return 0;
	int r = os_protect_ro((void *)a, b - a);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		fatal(api, "mprotect of pool memory failed");
	if ((p->flags & PMALLOC_POOL_SEAL) && os_have_mseal && os_seal((void *)a, b - a) < 0)
		fatal(api, "mseal of pool memory failed");
	return 0;
}

/* The spans [first, last] of a range that could not be protected: their
 * marks go back, so the next protect tries them again and nothing claims
 * to be read-only that is not. */
static size_t protect_undo(struct span *first, struct span *last)
{
	size_t undone = 0;
	for (struct span *s = first; s; s = s->next) {
		undone += atomic_load_explicit(&s->prot, memory_order_relaxed) - s->prot_before;
		atomic_store_explicit(&s->prot, s->prot_before, memory_order_release);
		if (s == last)
			break;
	}
	return undone;
}

size_t pool_protect(struct pmalloc_pool *p, const char *api)
{
	size_t fresh = 0;
	uintptr_t a = 0, b = 0;
	struct span *range_first = NULL, *range_last = NULL, *failed = NULL;
	lock_all(p);
	for (struct span *s = p->dirty; s; s = s->next) {
		size_t start = atomic_load_explicit(&s->prot, memory_order_relaxed);
		size_t end = s->is_cur ? ALIGN_UP(s->cursor, os_page_size) : s->bytes;
		s->prot_before = start;       /* what protect_undo() restores */
		if (end <= start)
			continue;
		if (s->is_cur)
			s->cursor = end;          /* the page's tail is given up */
		if (s->base + start != b) {
			if (protect_range(p, a, b, api) < 0) {
				fresh -= protect_undo(range_first, range_last);
				failed = failed ? failed : range_first;
			}
			a = s->base + start;
			range_first = s;
		}
		/* Published before the mprotect, so a fault can never find memory
		 * read-only yet not known to be protected. */
		atomic_store_explicit(&s->prot, end, memory_order_release);
		fresh += end - start;
		b = s->base + end;
		range_last = s;
	}
	if (protect_range(p, a, b, api) < 0) {
		fresh -= protect_undo(range_first, range_last);
		failed = failed ? failed : range_first;
	}
	/* The first span that may still gain unprotected bytes: a stripe's
	 * current span, or one that could not be protected. */
	struct span *dirty = NULL;
	for (struct span *s = p->dirty; s && !dirty; s = s->next)
		if (s->is_cur || s == failed || atomic_load_explicit(&s->prot, memory_order_relaxed) < s->bytes)
			dirty = s;
	p->dirty = dirty;
	if (fresh) {
		p->protected_bytes += fresh;
		p->protect_calls++;
	}
	if (failed)
		p->protect_failures++;
	unlock_all(p);
	if (failed)
		debug_printf("cannot protect all of pool \"%s\": out of memory mappings (vm.max_map_count); "
			     "will retry at the next protect", p->name);
	return fresh;
}

void pool_totals(struct pmalloc_pool *p, struct pool_totals *ret)
{
	struct pool_totals t = { 0 };
	lock_all(p);
	for (int i = 0; i < POOL_STRIPES; i++) {
		t.objects += p->stripes[i].objects;
		t.requested += p->stripes[i].requested;
		t.used += p->stripes[i].used;
	}
	t.protected_bytes = p->protected_bytes;
	t.mapped = p->mapped;
	t.protect_calls = p->protect_calls;
	t.protect_failures = p->protect_failures;
	unlock_all(p);
	*ret = t;
}

void pool_destroy(struct pmalloc_pool *p)
{
	pthread_mutex_lock(&registry_lock);
	if (p->reg_prev)
		p->reg_prev->reg_next = p->reg_next;
	else
		registry = p->reg_next;
	if (p->reg_next)
		p->reg_next->reg_prev = p->reg_prev;
	lock_all(p);
	p->magic = 0;
	bool sealed = (p->flags & PMALLOC_POOL_SEAL) && os_have_mseal;
	for (struct span *s = p->first, *next; s; s = next) {
		next = s->next;
		if (sealed && atomic_load_explicit(&s->prot, memory_order_relaxed) > 0)
			arena_span_set_owner(s, &sealed_orphans);   /* the kernel keeps it */
		else
			arena_span_release(s);
	}
	unlock_all(p);
	pthread_mutex_destroy(&p->lock);
	for (int i = 0; i < POOL_STRIPES; i++)
		pthread_mutex_destroy(&p->stripes[i].lock);
	p->reg_next = slab_free;
	slab_free = p;
	pthread_mutex_unlock(&registry_lock);
}

bool pool_lookup(const void *addr, struct pool_hit *ret)
{
	struct span *s = arena_span_of(addr);
	if (!s)
		return false;
	size_t off = (uintptr_t)addr - s->base;
	struct span_object o;
	memset(ret, 0, sizeof(*ret));
	ret->pool = atomic_load_explicit(&s->pool, memory_order_acquire);
	ret->span = s;
	ret->is_protected = off < atomic_load_explicit(&s->prot, memory_order_acquire);
	if (span_object_at(s, off, &o)) {
		ret->in_object = true;
		ret->object = s->base + o.start;
		ret->object_size = o.size;
		ret->site = o.site;
	}
	return ret->pool != NULL;
}

static struct pool_hit object_of(const void *p, const char *api)
{
	struct pool_hit hit;
	if (!pool_lookup(p, &hit) || !hit.in_object || hit.object != (uintptr_t)p)
		fatal(api, "invalid pointer into pool memory");
	return hit;
}

void pool_note_free(void *p, const char *api)
{
	struct pool_hit hit = object_of(p, api);
	atomic_fetch_add_explicit(&hit.pool->frees, 1, memory_order_relaxed);
}

size_t pool_usable_size(const void *p, const char *api)
{
	return object_of(p, api).object_size;
}

bool pool_is_protected(const void *p)
{
	/* O(1): the span and its mark, not the object. */
	struct span *s = arena_span_of(p);
	return s && (uintptr_t)p - s->base < atomic_load_explicit(&s->prot, memory_order_acquire);
}
