/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * site.c - the table of call sites (see site.h): open addressing over a
 * fixed mapping, inserted with one compare-and-swap, never removed, so ids
 * stay valid for the life of the process and the signal handler can read
 * them without a lock.
 *
 * Also the read-only filter of the code the policy names (site.h), which
 * a cached heap route is checked against, and beside it the byte that
 * says every pool is closed (no route needs checking then).
 *
 * Never allocates through malloc (its table comes from os_map) and never
 * blocks.
 */
#define _GNU_SOURCE
#include "site.h"
#include "stderr.h"
#include "os.h"
#include "ro.h"

#include <string.h>

/* Probes: SITE_NEAR from the home slot on, then the rest from a second
 * hash's slot anywhere in the table (site.h: why homes are few). */
#define SITE_PROBES 32
#define SITE_NEAR 16

struct site *_Atomic site_table;
/* site_table mixed with the shim's secret (os.h), written once with it:
 * what names a site in a report (site_symbol, site_address) believes the
 * table only where the two agree, so a forged table pointer cannot take
 * the fault handler's report down with it (tamper.sh: killed silently,
 * issue 27).  The allocation path reads site_table alone: a forged one
 * there faults in the program's own call, before any write. */
static _Atomic uintptr_t site_table_sealed;

static struct site *site_table_checked(void)
{
	struct site *t = __atomic_load_n(&site_table, __ATOMIC_ACQUIRE);
	uintptr_t sealed = atomic_load_explicit(&site_table_sealed, memory_order_acquire);
	return t && ((uintptr_t)t ^ os_secret) == sealed ? t : NULL;
}

/* One mapping: the slots (64 KiB, the homes in the first 16 KiB: a
 * process's sites touch fewer pages than with the symbols inline), then
 * their symbols (site_sym_of).  Only the homes' 4 pages are made present
 * at once (every process with a site reaches most of them): all of it
 * would cost every process 64 KiB resident.  Nor mapped to the zero page
 * (madvise MADV_POPULATE_READ): the copy at a page's first write costs the
 * same after it. */
#define SITE_MAP_LEN (SITE_SLOTS * (sizeof(struct site) + sizeof(struct site_sym)))

/* The table, mapped by the first caller: threads that race each map one
 * and publish with a compare-and-swap, the losers unmapping theirs.  No
 * once-control, so nothing to wait on (nor a futex wake at start-up), and
 * a fork can never leave one half done.  NULL when there is no memory. */
static struct site *site_init(void)
{
	struct site *t = __atomic_load_n(&site_table, __ATOMIC_ACQUIRE);
	void *p;
	if (t || os_map(SITE_MAP_LEN, &p) < 0)
		return t;
	/* The homes' pages written before any site is: a read first (malloc's
	 * probe) would map the zero page and the first insertion copy it, two
	 * faults a page (3.3 us here) where one write fault takes 2; and in
	 * one call where the kernel has it (4 faults took 6 us). */
	if (os_populate(p, ALIGN_UP(SITE_HOME_SLOTS * sizeof(struct site), os_page_size)) < 0)
		for (size_t off = 0; off < SITE_HOME_SLOTS * sizeof(struct site); off += os_page_size)
			((volatile char *)p)[off] = 0;
	if (__atomic_compare_exchange_n(&site_table, &t, (struct site *)p, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		atomic_store_explicit(&site_table_sealed, (uintptr_t)p ^ os_secret, memory_order_release);
		return (struct site *)p;
	}
	os_unmap(p, SITE_MAP_LEN);
	return t;
}

static struct site_sym *site_sym_of(uint16_t id)
{
	struct site *t = site_table_checked();
	if (!t || id == SITE_NONE || id > SITE_SLOTS)
		return NULL;
	return (struct site_sym *)(void *)(t + SITE_SLOTS) + (id - 1);
}

union site_policy_page site_policy __attribute__((aligned(RO_PAGE)));
static_assert(sizeof(site_policy) % RO_PAGE == 0, "the filter is whole pages");

/* Opened and closed without a flag to trust: opening what is writable
 * already, or closing it twice, is harmless.  Before its first close it is
 * the .bss it was loaded as, writable: nothing to open (a flag forged to
 * say so only makes the writes fault); nor while arming puts its first
 * close off (ro.h's held freezes: this thread's, writable until released). */
static bool policy_closed_once;

void site_policy_open(void)
{
	if (!policy_closed_once || ro_held(&site_policy, sizeof(site_policy)))
		return;
	if (os_protect_rw(&site_policy, sizeof(site_policy)) < 0)
		fatal("malloc", "cannot open the filter of the policy's sites");
}

bool site_policy_marked(uintptr_t lo, uintptr_t hi)
{
	struct site_policy_run run[2];
	size_t n = site_policy_runs(lo, hi, run);
	for (size_t k = 0; k < n; k++)
		if (memchr(site_policy.granule + run[k].at, 0, run[k].n))
			return false;
	return true;
}

void site_policy_mark(uintptr_t lo, uintptr_t hi)
{
	struct site_policy_run run[2];
	size_t n = site_policy_runs(lo, hi, run);
	for (size_t k = 0; k < n; k++)
		memset(site_policy.granule + run[k].at, 1, run[k].n);
}

/* The byte mask of 8 granules from their 8 bits: 0xff where a bit is set.
 * Bit i of b lands in byte i (b times 0x0101.. copies b into each byte,
 * the mask keeps bit i of byte i), then a set byte becomes 0xff. */
static inline uint64_t keep_mask8(uint64_t b)
{
	uint64_t x = (b * UINT64_C(0x0101010101010101)) & UINT64_C(0x8040201008040201);
	uint64_t h = (x + UINT64_C(0x7f7f7f7f7f7f7f7f)) & UINT64_C(0x8080808080808080);
	return (h >> 7) * 0xffu;
}

/* Eight granules a step where they are aligned.  A kept byte is stored
 * back as it was, never cleared on the way: a reader sees it marked
 * throughout. */
void site_policy_unmark(uintptr_t lo, uintptr_t hi, const uint64_t *keep)
{
	struct site_policy_run run[2];
	size_t n = site_policy_runs(lo, hi, run);
	for (size_t k = 0; k < n; k++) {
		size_t g = run[k].at, end = run[k].at + run[k].n;
		for (; g < end && g % 8; g++)
			if (!(keep[g / 64] >> (g % 64) & 1))
				site_policy.granule[g] = 0;
		for (; g + 8 <= end; g += 8) {
			/* A whole keep word at once where it is all or nothing:
			 * most of an object's code holds no rule's function
			 * (python3's 16,000 granules, 39,000 instructions a
			 * byte-mask step at a time). */
			uint64_t kw = keep[g / 64];
			if (g % 64 == 0 && g + 64 <= end && (kw == 0 || kw == ~UINT64_C(0))) {
				if (kw == 0)
					memset(site_policy.granule + g, 0, 64);
				g += 56;
				continue;
			}
			uint64_t w;
			memcpy(&w, site_policy.granule + g, 8);
			w &= keep_mask8(kw >> (g % 64) & 0xffu);
			memcpy(site_policy.granule + g, &w, 8);
		}
		for (; g < end; g++)
			if (!(keep[g / 64] >> (g % 64) & 1))
				site_policy.granule[g] = 0;
	}
}

void site_policy_mark_closed(void)
{
	site_policy.closed = 1;
}

void site_policy_close(void)
{
	policy_closed_once = true;
	if (ro_freeze(&site_policy, sizeof(site_policy)) < 0)
		fatal("malloc", "cannot make the filter of the policy's sites read-only");
}

/* The filter's pages holding the bytes of return addresses [lo, hi): the
 * pages of their one run, or the whole filter when they fold around its
 * end; *len 0 when there are none. */
static void range_pages(uintptr_t lo, uintptr_t hi, void **p, size_t *len)
{
	struct site_policy_run run[2];
	size_t n = site_policy_runs(lo, hi, run);
	*p = &site_policy;
	*len = n == 0 ? 0 : sizeof(site_policy);
	if (n != 1)
		return;
	uintptr_t a = (uintptr_t)(site_policy.granule + run[0].at) & ~(uintptr_t)(os_page_size - 1);
	uintptr_t b = ALIGN_UP((uintptr_t)(site_policy.granule + run[0].at + run[0].n), os_page_size);
	*p = (void *)a;
	*len = b - a;
}

void site_policy_open_range(uintptr_t lo, uintptr_t hi)
{
	void *p;
	size_t len;
	if (!policy_closed_once || ro_held(&site_policy, sizeof(site_policy)))
		return;
	range_pages(lo, hi, &p, &len);
	if (len && os_protect_rw(p, len) < 0)
		fatal("malloc", "cannot open the filter of the policy's sites");
}

void site_policy_close_range(uintptr_t lo, uintptr_t hi)
{
	void *p;
	size_t len;
	if (!policy_closed_once || ro_held(&site_policy, sizeof(site_policy))) {
		site_policy_close();       /* never closed yet, or its freeze put off: all of it */
		return;
	}
	range_pages(lo, hi, &p, &len);
	if (len && os_protect_ro(p, len) < 0)
		fatal("malloc", "cannot make the filter of the policy's sites read-only");
}

/* The filter's pages of [lo, hi) through the page(s) at next, which lie
 * right after the filter; *len 0 when there is no granule. */
static void joint_pages(uintptr_t lo, uintptr_t hi, const void *next, size_t next_len, void **p, size_t *len)
{
	range_pages(lo, hi, p, len);
	if (*len)
		*len = (size_t)((const char *)next + next_len - (const char *)*p);
}

bool site_policy_open_range_next(uintptr_t lo, uintptr_t hi, void *next, size_t next_len)
{
	void *p;
	size_t len;
	if (!policy_closed_once || ro_held(&site_policy, sizeof(site_policy)) ||
	    (const char *)next != (const char *)&site_policy + sizeof(site_policy) || next_len == 0)
		return false;
	joint_pages(lo, hi, next, next_len, &p, &len);
	if (len == 0)
		return false;
	if (os_protect_rw(p, len) < 0)
		fatal("malloc", "cannot open the filter of the policy's sites");
	return true;
}

void site_policy_close_range_next(uintptr_t lo, uintptr_t hi, void *next, size_t next_len)
{
	void *p;
	size_t len;
	joint_pages(lo, hi, next, next_len, &p, &len);
	if (len && os_protect_ro(p, len) < 0)
		fatal("malloc", "cannot make the filter of the policy's sites read-only");
}

struct site *site_arm(void)
{
	return site_init();
}

uint16_t site_id(uintptr_t ra)
{
	struct site *t = __atomic_load_n(&site_table, __ATOMIC_ACQUIRE);
	if (unlikely(!t)) {
		t = site_init();
		if (!t)
			return SITE_NONE;
	}
	/* An address the slot cannot hold is decided at every call. */
	if (ra == 0 || site_word_ra(site_word(ra, SITE_ROUTE_UNKNOWN)) != ra)
		return SITE_NONE;
	uint32_t h = site_hash(ra);
	uint32_t far = (uint32_t)(((uint64_t)ra * UINT64_C(0xC2B2AE3D27D4EB4F)) >> (64 - SITE_BITS));
	for (uint32_t i = 0; i < SITE_PROBES; i++) {
		uint32_t k = (i < SITE_NEAR ? h + i : far + (i - SITE_NEAR)) & (SITE_SLOTS - 1);
		struct site *s = &t[k];
		uint64_t cur = atomic_load_explicit(&s->w, memory_order_acquire);
		if (likely(site_word_ra(cur) == ra))
			return (uint16_t)(k + 1);
		if (cur == 0) {
			uint64_t expected = 0;
			if (atomic_compare_exchange_strong(&s->w, &expected, site_word(ra, SITE_ROUTE_UNKNOWN)) ||
			    site_word_ra(expected) == ra)
				return (uint16_t)(k + 1);
		}
	}
	return SITE_NONE;
}

static struct site *site_get(uint16_t id)
{
	struct site *t = __atomic_load_n(&site_table, __ATOMIC_ACQUIRE);
	if (!t || id == SITE_NONE || id > SITE_SLOTS)
		return NULL;
	return &t[id - 1];
}

struct site_hit site_lookup_slow(uintptr_t ra)
{
	uint16_t id = site_id(ra);
	/* A full table caches nothing more: such a site is decided at every
	 * call (slower, never wrong). */
	return (struct site_hit){ id == SITE_NONE ? SITE_ROUTE_UNKNOWN : site_route(id), id };
}

uintptr_t site_address(uint16_t id)
{
	struct site *t = site_table_checked();
	if (!t || id == SITE_NONE || id > SITE_SLOTS)
		return 0;
	return site_word_ra(atomic_load_explicit(&t[id - 1].w, memory_order_acquire));
}

int site_route(uint16_t id)
{
	struct site *s = site_get(id);
	return s ? site_word_route(atomic_load_explicit(&s->w, memory_order_acquire)) : SITE_ROUTE_HEAP;
}

/* The slot's address never changes once set: only its route is rewritten. */
void site_set_route(uint16_t id, int route)
{
	struct site *s = site_get(id);
	uint64_t w = s ? atomic_load_explicit(&s->w, memory_order_acquire) : 0;
	if (w)
		atomic_store_explicit(&s->w, site_word(site_word_ra(w), route), memory_order_release);
}

void site_reset_routes(void)
{
	struct site *t = __atomic_load_n(&site_table, __ATOMIC_ACQUIRE);
	if (!t)
		return;
	struct site_sym *syms = (struct site_sym *)(void *)(t + SITE_SLOTS);
	for (uint32_t i = 0; i < SITE_SLOTS; i++) {
		uint64_t w = atomic_load_explicit(&t[i].w, memory_order_relaxed);
		if (w) {
			atomic_store_explicit(&t[i].w, site_word(site_word_ra(w), SITE_ROUTE_UNKNOWN),
					      memory_order_release);
			atomic_store_explicit(&syms[i].sym_ready, 0, memory_order_release);
		}
	}
}

const char *site_symbol(uint16_t id)
{
	struct site_sym *s = site_sym_of(id);
	return s && atomic_load_explicit(&s->sym_ready, memory_order_acquire) ? s->sym : NULL;
}

void site_set_symbol(uint16_t id, const char *sym)
{
	struct site_sym *s = site_sym_of(id);
	if (!s || atomic_load_explicit(&s->sym_ready, memory_order_acquire))
		return;
	size_t n = strnlen(sym, SITE_SYM - 1);
	memcpy(s->sym, sym, n);
	s->sym[n] = '\0';
	atomic_store_explicit(&s->sym_ready, 1, memory_order_release);
}
