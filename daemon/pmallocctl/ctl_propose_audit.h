/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_audit.h - the audit reports propose leaves sites out for
 * (ctl_propose_audit.c), for propose's command (ctl_propose.c).
 */
#ifndef PMALLOC_CTL_PROPOSE_AUDIT_H
#define PMALLOC_CTL_PROPOSE_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
