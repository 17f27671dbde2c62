/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_read.h - propose's reader (ctl_propose_read.c), for its
 * command (ctl_propose.c): the options that say which entries, the entries
 * read, which are selected, and the tally of the others.
 */
#ifndef PMALLOC_CTL_PROPOSE_READ_H
#define PMALLOC_CTL_PROPOSE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-journal.h>

#include "ctl_propose_set.h"

#define UIDS_MAX 64
#define RUNS_MAX 64
#define FILES_MAX 64

struct pentry {
	char *pool, *chain, *triggers, *policy, *run, *build_id, *host, *pid, *reason;
	char *cursor;                /* where it is in the journal: its chain is read once it is selected */
	uid_t uid;
	bool has_uid;
	int exe;                     /* _EXE: 1 the executable, 0 absent, -1 another program */
	uint64_t loaded, usec;
	uint64_t seq, ctx;           /* PMALLOC_LEARN_SEQ, _CTX: 0 for an older shim's entry */
	int protected;               /* PMALLOC_LEARN_PROTECTED: 1, 0, -1 absent */
	bool secure_exec;            /* PMALLOC_LEARN_SECURE_EXEC: the exec that followed ran without the shim */
	struct pcounts c;
	bool selected;
};

struct popts {
	const char *exe_arg, *output, *directory;
	const char *files[FILES_MAX + 1];    /* NULL-terminated, as sd_journal_open_files() takes them */
	size_t n_files;
	const char *runs[RUNS_MAX];
	size_t n_runs;
	uid_t uids[UIDS_MAX];
	size_t n_uids;
	uint64_t since;
	const char *mode;            /* "audit" (the default) or "enforce" */
	const char *unit;            /* --unit: its User= is trusted */
};

struct pread {
	struct pentry *e;
	size_t n, cap;
	sd_journal *j;               /* open until the chains are read */
};

/* What was read, what was not believed or refused, and why. */
struct ptally {
	size_t read, forged, unbelieved, stranger, other_build, old_format, bad_chain, used, runs, processes;
	size_t earlier;                  /* of other loads of the learn policy, other runs, before --since */
	size_t superseded;               /* a later flush of the same process and context says more */
	size_t unfinished;               /* processes whose last flush was not at exit or exec */
	size_t unprotected;              /* processes none of whose pools a trigger protected */
	size_t secure_execs;             /* processes that exec'd a program the loader ran without the shim */
	size_t empty_exe;                /* entries of this build-id without an executable's path */
	uid_t stranger_uid[8];       /* the first few refused uids, to say */
	size_t n_stranger_uid;
	const char *other_id;
	uint64_t loaded;
	uid_t run_uids[UIDS_MAX];    /* uids seen in trusted runs (a service's workers) */
	size_t n_run_uids;
};

/* The journal propose reads: --directory, --file, or the local one. */
int propose_open_journal(const struct popts *o, sd_journal **j);
/* Every entry about exe into rd, but their chains (read once selected);
 * rd keeps the journal open.  0 or a negative errno. */
int propose_read_entries(const struct popts *o, const char *exe, struct pread *rd);
/* Marks the entries to use and reads their chains, counting the others in
 * t.  0 or -ENOMEM. */
int propose_select_entries(const struct popts *o, const char *build_id, struct pread *rd, struct ptally *t);
/* Entries of build_id without an executable's path (an older shim in a
 * chroot): counted, never used.  After propose_select_entries(). */
size_t propose_count_empty_exe(struct pread *rd, const char *build_id, uint64_t since);
void propose_free_entries(struct pread *rd);
/* A run id as the shim writes it: 32 lower-case hex digits. */
bool propose_run_ok(const char *run);

#endif
