/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * repeat.h - the same event again and again from new processes of one
 * executable: a crash loop (a worker killed by its violation at every
 * respawn is a new process each time, so the per-process rate limit of
 * journal.h never holds it back).  Per executable and site (policy, pool
 * and the faulting instruction as module+offset), the entries of the first REPEAT_FIRST
 * processes of a run are written (each process held by the per-process
 * limit alone); those of the processes after them are not, and one
 * summary entry per interval (MID_DROPPED, PMALLOC_DROPPED_KIND=repeat)
 * says how many there were, from how many processes, the interval
 * doubling while it goes on
 * (report_interval_s up to REPEAT_INTERVAL_MAX_S); an interval with none
 * ends the run.  Nothing is lost from the counts: every one is counted in
 * a summary (or in status, for the process).
 */
#ifndef PMALLOCD_REPEAT_H
#define PMALLOCD_REPEAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "wire.h"

#define REPEAT_FIRST 10                  /* processes of a run whose entries are written */
#define REPEAT_INTERVAL_MAX_S 600        /* the back-off's longest interval */
#define REPEAT_KEYS 256                  /* sites followed at once; the stalest goes */

enum repeat_kind { REPEAT_VIOLATION };    /* the kinds summarised (PMALLOC_REPEAT_OF) */

struct repeat_site;
struct proc_entry;

struct repeats {
	sd_event *event;
	struct repeat_site *sites;       /* REPEAT_KEYS of them, allocated at first use */
	unsigned int base_s;             /* report_interval_s in force; 0: off */
	uint64_t summarised;             /* entries counted in summaries, for status */
};

void repeats_init(struct repeats *r, sd_event *event);
/* Writes the summaries still due and frees everything. */
void repeats_done(struct repeats *r);
/* The first interval (the policy file's report_interval_s; 0 turns this
 * limit off, as it does the others). */
void repeats_set_interval(struct repeats *r, unsigned int interval_s);

/* May the entry of this kind about e be written?  rep is the report (for
 * a violation), policy and pool as escaped for the journal.  false: it is
 * counted for the site's next summary. */
bool repeat_admit(struct repeats *r, enum repeat_kind kind, const struct proc_entry *e,
		  const struct pmw_report *rep, const char *policy, const char *pool);

#endif
