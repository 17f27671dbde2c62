/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool_protect.c - a pool's memory made read-only (pool_protect), made so
 * again after a reload window (pool_reprotect), and opened in a forked
 * child (pool_reopen).
 *
 * Costs: pool_protect() changes the pool's stamp, runs one process-wide
 * barrier (see pool.h for why), then reads every region's cursor and makes
 * one mprotect per contiguous range of new spans, none when nothing is new.
 * Every list it walks is checked span by span (a corrupt one is fatal), and
 * nothing is marked read-only that its mprotect did not make so.
 *
 * Takes the pool's lock only (pool.h's order).  Never calls malloc; never
 * calls anything outside the shim with the lock held.
 */
#define _GNU_SOURCE
#include "pool.h"
#include "pool_inner.h"
#include "stderr.h"
#include "os.h"

#include <errno.h>

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
	if (pool_seals(p) && os_have_mseal && os_seal((void *)a, b - a) < 0)
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
		undone += span_prot_lo(s) - s->prot_before;
		span_set_prot(s, s->prot_before);
		if (s == last)
			break;
	}
	return undone;
}

/* Every region of p a protect reads (p's lock held): those linked into the
 * pool, then this thread's own slots bound to it, so that a list head
 * overwritten cannot hide the region of the thread that protects (a
 * trigger runs on the thread that allocated, most often).  fn(s, end). */
#define REGIONS_MAX (1u << 20)   /* a longer list is a corrupt one (a cycle) */
static bool for_each_region(struct pmalloc_pool *p, const char *api, bool (*fn)(struct span *, size_t, void *),
			    void *ctx)
{
	size_t end, n = 0;
	for (struct pool_region *r = p->regions; r; r = r->next) {
		struct span *s = pool_region_span(p, r, &end, api);
		if (s && !fn(s, end, ctx))
			return false;
		if (++n > REGIONS_MAX)
			fatal(api, "a pool's region list does not end (corrupt pool state)");
	}
	for (int i = 0; i < POOL_SLOTS; i++) {
		struct span *s = pool_tls.slot[i].pool == p ? pool_region_span(p, &pool_tls.slot[i], &end, api) : NULL;
		if (s && !fn(s, end, ctx))
			return false;
	}
	return true;
}

/* The spans of p, by age, each checked like a region's (fn false stops). */
static void for_each_span(struct pmalloc_pool *p, const char *api, bool (*fn)(struct span *, void *), void *ctx)
{
	size_t n = 0;
	for (struct span *s = p->first; s; s = s->next) {
		if (!arena_span_valid(s) || atomic_load_explicit(&s->pool, memory_order_relaxed) != p ||
		    ++n > ARENA_UNITS_MAX)
			fatal(api, "a pool's span list is corrupt");
		if (!fn(s, ctx))
			return;
	}
}

/* Where the protect of s stops: its objects' end (a region's span, or one
 * on the partial list), else all of it. */
static size_t span_protect_end(const struct span *s)
{
	/* A cursor past the span is corrupt (and would wrap when rounded up):
	 * all of it then, the safe side. */
	if (!s->is_cur || s->cursor >= s->bytes)
		return s->bytes;
	size_t end = ALIGN_UP(s->cursor, os_page_size);
	return end < s->bytes ? end : s->bytes;
}

static bool region_new(struct span *s, size_t end, void *ctx)
{
	(void)ctx;
	return end <= span_prot_lo(s);
}

static bool span_new(struct span *s, void *ctx)
{
	bool *any = ctx;
	*any = span_protect_end(s) > span_prot_lo(s);
	return !*any;
}

/* Nothing to protect (p's lock held), judged without the barrier: a cursor
 * this misses belongs to an allocation that did not happen before this
 * protect, so it may as well come after it.  Keeps a protect with nothing
 * new free of system calls (a walk over the pool's spans and regions). */
static bool nothing_new(struct pmalloc_pool *p, const char *api)
{
	bool any = false;
	for_each_span(p, api, span_new, &any);
	return !any && for_each_region(p, api, region_new, NULL);
}

static bool region_cursor(struct span *s, size_t end, void *ctx)
{
	(void)ctx;
	if (end > s->cursor)
		s->cursor = end;
	return true;
}

struct protect_run {
	struct pmalloc_pool *p;
	const char *api;
	size_t fresh;
	uintptr_t a, b;                  /* the contiguous range being gathered */
	struct span *range_first, *range_last, *failed;
};

static void run_flush(struct protect_run *pr)
{
	if (protect_range(pr->p, pr->a, pr->b, pr->api) < 0) {
		pr->fresh -= protect_undo(pr->range_first, pr->range_last);
		pr->failed = pr->failed ? pr->failed : pr->range_first;
	} else if (pr->a < pr->b) {
		/* Read-only now: the public query may say so. */
		for (struct span *s = pr->range_first; s; s = s->next) {
			atomic_store_explicit(&s->prot_done, span_prot_lo(s), memory_order_release);
			if (s == pr->range_last)
				break;
		}
	}
	pr->a = pr->b = 0;
}

static bool span_protect(struct span *s, void *ctx)
{
	struct protect_run *pr = ctx;
	size_t start = span_prot_lo(s);
	size_t end = span_protect_end(s);
	s->prot_before = start;       /* what protect_undo() restores */
	if (end <= start)
		return true;
	if (s->is_cur)
		s->cursor = end;          /* the page's tail is given up */
	if (s->base + start != pr->b) {
		run_flush(pr);
		pr->a = s->base + start;
		pr->range_first = s;
	}
	/* Published before the mprotect, so a fault can never find memory
	 * read-only yet not known to be protected. */
	span_set_prot(s, end);
	pr->fresh += end - start;
	pr->b = s->base + end;
	pr->range_last = s;
	return true;
}

/* A region's span the list walk did not reach (the pool's span list
 * overwritten): protected alone. */
static bool region_protect(struct span *s, size_t end, void *ctx)
{
	struct protect_run *pr = ctx;
	(void)end;
	if (span_protect_end(s) > span_prot_lo(s)) {
		span_protect(s, pr);
		run_flush(pr);
	}
	return true;
}

size_t pool_protect(struct pmalloc_pool *p, const char *api)
{
	struct protect_run pr = { .p = p, .api = api };
	pool_lock(p, api);
	if (nothing_new(p, api)) {
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	/* Every fast path from here on fails its stamp compare; after the
	 * barrier every cursor a fast path stored before that is visible. */
	atomic_store_explicit(&p->stamp, pool_new_stamp(), memory_order_relaxed);
	if (p->regions && os_process_barrier() < 0)
		fatal(api, "no memory barrier across threads (out of memory)");
	for_each_region(p, api, region_cursor, NULL);
	for_each_span(p, api, span_protect, &pr);
	run_flush(&pr);
	for_each_region(p, api, region_protect, &pr);
	if (pr.fresh) {
		p->protected_bytes += pr.fresh;
		p->protect_calls++;
	}
	if (pr.failed)
		p->protect_failures++;
	pthread_mutex_unlock(&p->lock);
	if (pr.failed)
		debug_printf("cannot protect all of pool \"%s\": out of memory mappings (vm.max_map_count); "
			     "will retry at the next protect", p->name);
	return pr.fresh;
}

struct reprotect_run {
	struct pmalloc_pool *p;
	const char *api;
	uintptr_t a, b;
};

static void reprotect_flush(struct reprotect_run *rr)
{
	if (rr->a < rr->b && os_protect_ro((void *)rr->a, rr->b - rr->a) < 0)
		fatal(rr->api, "cannot make pool memory read-only again");
	rr->a = rr->b = 0;
}

static bool span_reprotect(struct span *s, void *ctx)
{
	struct reprotect_run *rr = ctx;
	size_t done = atomic_load_explicit(&s->prot_done, memory_order_acquire);
	if (!done)
		return true;
	if (s->base != rr->b) {
		reprotect_flush(rr);
		rr->a = s->base;
	}
	rr->b = s->base + done;
	if (done < s->bytes)
		reprotect_flush(rr);
	return true;
}

void pool_reprotect(struct pmalloc_pool *p, const char *api)
{
	struct reprotect_run rr = { .p = p, .api = api };
	pool_lock(p, api);
	for_each_span(p, api, span_reprotect, &rr);
	reprotect_flush(&rr);
	pthread_mutex_unlock(&p->lock);
}

static bool span_reopen(struct span *s, void *ctx)
{
	size_t *reopened = ctx;
	size_t hi = span_prot_hi(s);
	if (!hi)
		return true;
	/* Out of memory mappings: this span and those after it stay
	 * read-only, as the parent made them (the marks still say so). */
	if (os_protect_rw((void *)s->base, hi) < 0)
		return false;
	/* Not protected now: the marks say so, for the fault handler, for
	 * pmalloc_is_protected() and for the next protect, which takes it
	 * all again. */
	atomic_store_explicit(&s->prot_done, 0, memory_order_release);
	span_set_prot(s, 0);
	s->prot_before = 0;
	*reopened += hi;
	return true;
}

size_t pool_reopen(struct pmalloc_pool *p)
{
	if (pool_seals(p) && os_have_mseal)
		return 0;                 /* the kernel keeps sealed memory read-only */
	size_t reopened = 0;
	pool_lock(p, "fork");
	atomic_store_explicit(&p->stamp, pool_new_stamp(), memory_order_relaxed);
	for_each_span(p, "fork", span_reopen, &reopened);
	p->protected_bytes = 0;
	pthread_mutex_unlock(&p->lock);
	return reopened;
}
