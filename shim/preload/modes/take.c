/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * take.c - take = "until-trigger" in enforce mode: an allocation from one
 * of a closed pool's sites (its first trigger fired) goes to the heap;
 * here it is counted per site, and said once per site in the journal
 * (MID_LATE, with PMALLOC_TAKE=late) and in pmallocctl status (the
 * site table carries the counts: rules_msg.c reads them here; the caller,
 * interpose.c, tells pmallocd when take_note_late() says so, so that this
 * file never calls the table's sender that reads it).
 *
 * Owns the per-site late counts (SITE_SLOTS of them, mapped at the first
 * late allocation).  Must never: send an allocation into a closed pool, or
 * say a site more than once per process, or send pmallocd more than
 * LATE_SENDS tables past its rate limit.  Normal context only (called from
 * malloc's slow path, never a signal handler); the first note of a site
 * reads its symbol (resolve.c's, cached) and writes one journal entry.
 * Cost of a late allocation after the first of its site: two atomic adds.
 * With every pool closed, an allocation through a wrapper is resolved to
 * its caller (an unwind) only for the first TAKE_RESOLVE_LATE through each
 * wrapper call (interpose.c); later ones go to the heap uncounted, so a
 * late site reached only through a wrapper call past that bound is not
 * said, and counts are of the resolved ones.
 */
#define _GNU_SOURCE
#include "take.h"
#include "armed.h"
#include "journal.h"
#include "os.h"
#include "site.h"

#include <stdio.h>
#include <string.h>

struct late_count {
	_Atomic uint64_t objects, bytes;
	_Atomic uint32_t resolved;        /* a wrapper call's late allocations resolved */
	_Atomic uint8_t said;
};
#define TAKE_RESOLVE_LATE 64

static struct late_count *_Atomic late;   /* [SITE_SLOTS], by site id - 1 */
#define LATE_SENDS 64
static _Atomic unsigned int sends;

static struct late_count *table(void)
{
	struct late_count *t = atomic_load_explicit(&late, memory_order_acquire);
	void *p;
	if (t || os_map_lazy(SITE_SLOTS * sizeof(*t), &p) < 0)
		return t;
	struct late_count *none = NULL;
	if (atomic_compare_exchange_strong(&late, &none, (struct late_count *)p))
		return p;
	os_unmap(p, SITE_SLOTS * sizeof(*t));
	return none;
}

enum take_tell take_note_late(size_t i, uint16_t site, size_t size)
{
	struct late_count *t = table();
	if (!t || site == SITE_NONE || site > SITE_SLOTS)
		return TAKE_TELL_NONE;
	struct late_count *c = &t[site - 1];
	atomic_fetch_add_explicit(&c->objects, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->bytes, size, memory_order_relaxed);
	if (atomic_exchange_explicit(&c->said, 1, memory_order_acq_rel))
		return TAKE_TELL_NONE;
	const struct shim_state *st = shim;
	const char *sym = site_symbol(site);
	char text[96];
	if (!sym) {
		snprintf(text, sizeof(text), "0x%lx", (unsigned long)site_address(site));
		sym = text;
	}
	int busy = shim_busy_enter();
	journal_take_late(pimg_policy_name(st->image), pimg_pool_name(st->image, i), sym);
	shim_busy_leave(busy);
	/* pmallocd's site table with the new row: now for a process's first
	 * LATE_SENDS late sites (a server's come in a burst as it starts
	 * serving; its ordinary table is sent at most once a second), then
	 * with the rate limit of the ordinary table. */
	if (atomic_fetch_add_explicit(&sends, 1, memory_order_relaxed) < LATE_SENDS)
		return TAKE_TELL_NOW;
	return TAKE_TELL_RATED;
}

bool take_all_closed(const struct shim_state *st)
{
	for (size_t i = 0; i < st->n_pools; i++)
		if (!st->pools[i].until_trigger || !pool_closed(st->pools[i].pool))
			return false;
	return true;
}

bool take_resolve_late(uint16_t id)
{
	struct late_count *t = table();
	if (!t || id == SITE_NONE || id > SITE_SLOTS)
		return true;                  /* no count to keep: resolved as before */
	struct late_count *c = &t[id - 1];
	/* A load first: past the bound, no shared line is written. */
	if (atomic_load_explicit(&c->resolved, memory_order_relaxed) >= TAKE_RESOLVE_LATE)
		return false;
	return atomic_fetch_add_explicit(&c->resolved, 1, memory_order_relaxed) < TAKE_RESOLVE_LATE;
}

bool take_late_counts(uint16_t site, uint64_t *objects, uint64_t *bytes)
{
	struct late_count *t = atomic_load_explicit(&late, memory_order_acquire);
	if (!t || site == SITE_NONE || site > SITE_SLOTS || !atomic_load(&t[site - 1].said))
		return false;
	*objects = atomic_load_explicit(&t[site - 1].objects, memory_order_relaxed);
	*bytes = atomic_load_explicit(&t[site - 1].bytes, memory_order_relaxed);
	return true;
}
