/*
 * arena.c - the reservation all pool memory comes from, its spans, and the
 * side metadata that says where objects are (see arena.h for the layout).
 *
 * Why one reservation: it makes "is this pool memory?" a range check, the
 * question free() asks on every call of the host program.  The reservation
 * is PROT_NONE and MAP_NORESERVE: it costs address space, not memory.
 *
 * Never calls malloc (it runs inside the host's malloc) and takes only
 * arena_mutex, which is never held while calling out of this file except
 * into os.c.  Lookups (arena_span_of, span_object_at) take no lock and are
 * async-signal-safe: they read words written before the span was published.
 */
#define _GNU_SOURCE
#include "arena.h"
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

uintptr_t arena_base;
size_t arena_size;

static pthread_mutex_t arena_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;
static int arena_init_result;
static _Atomic uint32_t *unit_head;     /* per unit: index of its span's first unit + 1; 0: none */
static struct span *spans;               /* per unit; only the first unit of a span is used */
static uint32_t n_units, next_unit;      /* units [next_unit, n_units) were never used */
static struct span *free_runs;           /* released spans, coalesced */

static_assert(PM_ALIGN == 1u << ARENA_GRANULE_SHIFT, "one bitmap bit per alignment granule");

static void arena_do_init(void)
{
	/* 32 GiB of address space, less where the system refuses (ulimit -v). */
	for (size_t size = (size_t)32 << 30; size >= (size_t)256 << 20; size /= 2) {
		void *p;
		uint32_t units = (uint32_t)(size >> ARENA_UNIT_SHIFT);
		void *heads, *sp;
		size_t heads_len = ALIGN_UP(units * sizeof(*unit_head), os_page_size);
		size_t spans_len = ALIGN_UP(units * sizeof(struct span), os_page_size);
		if (os_reserve(size, &p) < 0)
			continue;
		if (os_reserve(heads_len, &heads) < 0 || os_commit(heads, heads_len) < 0 ||
		    os_reserve(spans_len, &sp) < 0 || os_commit(sp, spans_len) < 0) {
			os_unmap(p, size);
			continue;
		}
		unit_head = heads;
		spans = sp;
		n_units = units;
		arena_base = (uintptr_t)p;
		__atomic_store_n(&arena_size, size, __ATOMIC_RELEASE);
		return;
	}
	arena_init_result = -ENOMEM;
}

int arena_init(void)
{
	pthread_once(&arena_once, arena_do_init);
	return arena_init_result;
}

void arena_lock(void)
{
	pthread_mutex_lock(&arena_mutex);
}

void arena_unlock(void)
{
	pthread_mutex_unlock(&arena_mutex);
}

static void set_heads(uint32_t first, uint32_t units, uint32_t value)
{
	for (uint32_t u = first; u < first + units; u++)
		atomic_store_explicit(&unit_head[u], value, memory_order_release);
}

static void free_list_remove(struct span *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		free_runs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->free_run = false;
}

static void free_list_push(uint32_t first, uint32_t units)
{
	struct span *r = &spans[first];
	memset(r, 0, sizeof(*r));
	r->first_unit = first;
	r->bytes = (size_t)units << ARENA_UNIT_SHIFT;
	r->free_run = true;
	r->next = free_runs;
	if (free_runs)
		free_runs->prev = r;
	free_runs = r;
	/* The last unit names the run's first, so a left neighbour can find it. */
	spans[first + units - 1].first_unit = first;
}

/* Units for a new span: first fit in the free runs, else fresh ones. */
static int take_units(uint32_t units, uint32_t *ret)
{
	for (struct span *r = free_runs; r; r = r->next) {
		uint32_t have = (uint32_t)(r->bytes >> ARENA_UNIT_SHIFT);
		if (have < units)
			continue;
		uint32_t first = r->first_unit;
		free_list_remove(r);
		if (have > units)
			free_list_push(first + units, have - units);
		*ret = first;
		return 0;
	}
	if (n_units - next_unit < units)
		return -ENOMEM;
	*ret = next_unit;
	next_unit += units;
	return 0;
}

static void give_units(uint32_t first, uint32_t units)
{
	/* Coalesce with free neighbours so the free list stays short. */
	if (first + units < next_unit && spans[first + units].free_run) {
		struct span *r = &spans[first + units];
		units += (uint32_t)(r->bytes >> ARENA_UNIT_SHIFT);
		free_list_remove(r);
	}
	if (first > 0) {
		struct span *l = &spans[spans[first - 1].first_unit];
		if (l->free_run && l->first_unit + (l->bytes >> ARENA_UNIT_SHIFT) == first) {
			first = l->first_unit;
			units += (uint32_t)(l->bytes >> ARENA_UNIT_SHIFT);
			free_list_remove(l);
		}
	}
	if (first + units == next_unit)
		next_unit = first;
	else
		free_list_push(first, units);
}

static size_t meta_len(size_t bytes)
{
	size_t granules = bytes >> ARENA_GRANULE_SHIFT;
	return ALIGN_UP(2 * (granules / 8) + granules * sizeof(uint16_t), os_page_size);
}

int arena_span_alloc(size_t bytes, struct pmalloc_pool *pool, struct span **ret)
{
	if (arena_size == 0 || bytes == 0 || bytes > arena_size)
		return -ENOMEM;
	bytes = ALIGN_UP(bytes, ARENA_UNIT);
	uint32_t units = (uint32_t)(bytes >> ARENA_UNIT_SHIFT), first;
	void *meta;
	size_t mlen = meta_len(bytes);
	int r = os_map(mlen, &meta);
	if (r < 0)
		return r;

	pthread_mutex_lock(&arena_mutex);
	r = take_units(units, &first);
	if (r == 0) {
		uintptr_t base = arena_base + ((uintptr_t)first << ARENA_UNIT_SHIFT);
		r = os_commit((void *)base, bytes);
		if (r < 0) {
			give_units(first, units);
		} else {
			struct span *s = &spans[first];
			memset(s, 0, sizeof(*s));
			s->base = base;
			s->bytes = bytes;
			s->first_unit = first;
			s->starts = meta;
			s->ends = s->starts + (bytes >> ARENA_GRANULE_SHIFT) / 64;
			s->sites = (uint16_t *)(s->ends + (bytes >> ARENA_GRANULE_SHIFT) / 64);
			s->meta_bytes = mlen;
			atomic_store_explicit(&s->pool, pool, memory_order_release);
			set_heads(first, units, first + 1);
			*ret = s;
		}
	}
	pthread_mutex_unlock(&arena_mutex);
	if (r < 0) {
		os_unmap(meta, mlen);
		return r == -ENOMEM ? r : -ENOMEM;
	}
	return 0;
}

void arena_span_release(struct span *s)
{
	uint32_t first = s->first_unit, units = (uint32_t)(s->bytes >> ARENA_UNIT_SHIFT);
	void *meta = s->starts;
	size_t mlen = s->meta_bytes;

	pthread_mutex_lock(&arena_mutex);
	atomic_store_explicit(&s->pool, NULL, memory_order_release);
	set_heads(first, units, 0);
	if (os_decommit((void *)s->base, s->bytes) < 0)
		fatal("pmalloc_destroy_pool", "cannot release pool memory");
	give_units(first, units);
	pthread_mutex_unlock(&arena_mutex);
	os_unmap(meta, mlen);
}

void arena_span_set_owner(struct span *s, struct pmalloc_pool *pool)
{
	atomic_store_explicit(&s->pool, pool, memory_order_release);
}

struct span *arena_span_of(const void *p)
{
	if (!arena_contains(p))
		return NULL;
	uint32_t u = (uint32_t)(((uintptr_t)p - arena_base) >> ARENA_UNIT_SHIFT);
	uint32_t h = atomic_load_explicit(&unit_head[u], memory_order_acquire);
	if (h == 0)
		return NULL;
	struct span *s = &spans[h - 1];
	if (!atomic_load_explicit(&s->pool, memory_order_acquire))
		return NULL;
	return s;
}

/* Bitmap words are written by the owner under its lock and read by anyone:
 * relaxed atomics keep both sides well-defined without a locked instruction. */
static inline void bit_set(uint64_t *map, size_t g)
{
	uint64_t w = __atomic_load_n(&map[g / 64], __ATOMIC_RELAXED);
	__atomic_store_n(&map[g / 64], w | (UINT64_C(1) << (g % 64)), __ATOMIC_RELAXED);
}

void span_mark(struct span *s, size_t off, size_t len, uint16_t site)
{
	size_t g0 = off >> ARENA_GRANULE_SHIFT;
	size_t g1 = (off + len - 1) >> ARENA_GRANULE_SHIFT;
	bit_set(s->starts, g0);
	bit_set(s->ends, g1);
	__atomic_store_n(&s->sites[g0], site, __ATOMIC_RELAXED);
}

bool span_object_at(const struct span *s, size_t off, struct span_object *ret)
{
	if (off >= s->bytes)
		return false;
	/* A span of its own for one large object: O(1), no bitmap walk. */
	if (atomic_load_explicit(&s->single, memory_order_acquire)) {
		if (off < s->single_off || off - s->single_off >= s->single_size)
			return false;
		ret->start = s->single_off;
		ret->size = s->single_size;
		ret->site = __atomic_load_n(&s->sites[s->single_off >> ARENA_GRANULE_SHIFT], __ATOMIC_RELAXED);
		return true;
	}
	/* Otherwise at most a span's worth of words (4 MiB: 4096 each way). */
	size_t g = off >> ARENA_GRANULE_SHIFT;
	size_t w = g / 64;
	/* The last object start at or before g ... */
	uint64_t bits = __atomic_load_n(&s->starts[w], __ATOMIC_RELAXED) & (~UINT64_C(0) >> (63 - g % 64));
	while (bits == 0) {
		if (w == 0)
			return false;
		bits = __atomic_load_n(&s->starts[--w], __ATOMIC_RELAXED);
	}
	size_t gs = w * 64 + 63 - (size_t)__builtin_clzll(bits);
	/* ... and the first object end at or after that start. */
	size_t words = (s->bytes >> ARENA_GRANULE_SHIFT) / 64;
	w = gs / 64;
	bits = __atomic_load_n(&s->ends[w], __ATOMIC_RELAXED) & (~UINT64_C(0) << (gs % 64));
	while (bits == 0) {
		if (++w >= words)
			return false;
		bits = __atomic_load_n(&s->ends[w], __ATOMIC_RELAXED);
	}
	size_t ge = w * 64 + (size_t)__builtin_ctzll(bits);
	if (g > ge)
		return false;       /* padding between objects */
	ret->start = gs << ARENA_GRANULE_SHIFT;
	ret->size = (ge - gs + 1) << ARENA_GRANULE_SHIFT;
	ret->site = __atomic_load_n(&s->sites[gs], __ATOMIC_RELAXED);
	return true;
}
