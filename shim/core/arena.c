/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
#include "stderr.h"
#include "dlist.h"
#include "hooks.h"
#include "os.h"
#include "ro.h"
#include "site.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>


static pthread_mutex_t arena_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Where the side tables are, read-only in units_ro (arena.h): a pointer
 * redirected would answer "pool memory, not protected" for any address. */
#define unit_head (units_ro.m.unit_head)
#define spans (units_ro.m.spans)
#define n_units (units_ro.m.n_units)
static uint32_t next_unit;               /* units [next_unit, n_units) were never used */
static char *side;                       /* ARENA_SIDE bytes (arena.h), set once by arena_init */
static _Atomic size_t side_used;
static struct span *free_runs;           /* released spans, coalesced */

/* The range and the unit map (arena.h). */
union arena_ro_page units_ro __attribute__((aligned(RO_PAGE)));

#define HUGE ARENA_HUGE                             /* a transparent huge page */
#define HUGE_UNITS ((uint32_t)(HUGE >> ARENA_UNIT_SHIFT))

static_assert(PM_ALIGN == 1u << ARENA_GRANULE_SHIFT, "one record granule per alignment granule");
static_assert(REC_START_SHIFT == 32 && REC_SIZE_SHIFT == 16 && SITE_BITS <= 16, "record layout");

int arena_init(size_t extra, void **extra_mem)
{
	extra = ALIGN_UP(extra, os_page_size);
	/* 32 GiB of address space, less where the system refuses (ulimit -v). */
	for (size_t size = (size_t)32 << 30; size >= (size_t)256 << 20; size /= 2) {
		void *res;
		uint32_t units = (uint32_t)(size >> ARENA_UNIT_SHIFT);
		void *heads, *sp;
		size_t heads_len = ALIGN_UP(units * sizeof(*unit_head), os_page_size);
		size_t spans_len = ALIGN_UP(units * sizeof(struct span), os_page_size);
		if (os_reserve(size + HUGE, &res) < 0)
			continue;
		/* 2 MiB-aligned, so that a span of whole huge pages can be.  The
		 * slack around stays reserved, address space and no memory:
		 * trimming it would cost every process a system call or two. */
		void *p = (void *)ALIGN_UP((uintptr_t)res, HUGE);
		/* Writable at once, present only where touched: one call for the
		 * caller's extra (first), the side space and the two. */
		void *m;
		if (os_map_lazy(extra + ARENA_SIDE + heads_len + spans_len, &m) < 0) {
			os_unmap(res, size + HUGE);
			continue;
		}
		heads = (char *)m + extra + ARENA_SIDE;
		sp = (char *)heads + heads_len;
		unit_head = heads;
		spans = sp;
		n_units = units;
		/* Published with the page's freeze: no pool object exists yet,
		 * so a free() that sees the range before its check is switched
		 * on (the hook, at the first span) has no pool pointer to misroute.
		 * Arming's first pool puts the freeze off to its neighbours' (ro.h:
		 * the fault handler's pages follow); a span marked meanwhile on
		 * another thread (an API pool's) opens the map under arena_mutex,
		 * which the put-off freeze takes. */
		units_ro.m.base = (uintptr_t)p;
		units_ro.m.size = size;
		if (ro_freeze_locked(&units_ro, sizeof(units_ro), arena_lock, arena_unlock) < 0) {
			units_ro.m.size = 0;
			os_unmap(m, extra + ARENA_SIDE + heads_len + spans_len);
			os_unmap(res, size + HUGE);
			break;
		}
		__atomic_store_n(&side, (char *)m + extra, __ATOMIC_RELEASE);
		*extra_mem = m;
		return 0;
	}
	return -ENOMEM;
}

void *arena_side_take(size_t len)
{
	char *base = __atomic_load_n(&side, __ATOMIC_ACQUIRE);
	len = ALIGN_UP(len, os_page_size);
	if (!base || len > ARENA_SIDE)
		return NULL;
	size_t at = atomic_fetch_add(&side_used, len);
	if (at > ARENA_SIDE - len)
		return NULL;             /* used up (what was added stays counted: nothing fits after it) */
	return base + at;
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
	DLIST_UNLINK(free_runs, r, prev, next);
	r->free_run = false;
}

static void free_list_push(uint32_t first, uint32_t units)
{
	struct span *r = &spans[first];
	memset(r, 0, sizeof(*r));
	r->first_unit = first;
	r->bytes = (size_t)units << ARENA_UNIT_SHIFT;
	r->free_run = true;
	DLIST_PUSH(free_runs, r, prev, next);
	/* The last unit names the run's first, so a left neighbour can find it. */
	spans[first + units - 1].first_unit = first;
}

/* Units for a new span, aligned to align units: first fit in the free
 * runs, else fresh ones; what alignment skips stays free. */
static int take_units(uint32_t units, uint32_t align, uint32_t *ret)
{
	for (struct span *r = free_runs; r; r = r->next) {
		uint32_t have = (uint32_t)(r->bytes >> ARENA_UNIT_SHIFT);
		uint32_t first = r->first_unit, at = (uint32_t)ALIGN_UP(first, align);
		if (at - first >= have || have - (at - first) < units)
			continue;
		free_list_remove(r);
		if (at > first)
			free_list_push(first, at - first);
		if (have - (at - first) > units)
			free_list_push(at + units, have - (at - first) - units);
		*ret = at;
		return 0;
	}
	uint32_t at = (uint32_t)ALIGN_UP(next_unit, align);
	if (at < next_unit || n_units - at < units)
		return -ENOMEM;
	if (at > next_unit)
		free_list_push(next_unit, at - next_unit);
	*ret = at;
	next_unit = at + units;
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

/* Mark units [first, first + units) as a live span's (on) or not, and as
 * an interposition pool's (interposed) or not, opening the map's pages for
 * the change only; 0 or -ENOMEM (out of memory mappings), nothing changed
 * then.  arena_mutex held.  Two mprotects of one page per span (64 KiB to
 * 4 MiB of objects): a 512 KiB malloc from a policy site took 5.6 us
 * instead of 5.3 (median of 6 runs); API pools' spans pay them too since
 * the live bits (issue 27), about 0.3 us per span. */
static int mark_units(uint32_t first, uint32_t units, bool on, bool interposed)
{
	uintptr_t lo = (uintptr_t)&units_ro.m.bits[first / 64] & ~(uintptr_t)(RO_PAGE - 1);
	uintptr_t hi = ALIGN_UP((uintptr_t)&units_ro.m.bits[(first + units - 1) / 64][1] + 8, RO_PAGE);
	int r = os_protect_rw((void *)lo, hi - lo);
	if (r < 0)
		return r == -ENOMEM ? r : -ENOMEM;
	for (uint32_t u = first; u < first + units; u++) {
		uint64_t bit = UINT64_C(1) << (u % 64);
		if (on) {
			units_ro.m.bits[u / 64][1] |= bit;
			if (interposed)
				units_ro.m.bits[u / 64][0] |= bit;
		} else {
			units_ro.m.bits[u / 64][0] &= ~bit;
			units_ro.m.bits[u / 64][1] &= ~bit;
		}
	}
	if (os_protect_ro((void *)lo, hi - lo) < 0)
		fatal("malloc", "cannot make the arena's unit map read-only again");
	return 0;
}

/* Is any unit of [first, first + units) a live span's?  From the read-only
 * map only.  At span hand-out (not per object): a word per 64 units. */
static bool units_live(uint32_t first, uint32_t units)
{
	for (uint32_t u = first; u < first + units; u++)
		if (units_ro.m.bits[u / 64][1] >> (u % 64) & 1)
			return true;
	return false;
}

bool arena_interposed(const void *p)
{
	uintptr_t off = (uintptr_t)p - units_ro.m.base;
	if (off >= units_ro.m.size)
		return false;
	size_t u = off >> ARENA_UNIT_SHIFT;
	return units_ro.m.bits[u / 64][0] >> (u % 64) & 1;
}

static size_t meta_len(size_t bytes)
{
	return ALIGN_UP((bytes >> ARENA_GRANULE_SHIFT) * sizeof(uint64_t), os_page_size);
}

int arena_span_alloc(size_t bytes, bool single, bool interposed, struct pmalloc_pool *pool, struct span **ret)
{
	if (arena_size == 0 || bytes == 0 || bytes > arena_size)
		return -ENOMEM;
	/* Told once, before the first span's memory can be handed out (the
	 * range is published already, with the page's freeze): in the shim,
	 * free() and realloc() check for pool pointers from then on.  Not at
	 * the reservation: a policy's pools that never get an object (none of
	 * its rules resolves here) leave free() its 2 instructions. */
	static _Atomic bool told;
	if (unlikely(!atomic_load_explicit(&told, memory_order_acquire))) {
		void (*reserved)(void) = __atomic_load_n(&core_hook.arena_on_reserve, __ATOMIC_SEQ_CST);
		if (reserved) {
			reserved();
			atomic_store(&told, true);
		}
	}
	bytes = ALIGN_UP(bytes, ARENA_UNIT);
	uint32_t units = (uint32_t)(bytes >> ARENA_UNIT_SHIFT), first;
	void *meta = NULL;
	size_t mlen = single ? 0 : meta_len(bytes);
	/* From the side space while it lasts (a process's first spans: no
	 * mmap of their own); unmapped at release all the same, a hole the
	 * side space never hands out again. */
	int r = 0;
	if (mlen && !(meta = arena_side_take(mlen)))
		r = os_map_lazy(mlen, &meta);
	if (r < 0)
		return r;

	/* Huge pages only for spans of 2 MiB and more: a pool grows its spans
	 * from 64 KiB, so a small pool never pays 2 MiB of resident memory. */
	bool huge = bytes >= HUGE;
	pthread_mutex_lock(&arena_mutex);
	r = take_units(units, huge ? HUGE_UNITS : 1, &first);
	/* The free list and next_unit are writable words: what they hand out
	 * is checked against the read-only live map before it is made
	 * writable, or one write (next_unit = 0, a free run over a live span)
	 * would reopen protected memory.  Nothing may go on: fatal. */
	if (r == 0 && (first >= n_units || units > n_units - first || units_live(first, units)))
		fatal("malloc", "the arena handed out memory of a live span (corrupt pool state)");
	if (r == 0) {
		uintptr_t base = arena_base + ((uintptr_t)first << ARENA_UNIT_SHIFT);
		r = os_commit((void *)base, bytes);
		if (r == 0) {
			r = mark_units(first, units, true, interposed);
			if (r < 0)
				os_decommit((void *)base, bytes);
		}
		if (r < 0) {
			give_units(first, units);
		} else {
			if (huge)
				os_advise_huge((void *)base, bytes & ~(HUGE - 1));
			struct span *s = &spans[first];
			memset(s, 0, sizeof(*s));
			s->base = base;
			s->bytes = bytes;
			s->first_unit = first;
			s->recs = meta;
			s->rec_next = meta;
			s->meta_bytes = mlen;
			atomic_store_explicit(&s->pool, pool, memory_order_release);
			set_heads(first, units, first + 1);
			*ret = s;
		}
	}
	pthread_mutex_unlock(&arena_mutex);
	if (r < 0) {
		if (meta)
			os_unmap(meta, mlen);
		return r == -ENOMEM ? r : -ENOMEM;
	}
	return 0;
}

void arena_span_release(struct span *s)
{
	uint32_t first = s->first_unit, units = (uint32_t)(s->bytes >> ARENA_UNIT_SHIFT);
	void *meta = s->recs;
	size_t mlen = s->meta_bytes;

	pthread_mutex_lock(&arena_mutex);
	atomic_store_explicit(&s->pool, NULL, memory_order_release);
	set_heads(first, units, 0);
	if (!units_live(first, 1))
		fatal("pmalloc_destroy_pool", "a span to release is no live span (corrupt pool state)");
	if (mark_units(first, units, false, false) < 0)
		fatal("pmalloc_destroy_pool", "cannot release pool memory (out of memory mappings)");
	if (os_decommit((void *)s->base, s->bytes) < 0)
		fatal("pmalloc_destroy_pool", "cannot release pool memory");
	give_units(first, units);
	pthread_mutex_unlock(&arena_mutex);
	if (meta)
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

bool arena_span_valid(const struct span *s)
{
	uintptr_t off = (uintptr_t)s - (uintptr_t)spans;
	if (!spans || off >= (size_t)n_units * sizeof(*s) || off % sizeof(*s) != 0)
		return false;
	/* Its place in the table says where its memory is: base and size
	 * (writable words) must agree, or a protect would cover other memory. */
	uint32_t u = (uint32_t)(off / sizeof(*s));
	return atomic_load_explicit(&unit_head[u], memory_order_acquire) == u + 1 &&
	       s->base == arena_base + ((uintptr_t)u << ARENA_UNIT_SHIFT) && s->bytes != 0 &&
	       s->bytes % ARENA_UNIT == 0 && s->bytes <= ((size_t)(n_units - u) << ARENA_UNIT_SHIFT);
}

bool span_object_at(const struct span *s, size_t off, struct span_object *ret)
{
	if (off >= s->bytes)
		return false;
	/* A span of its own for one large object: O(1). */
	if (atomic_load_explicit(&s->single, memory_order_acquire)) {
		if (off < s->single_off || off - s->single_off >= s->single_size)
			return false;
		ret->start = s->single_off;
		ret->size = s->single_size;
		ret->site = s->single_site;
		return true;
	}
	if (!s->recs)
		return false;
	/* The last record starting at or before g: the records are sorted by
	 * start and end in zeros (read as "after everything"); one written
	 * while we search is an object we may or may not see, either is right. */
	uint32_t g0 = (uint32_t)(s->base >> ARENA_GRANULE_SHIFT);
	size_t g = off >> ARENA_GRANULE_SHIFT, lo = 0, hi = s->bytes >> ARENA_GRANULE_SHIFT;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t r = __atomic_load_n(&s->recs[mid], __ATOMIC_ACQUIRE);
		if (r != 0 && (uint32_t)((uint32_t)(r >> REC_START_SHIFT) - g0) <= g)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	uint64_t r = __atomic_load_n(&s->recs[lo - 1], __ATOMIC_ACQUIRE);
	size_t gs = (uint32_t)((uint32_t)(r >> REC_START_SHIFT) - g0);
	size_t n = (size_t)(r >> REC_SIZE_SHIFT) & REC_MAX_GRANULES;
	if (g >= gs + n)
		return false;       /* padding, or a page tail given up */
	ret->start = gs << ARENA_GRANULE_SHIFT;
	ret->size = n << ARENA_GRANULE_SHIFT;
	ret->site = (uint16_t)r;
	return true;
}
