/*
 * pool.c - protectable pools: bump allocation inside spans of the arena,
 * protection of what is new, and destruction.
 *
 * Costs: an allocation takes the pool's mutex once and touches the span's
 * side metadata (two bitmap words, one site id): no system call unless a
 * new span is needed (one per 64 KiB .. 4 MiB).  pool_protect() makes one
 * mprotect per contiguous range of new spans, and none when nothing is new.
 *
 * Lock order: registry_lock, then a pool's lock, then the arena's.  No lock
 * is held while calling anything outside the shim.  Never calls malloc.
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

/* Owner of sealed spans whose pool was destroyed: the kernel keeps them. */
static struct pmalloc_pool sealed_orphans = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .index = -1, .name = "(destroyed sealed pool)",
	.flags = PMALLOC_POOL_SEAL,
};

static void atfork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next)
		pthread_mutex_lock(&p->lock);
	pthread_mutex_lock(&sealed_orphans.lock);
	arena_lock();
}

static void atfork_release(void)
{
	arena_unlock();
	pthread_mutex_unlock(&sealed_orphans.lock);
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next)
		pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&registry_lock);
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
	pthread_mutexattr_destroy(&attr);
	p->next_span_bytes = SPAN_FIRST;
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

/* Append span s to p's list; dedicated spans go before cur, which stays last. */
static void list_add(struct pmalloc_pool *p, struct span *s, bool becomes_cur)
{
	struct span *before = becomes_cur ? NULL : p->cur;
	s->next = before;
	s->prev = before ? before->prev : p->last;
	if (s->prev)
		s->prev->next = s;
	else
		p->first = s;
	if (before)
		before->prev = s;
	else
		p->last = s;
	if (becomes_cur)
		p->cur = s;
	if (!p->dirty || (!becomes_cur && p->dirty == p->cur))
		p->dirty = s;
	p->st.mapped += s->bytes;
}

static cold void *alloc_slow(struct pmalloc_pool *p, size_t need, size_t align, uint16_t site)
{
	struct span *s;
	bool dedicated = need + align > DEDICATED_MIN;
	if (!dedicated)
		while (p->next_span_bytes < need + align)
			p->next_span_bytes *= 2;
	size_t bytes = dedicated ? need + align : p->next_span_bytes;
	if (arena_span_alloc(bytes, p, &s) < 0)
		return NULL;
	list_add(p, s, !dedicated);
	if (!dedicated && p->next_span_bytes < SPAN_MAX)
		p->next_span_bytes *= 2;
	size_t off = ALIGN_UP(s->base, align) - s->base;
	s->cursor = off + need;
	span_mark(s, off, need, site);
	if (dedicated) {
		s->single_off = off;
		s->single_size = need;
		atomic_store_explicit(&s->single, true, memory_order_release);
	}
	return (void *)(s->base + off);
}

/* The fast path: one uncontended lock, a bump, three metadata stores. */
void *pool_alloc(struct pmalloc_pool *p, size_t size, size_t align, uint16_t site)
{
	size_t need = ALIGN_UP(size ? size : 1, PM_ALIGN);
	if (unlikely(need < size || need > ((size_t)1 << 46))) {
		errno = ENOMEM;
		return NULL;
	}
	void *r;
	bool capped = false;
	pthread_mutex_lock(&p->lock);
	if (unlikely(p->max_bytes && p->st.used + need > p->max_bytes)) {
		r = NULL;
		capped = true;
	} else {
		struct span *s = p->cur;
		size_t off = s ? ALIGN_UP(s->base + s->cursor, align) - s->base : 0;
		if (likely(s && off + need <= s->bytes)) {
			s->cursor = off + need;
			span_mark(s, off, need, site);
			r = (void *)(s->base + off);
		} else {
			r = alloc_slow(p, need, align, site);
		}
		if (likely(r)) {
			p->st.objects++;
			p->st.requested += size;
			p->st.used += need;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (unlikely(!r)) {
		/* Said outside the lock: write(2) is a libc call a program may wrap. */
		if (capped && !atomic_exchange(&p->capped_said, 1))
			debug_line("pool \"", p->name, "\" reached max_bytes: further allocations go to the heap");
		errno = ENOMEM;
	}
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
	pthread_mutex_lock(&p->lock);
	for (struct span *s = p->dirty; s; s = s->next) {
		size_t start = atomic_load_explicit(&s->prot, memory_order_relaxed);
		size_t end = s == p->cur ? ALIGN_UP(s->cursor, os_page_size) : s->bytes;
		s->prot_before = start;       /* what protect_undo() restores */
		if (end <= start)
			continue;
		if (s == p->cur)
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
	p->dirty = failed ? failed : p->cur;
	if (fresh) {
		p->st.protected_bytes += fresh;
		p->st.protect_calls++;
	}
	if (failed)
		p->st.protect_failures++;
	pthread_mutex_unlock(&p->lock);
	if (failed)
		debug_line("cannot protect all of pool \"", p->name,
			   "\": out of memory mappings (vm.max_map_count); will retry at the next protect");
	return fresh;
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
	pthread_mutex_lock(&p->lock);
	p->magic = 0;
	bool sealed = (p->flags & PMALLOC_POOL_SEAL) && os_have_mseal;
	for (struct span *s = p->first, *next; s; s = next) {
		next = s->next;
		if (sealed && atomic_load_explicit(&s->prot, memory_order_relaxed) > 0)
			arena_span_set_owner(s, &sealed_orphans);   /* the kernel keeps it */
		else
			arena_span_release(s);
	}
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_destroy(&p->lock);
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

void pool_for_each(void (*fn)(struct pmalloc_pool *p, void *ctx), void *ctx)
{
	pthread_mutex_lock(&registry_lock);
	for (struct pmalloc_pool *p = registry; p; p = p->reg_next)
		fn(p, ctx);
	pthread_mutex_unlock(&registry_lock);
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
