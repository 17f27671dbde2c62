/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_set.h - propose's learned contexts (ctl_propose_set.c): one
 * entry's counts and what they say (safe, kept enough, clean), and the set
 * the believed entries' chains are folded into.  For propose's reader
 * (ctl_propose_read.c), its command (ctl_propose.c) and its chooser
 * (ctl_propose_chain.c, which also reads the set's inside: ctl_pset.h).
 */
#ifndef PMALLOC_CTL_PROPOSE_SET_H
#define PMALLOC_CTL_PROPOSE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One learned entry's counts (PMALLOC_OBJECTS ... PMALLOC_WRITTEN).  Of
 * the frees, early_* were made before the trigger (OBJECTS less
 * PMALLOC_TRIGGER_LIVE_*) and served_objects after it; an entry without
 * the TRIGGER_LIVE fields (an older shim) counts every free as served. */
struct pcounts {
	uint64_t objects, bytes, live_objects, live_bytes, freed_objects, freed_bytes, late_objects, late_bytes;
	uint64_t early_objects, early_bytes, served_objects;
	bool written;
	/* The roles (role.h's bits) of the processes whose entries these are,
	 * and those of them in which it was not safe (pcounts_safe); 0: the
	 * entry says no role (an older shim), PROLE_UNKNOWN for pset_add. */
	uint32_t roles, dirty_roles;
};
#define PROLE_UNKNOWN (1u << 7)

/* The early and served counts of c from its entry's TRIGGER_LIVE fields
 * (has_trigger: the entry carries them). */
void pcounts_split(struct pcounts *c, bool has_trigger, uint64_t trigger_live_objects, uint64_t trigger_live_bytes);
/* Safe: never written, nothing allocated after the trigger, nothing freed
 * after it.  Kept enough: what was freed before the trigger is at most
 * PROPOSE_EARLY_RATIO times what stayed live (propose weighs it over all
 * the contexts of a frame or site: enforce's pool takes them together).
 * Clean: both, for one context. */
#define PROPOSE_EARLY_RATIO 8
bool pcounts_safe(const struct pcounts *c);
bool pcounts_kept_enough(uint64_t live_bytes, uint64_t early_bytes);
bool pcounts_clean(const struct pcounts *c);

struct pset;

struct pset *pset_new(void);
void pset_free(struct pset *s);
/* One believed entry folded in: its chain (PMALLOC_CHAIN's text) in pool,
 * with the pool's triggers.  The same chain from several processes, runs
 * or hosts: written or late if so anywhere, each count the largest seen.
 * 0, -EBADMSG for a chain that does not parse (nothing added), -ENOMEM. */
int pset_add(struct pset *s, const char *pool, const char *triggers, const char *chain, const struct pcounts *c);
size_t pset_chains(const struct pset *s);

#endif
