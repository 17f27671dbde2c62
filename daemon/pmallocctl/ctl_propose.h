/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose.h - between propose's reader (ctl_propose.c: which entries
 * are believed, which runs) and its chooser (ctl_propose_chain.c: contexts,
 * the frame choice, coverage, the pool text).  Private to those two files.
 */
#ifndef PMALLOC_CTL_PROPOSE_H
#define PMALLOC_CTL_PROPOSE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

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
/* Chooses sites and wrappers for every pool, then writes the pools list's
 * elements ("{ ... }" each, comments first, separated by commas) to f and
 * the coverage of all pools to total (comment lines); sites holding fewer
 * than min_live bytes are left out (and said).  Returns the number of
 * pools written.  May be called again (with another min_live). */
size_t pset_render(struct pset *s, uint64_t min_live, FILE *f, FILE *total);
/* After a render: the contexts whose site is site ("function+0xOFF" or
 * "object+0xOFF", a violation's PMALLOC_OBJECT_SITE) are taken as written,
 * so that the next render leaves that site out.  The number of contexts
 * so marked (0: no proposed site is it). */
size_t pset_leave_out(struct pset *s, const char *site);

/* A site written in audit mode: its writes, by function. */
struct paudit {
	char *site, *symbol;         /* PMALLOC_OBJECT_SITE, the writer (ctl_audit_writer; the first seen) */
	uint64_t writes;             /* reports, plus the counts of writes not reported again */
	size_t processes;
	char *last_pid;
	size_t contexts;             /* learned contexts left out for it */
};

struct paudits {
	struct paudit *a;
	size_t n;
	size_t forged, stranger, other_build, used;
};

struct sd_journal;
/* The audit-mode violations of exe in j (its matches are its own after):
 * believed (pmallocd's, or the process's own with _EXE exe; of a uid in
 * uids or run_uids, those seen in trusted learn runs), of build build_id,
 * from since (µs, 0: all), folded by site into au.  0 or a negative errno. */
int paudit_read(struct sd_journal *j, const char *exe, const char *build_id, uint64_t since, const uid_t *uids,
		size_t n_uids, const uid_t *run_uids, size_t n_run_uids, struct paudits *au);
/* What was read and refused, on stderr. */
void paudit_say(const struct paudits *au, const char *exe);
void paudit_free(struct paudits *au);

#endif
