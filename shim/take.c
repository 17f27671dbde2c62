/*
 * take.c - take = "until-trigger" in enforce mode: an allocation from one
 * of a closed pool's sites (its first trigger fired) goes to the heap;
 * here it is counted per site, and said once per site in the journal
 * (MID_LATE, with PMALLOC_TAKE=late) and in pmallocctl status (the
 * site table carries the counts: rules_msg.c).
 *
 * Owns the per-site late counts (SITE_SLOTS of them, mapped at the first
 * late allocation).  Must never: send an allocation into a closed pool, or
 * say a site more than once per process, or send pmallocd more than
 * LATE_SENDS tables past its rate limit.  Normal context only (called from
 * malloc's slow path, never a signal handler); the first note of a site
 * reads its symbol (resolve.c's, cached) and writes one journal entry.
 * Cost of a late allocation after the first of its site: two atomic adds.
 */
#define _GNU_SOURCE
#include "shim.h"
#include "journal.h"
#include "os.h"
#include "rules_msg.h"
#include "site.h"

#include <stdio.h>
#include <string.h>

struct late_count {
	_Atomic uint64_t objects, bytes;
	_Atomic uint8_t said;
};

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

void take_note_late(size_t i, uint16_t site, size_t size)
{
	struct late_count *t = table();
	if (!t || site == SITE_NONE || site > SITE_SLOTS)
		return;
	struct late_count *c = &t[site - 1];
	atomic_fetch_add_explicit(&c->objects, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->bytes, size, memory_order_relaxed);
	if (atomic_exchange_explicit(&c->said, 1, memory_order_acq_rel))
		return;
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
		rules_msg_answer();
	else
		rules_msg_send(RULES_MSG_SITES);
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
