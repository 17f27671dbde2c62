/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_read.c - propose's reader: which of the entries learn mode
 * wrote about one executable (MESSAGE_ID MID_LEARNED) are read, believed
 * and used, and the tally of those left aside and why (see
 * ctl_propose_read.h).
 *
 * Which runs: each process's entries carry its learn run (PMALLOC_RUN; a
 * forked child keeps its parent's) and when the policy it got was loaded
 * (PMALLOC_POLICY_LOADED).  By default the runs of the latest load, per
 * host; --run names runs.  Entries of another build of the executable
 * (PMALLOC_EXE_BUILD_ID against the file's build-id now) are refused and
 * said: their offsets and functions belong to other code.
 *
 * Whose entries: any local process can write an entry that says
 * PMALLOC_EXE=/usr/sbin/nginx.  journald adds what the kernel says of the
 * sender: _EXE when the process still ran when it was read, and _UID.  An
 * entry whose _EXE is another program (and not pmallocd's, which names the
 * process's uid in PMALLOC_UID) is forged: not believed, counted, said.
 * Any local user can also run a world-executable program under the learn
 * policy: her entries are the program's own.  So an entry is believed only
 * when its process's uid is trusted: root's, the caller's, one named with
 * --uid, or the User= of the unit named with --unit; or when it belongs to
 * a run (PMALLOC_RUN, on the same host) that a trusted process started
 * (nginx's workers, forked by root's master, then www-data's: a run id is
 * random and only the system journal's readers see it).  Every other
 * entry is refused and counted by uid.  A believed entry could otherwise
 * leave a context out (less protection) or put one in that the program
 * writes (a kill in enforce mode).
 *
 * Owns the entries read (struct pread) and the tally.  Never writes:
 * the journal is read only, and ctl_propose.c says the tally.  An entry's
 * chain, its one large field, is read only once the entry is selected.
 */
#define _GNU_SOURCE
#include "ctl_propose_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>

#include "ctl_learned.h"
#include "ctl_propose_set.h"
#include "ctl_vio.h"
#include "msgid.h"
#include "role.h"

/* The fields of an entry read in its one walk (ctl_learned_fields). */
enum {
	F_EXE, F_UID, F_MACHINE_ID, F_HOSTNAME, F_POOL, F_TRIGGERS, F_POLICY, F_RUN, F_BUILD_ID, F_PID, F_REASON,
	F_LOADED, F_OBJECTS, F_BYTES, F_LIVE_OBJECTS, F_LIVE_BYTES, F_FREED_OBJECTS, F_FREED_BYTES, F_LATE_OBJECTS,
	F_LATE_BYTES, F_WRITTEN, F_TRIGGER_LIVE_OBJECTS, F_TRIGGER_LIVE_BYTES, F_SEQ, F_CTX, F_PROTECTED, F_SECURE_EXEC, F_ROLE,
	F_COMM, F_UNIT, F_PUID, F_N
};
static const char *const entry_fields[F_N] = {
	[F_EXE] = "_EXE", [F_UID] = "_UID", [F_MACHINE_ID] = "_MACHINE_ID", [F_HOSTNAME] = "_HOSTNAME",
	[F_POOL] = "PMALLOC_POOL", [F_TRIGGERS] = "PMALLOC_TRIGGERS", [F_POLICY] = "PMALLOC_POLICY",
	[F_RUN] = "PMALLOC_RUN", [F_BUILD_ID] = "PMALLOC_EXE_BUILD_ID", [F_PID] = "OBJECT_PID",
	[F_REASON] = "PMALLOC_LEARN_REASON", [F_LOADED] = "PMALLOC_POLICY_LOADED", [F_OBJECTS] = "PMALLOC_OBJECTS",
	[F_BYTES] = "PMALLOC_BYTES", [F_LIVE_OBJECTS] = "PMALLOC_LIVE_OBJECTS", [F_LIVE_BYTES] = "PMALLOC_LIVE_BYTES",
	[F_FREED_OBJECTS] = "PMALLOC_FREED_OBJECTS", [F_FREED_BYTES] = "PMALLOC_FREED_BYTES",
	[F_LATE_OBJECTS] = "PMALLOC_LATE_OBJECTS", [F_LATE_BYTES] = "PMALLOC_LATE_BYTES",
	[F_WRITTEN] = "PMALLOC_WRITTEN", [F_TRIGGER_LIVE_OBJECTS] = "PMALLOC_TRIGGER_LIVE_OBJECTS",
	[F_TRIGGER_LIVE_BYTES] = "PMALLOC_TRIGGER_LIVE_BYTES", [F_SEQ] = "PMALLOC_LEARN_SEQ",
	[F_CTX] = "PMALLOC_LEARN_CTX", [F_PROTECTED] = "PMALLOC_LEARN_PROTECTED",
	[F_SECURE_EXEC] = "PMALLOC_LEARN_SECURE_EXEC", [F_ROLE] = "PMALLOC_ROLE",
	[F_COMM] = "_COMM", [F_UNIT] = "_SYSTEMD_UNIT", [F_PUID] = "PMALLOC_UID",
};

/* The process uid of an entry: PMALLOC_UID when pmallocd wrote it (its
 * word, from the socket's credentials), else journald's _UID.  Sets
 * *ret_exe: 1 the executable (or pmallocd about it), 0 no _EXE, -1
 * another program. */
static bool entry_uid(char *const *v, const char *exe, uid_t *ret_uid, int *ret_exe)
{
	const char *u = v[F_UID];
	if (vio_by_pmallocd(v[F_UID], v[F_COMM], v[F_EXE], v[F_UNIT])) {
		*ret_exe = 1;
		u = v[F_PUID];
	} else {
		*ret_exe = !v[F_EXE][0] ? 0 : strcmp(v[F_EXE], exe) == 0 ? 1 : -1;
	}
	char *end = NULL;
	if (u[0] < '0' || u[0] > '9')
		return false;
	errno = 0;
	unsigned long n = strtoul(u, &end, 10);
	if (errno || *end || n >= (uid_t)-1)
		return false;
	*ret_uid = (uid_t)n;
	return true;
}

/* Every entry about exe, but its chain: the one large field, stored
 * compressed, and decompressing it costs more than the rest of the entry
 * (a journal that kept many runs holds tens of thousands of entries, of
 * which propose uses one run's).  The chains of the entries selected are
 * read after, by read_chains(). */
int propose_open_journal(const struct popts *o, sd_journal **j)
{
	if (o->directory)
		return sd_journal_open_directory(j, o->directory, 0);
	if (o->n_files) {
		const char *files[FILES_MAX + 1] = { NULL };
		memcpy(files, o->files, o->n_files * sizeof(files[0]));
		return sd_journal_open_files(j, files, 0);
	}
	return sd_journal_open(j, SD_JOURNAL_LOCAL_ONLY);
}

int propose_read_entries(const struct popts *o, const char *exe, struct pread *rd)
{
	sd_journal *j;
	char *match = NULL;
	int r = propose_open_journal(o, &j);
	if (r < 0)
		return r;
	if (asprintf(&match, "PMALLOC_EXE=%s", exe) < 0)
		match = NULL;
	if (!match || (r = sd_journal_add_match(j, "MESSAGE_ID=" MID_LEARNED, 0)) < 0 ||
	    (r = sd_journal_add_match(j, match, 0)) < 0 ||
	    /* --since: the journal read from there on, not from its head (a
	     * host's journal holds every earlier learn run: minutes to read). */
	    (r = o->since ? sd_journal_seek_realtime_usec(j, o->since) : sd_journal_seek_head(j)) < 0) {
		free(match);
		sd_journal_close(j);
		return r < 0 ? r : -ENOMEM;
	}
	rd->match = match;               /* read_chains' pass, freed with the entries */
	rd->since = o->since;
	while ((r = sd_journal_next(j)) > 0) {
		if (rd->n == rd->cap) {
			size_t cap = rd->cap ? rd->cap * 2 : 1024;
			struct pentry *t = realloc(rd->e, cap * sizeof(*t));
			if (!t) {
				r = -ENOMEM;
				break;
			}
			rd->e = t;
			rd->cap = cap;
		}
		struct pentry *e = &rd->e[rd->n];
		memset(e, 0, sizeof(*e));
		char *v[F_N];
		if ((r = ctl_learned_fields(j, entry_fields, F_N, v)) < 0)
			break;
		e->has_uid = entry_uid(v, exe, &e->uid, &e->exe);
		/* Kept (the rest are freed below). */
		e->host = v[F_MACHINE_ID][0] ? v[F_MACHINE_ID] : v[F_HOSTNAME];
		e->pool = v[F_POOL];
		e->triggers = v[F_TRIGGERS];
		e->policy = v[F_POLICY];
		e->run = v[F_RUN];
		e->build_id = v[F_BUILD_ID];
		e->pid = v[F_PID];
		e->reason = v[F_REASON];
		v[e->host == v[F_MACHINE_ID] ? F_MACHINE_ID : F_HOSTNAME] = NULL;
		v[F_POOL] = v[F_TRIGGERS] = v[F_POLICY] = v[F_RUN] = v[F_BUILD_ID] = v[F_PID] = v[F_REASON] = NULL;
		if (sd_journal_get_cursor(j, &e->cursor) < 0)
			e->cursor = NULL;
		e->loaded = ctl_learned_num(v[F_LOADED]);
		e->seq = ctl_learned_num(v[F_SEQ]);
		e->ctx = ctl_learned_num(v[F_CTX]);
		e->protected = v[F_PROTECTED][0] ? ctl_learned_num(v[F_PROTECTED]) != 0 : -1;
		e->secure_exec = ctl_learned_num(v[F_SECURE_EXEC]) != 0;
		if (sd_journal_get_realtime_usec(j, &e->usec) < 0)
			e->usec = 0;
		e->c = (struct pcounts){
			.objects = ctl_learned_num(v[F_OBJECTS]),
			.bytes = ctl_learned_num(v[F_BYTES]),
			.live_objects = ctl_learned_num(v[F_LIVE_OBJECTS]),
			.live_bytes = ctl_learned_num(v[F_LIVE_BYTES]),
			.freed_objects = ctl_learned_num(v[F_FREED_OBJECTS]),
			.freed_bytes = ctl_learned_num(v[F_FREED_BYTES]),
			.late_objects = ctl_learned_num(v[F_LATE_OBJECTS]),
			.late_bytes = ctl_learned_num(v[F_LATE_BYTES]),
			.written = ctl_learned_num(v[F_WRITTEN]) != 0,
		};
		pcounts_split(&e->c, v[F_TRIGGER_LIVE_OBJECTS][0] != '\0', ctl_learned_num(v[F_TRIGGER_LIVE_OBJECTS]),
			      ctl_learned_num(v[F_TRIGGER_LIVE_BYTES]));
		/* Its process's role: the chooser proposes per role (a role
		 * is never protected from another's entries). */
		int depth = role_depth(v[F_ROLE]);
		if (depth >= 0) {
			e->c.roles = 1u << depth;
			e->c.dirty_roles = pcounts_safe(&e->c) ? 0 : e->c.roles;
		}
		for (size_t k = 0; k < F_N; k++)
			free(v[k]);
		rd->n++;
		if (!e->host || !e->pool || !e->cursor || !e->triggers || !e->policy || !e->run || !e->build_id ||
		    !e->pid || !e->reason) {
			r = -ENOMEM;
			break;
		}
	}
	if (r < 0) {
		sd_journal_close(j);
		return r;
	}
	rd->j = j;
	return 0;
}

/* Entry e's chain, the journal at it (NULL: not found there): an entry
 * without one is left aside as an older shim's. */
static int take_chain(struct pread *rd, struct pentry *e, bool at, size_t *old_format)
{
	e->chain = at ? ctl_learned_field(rd->j, "PMALLOC_CHAIN") : strdup("");
	if (!e->chain)
		return -ENOMEM;
	if (!e->chain[0]) {
		e->selected = false;
		(*old_format)++;
	}
	return 0;
}

/* The chains of the entries selected.  One more pass of the journal in
 * the order they were read (same matches, same start), each entry
 * checked against its cursor: a seek by cursor per entry took seconds an
 * entry on a large shared journal (minutes for nginx's 5,000).  Where the
 * pass falls out of step (the journal rotated or vacuumed meanwhile), the
 * rest are found by their cursors. */
static int read_chains(struct pread *rd, size_t *old_format)
{
	size_t i = 0;
	int r;
	sd_journal_flush_matches(rd->j);
	bool walk = rd->match && sd_journal_add_match(rd->j, "MESSAGE_ID=" MID_LEARNED, 0) >= 0 &&
		    sd_journal_add_match(rd->j, rd->match, 0) >= 0 &&
		    (rd->since ? sd_journal_seek_realtime_usec(rd->j, rd->since) : sd_journal_seek_head(rd->j)) >= 0;
	for (; walk && i < rd->n && sd_journal_next(rd->j) > 0; i++) {
		struct pentry *e = &rd->e[i];
		if (!e->cursor || sd_journal_test_cursor(rd->j, e->cursor) <= 0)
			break;
		if (e->selected && (r = take_chain(rd, e, true, old_format)) < 0)
			return r;
	}
	sd_journal_flush_matches(rd->j);
	for (; i < rd->n; i++) {
		struct pentry *e = &rd->e[i];
		if (!e->selected)
			continue;
		bool at = sd_journal_seek_cursor(rd->j, e->cursor) >= 0 && sd_journal_next(rd->j) > 0 &&
			  sd_journal_test_cursor(rd->j, e->cursor) > 0;
		if ((r = take_chain(rd, e, at, old_format)) < 0)
			return r;
	}
	return 0;
}

void propose_free_entries(struct pread *rd)
{
	for (size_t i = 0; i < rd->n; i++) {
		struct pentry *e = &rd->e[i];
		free(e->pool);
		free(e->chain);
		free(e->cursor);
		free(e->triggers);
		free(e->policy);
		free(e->run);
		free(e->build_id);
		free(e->host);
		free(e->pid);
		free(e->reason);
	}
	free(rd->e);
	free(rd->match);
	rd->match = NULL;
	if (rd->j)
		sd_journal_close(rd->j);
}

bool propose_run_ok(const char *run)
{
	size_t n = strlen(run);
	return n == 32 && strspn(run, "0123456789abcdef") == n;
}

static bool uid_in(const uid_t *uids, size_t n, uid_t u)
{
	for (size_t i = 0; i < n; i++)
		if (uids[i] == u)
			return true;
	return false;
}

/* Entries of one process (host, run, pid) together, each context's
 * latest flush first. */
static int by_flush(const void *a, const void *b)
{
	const struct pentry *x = *(const struct pentry *const *)a, *y = *(const struct pentry *const *)b;
	int c = strcmp(x->host, y->host);
	if (!c)
		c = strcmp(x->run, y->run);
	if (!c)
		c = strcmp(x->pid, y->pid);
	if (!c)
		c = x->ctx < y->ctx ? -1 : x->ctx > y->ctx;
	if (!c)
		c = x->seq > y->seq ? -1 : x->seq < y->seq;
	return c;
}

static bool final_reason(const char *reason)
{
	return strcmp(reason, "exit") == 0 || strcmp(reason, "exec") == 0;
}

/* A learning process sends its contexts at its first protect, those that
 * changed every interval, and all at exit or exec, each flush numbered
 * (PMALLOC_LEARN_SEQ) with cumulative counts: only each context's latest
 * entry per process is used, the earlier ones are superseded (counted,
 * said).  A process whose latest flush was not its exit's or exec's was
 * killed (or runs still): what it learned since is missing, at most one
 * interval; one whose pools no trigger protected learned no write at all.
 * Both are counted per process.  Entries without a sequence (an older
 * shim's) are used as they are. */
static void supersede(struct pread *rd, struct ptally *t)
{
	struct pentry **v = calloc(rd->n ? rd->n : 1, sizeof(*v));
	size_t n = 0;
	if (!v)
		return;                 /* nothing superseded: the maxima are the same */
	for (size_t i = 0; i < rd->n; i++)
		if (rd->e[i].selected && rd->e[i].seq)
			v[n++] = &rd->e[i];
	qsort(v, n, sizeof(*v), by_flush);
	for (size_t i = 0; i < n;) {
		size_t k = i;
		bool final = false, protected = false, said = false, secure = false, flushed = false;
		uint64_t last_seq = 0;
		struct pentry *kept = NULL;
		/* One process: [i, k). */
		while (k < n && strcmp(v[k]->host, v[i]->host) == 0 && strcmp(v[k]->run, v[i]->run) == 0 &&
		       strcmp(v[k]->pid, v[i]->pid) == 0) {
			if (k == i || v[k]->ctx != v[k - 1]->ctx) {
				kept = v[k];    /* the context's latest entry */
				flushed = strcmp(kept->reason, "learn-flush") == 0;
			} else if (!flushed && strcmp(v[k]->reason, "learn-flush") == 0) {
				/* Its latest learn-flush (pmallocctl learn-flush
				 * while it served), superseded by a later entry (its
				 * exit's): the counts are the learn-flush's, what
				 * was written since is kept (propose_read's loop
				 * above says why).  Without this, the exit entry's
				 * counts, zeroed there, were all propose had: 0
				 * bytes live, coverage 0.0% (nginx's in make bench,
				 * whenever its exit entries reached the journal). */
				bool written = kept->c.written || v[k]->c.written;
				kept->c = v[k]->c;
				kept->c.written = written;
				kept->c.dirty_roles = pcounts_safe(&kept->c) ? 0 : kept->c.roles;
				flushed = true;
			}
			if (v[k]->seq > last_seq) {
				last_seq = v[k]->seq;
				final = final_reason(v[k]->reason);
			} else if (v[k]->seq == last_seq) {
				final |= final_reason(v[k]->reason);
			}
			protected |= v[k]->protected != 0;
			secure |= v[k]->secure_exec;
			said |= v[k]->protected >= 0;
			if (k > i && v[k]->ctx == v[k - 1]->ctx) {
				v[k]->selected = false;
				t->superseded++;
			}
			k++;
		}
		t->unfinished += !final;
		t->unprotected += said && !protected;
		t->secure_execs += secure;
		i = k;
	}
	free(v);
}

static void note_uid(uid_t *uids, size_t *n, size_t max, uid_t u)
{
	if (*n < max && !uid_in(uids, *n, u))
		uids[(*n)++] = u;
}

/* The runs (and their hosts) that trusted processes wrote entries of,
 * sorted: a lookup per entry, however many entries a stranger wrote. */
static int run_cmp(const void *a, const void *b)
{
	const struct pentry *x = *(const struct pentry *const *)a, *y = *(const struct pentry *const *)b;
	int c = strcmp(x->run, y->run);
	return c ? c : strcmp(x->host, y->host);
}

static bool run_trusted(const struct pentry *const *runs, size_t n, const struct pentry *e)
{
	return e->run[0] && bsearch(&e, runs, n, sizeof(runs[0]), run_cmp) != NULL;
}

/* Marks the entries to use (believed, this build, the runs asked or the
 * latest load's per host, since) and reads their chains; counts what was
 * left aside.  0 or -ENOMEM. */
int propose_select_entries(const struct popts *o, const char *build_id, struct pread *rd, struct ptally *t)
{
	const uid_t *trusted = o->uids;
	size_t n_trusted = o->n_uids, n_runs = 0;
	const struct pentry **runs = calloc(rd->n ? rd->n : 1, sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	for (size_t i = 0; i < rd->n; i++) {
		const struct pentry *f = &rd->e[i];
		if (f->exe >= 0 && f->has_uid && uid_in(trusted, n_trusted, f->uid) && f->run[0])
			runs[n_runs++] = f;
	}
	qsort(runs, n_runs, sizeof(runs[0]), run_cmp);
	for (size_t i = 0; i < rd->n; i++) {
		struct pentry *e = &rd->e[i];
		if (e->exe < 0) {
			t->forged++;
			continue;
		}
		if (!e->has_uid) {
			t->unbelieved++;
			continue;
		}
		if (!uid_in(trusted, n_trusted, e->uid)) {
			if (!run_trusted(runs, n_runs, e)) {
				t->stranger++;
				note_uid(t->stranger_uid, &t->n_stranger_uid, 8, e->uid);
				continue;
			}
			note_uid(t->run_uids, &t->n_run_uids, UIDS_MAX, e->uid);
		}
		if (!propose_run_ok(e->run))
			t->old_format++;
		else if (strcmp(e->build_id, build_id) != 0) {
			t->other_build++;
			t->other_id = e->build_id;
		} else if (!o->since || e->usec >= o->since)
			e->selected = true;
	}
	free(runs);
	if (o->n_runs) {
		for (size_t i = 0; i < rd->n; i++) {
			bool asked = false;
			for (size_t k = 0; k < o->n_runs && !asked; k++)
				asked = strcmp(rd->e[i].run, o->runs[k]) == 0;
			rd->e[i].selected &= asked;
		}
	} else {
		/* The latest load of the learn policy on each host: each host's
		 * latest first (one pass over the entries, the hosts being few),
		 * then the entries of earlier loads left aside.  A journal that
		 * kept many runs of the program has tens of thousands. */
		struct host_latest {
			const char *host;
			uint64_t loaded;
		} *latest = calloc(rd->n ? rd->n : 1, sizeof(*latest));   /* a host an entry at most */
		size_t n_hosts = 0;
		if (!latest)
			return -ENOMEM;
		for (size_t pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < rd->n; i++) {
				struct pentry *e = &rd->e[i];
				if (!e->selected)
					continue;
				size_t h = 0;
				while (h < n_hosts && strcmp(latest[h].host, e->host) != 0)
					h++;
				if (pass == 1)
					e->selected = e->loaded >= latest[h].loaded;
				else if (h == n_hosts)
					latest[n_hosts++] = (struct host_latest){ e->host, e->loaded };
				else if (e->loaded > latest[h].loaded)
					latest[h].loaded = e->loaded;
			}
		free(latest);
	}
	int r = read_chains(rd, &t->old_format);
	if (r < 0)
		return r;
	/* A run flushed while it served (pmallocctl learn-flush to any of its
	 * processes): what its processes freed as they shut down (nginx
	 * destroys its configuration's pools before exit()) is not counted,
	 * nor taken from what was live; what they wrote still is. */
	for (size_t i = 0; i < rd->n; i++) {
		struct pentry *e = &rd->e[i];
		if (!e->selected || strcmp(e->reason, "learn-flush") == 0)
			continue;
		for (size_t k = 0; k < rd->n; k++) {
			const struct pentry *f = &rd->e[k];
			if (f->selected && strcmp(f->reason, "learn-flush") == 0 && strcmp(f->run, e->run) == 0 &&
			    strcmp(f->host, e->host) == 0) {
				e->c.freed_objects = e->c.freed_bytes = e->c.live_objects = e->c.live_bytes = 0;
				break;
			}
		}
	}
	/* After the above, which reads the learn-flush entries that a later
	 * flush supersedes. */
	supersede(rd, t);
	for (size_t i = 0; i < rd->n; i++) {
		const struct pentry *e = &rd->e[i];
		if (!e->selected)
			continue;
		bool run_seen = false, proc_seen = false;
		for (size_t k = 0; k < i && !proc_seen; k++) {
			if (!rd->e[k].selected || strcmp(rd->e[k].run, e->run) != 0)
				continue;
			run_seen = true;
			proc_seen = strcmp(rd->e[k].pid, e->pid) == 0 && strcmp(rd->e[k].host, e->host) == 0;
		}
		t->runs += !run_seen;
		t->processes += !proc_seen;
		if (e->loaded > t->loaded)
			t->loaded = e->loaded;
	}
	return 0;
}

/* Entries of this build-id whose executable's path is empty: an older
 * shim's, in a process that had chrooted (/proc/self/exe unreadable).
 * Not used (whose they are cannot be told), counted.  After the chains
 * were read (the journal's matches are replaced). */
size_t propose_count_empty_exe(struct pread *rd, const char *build_id, uint64_t since)
{
	char *m = NULL;
	size_t n = 0;
	if (!rd->j || !build_id[0] || asprintf(&m, "PMALLOC_EXE_BUILD_ID=%s", build_id) < 0)
		return 0;
	sd_journal_flush_matches(rd->j);
	if (sd_journal_add_match(rd->j, "MESSAGE_ID=" MID_LEARNED, 0) >= 0 &&
	    sd_journal_add_match(rd->j, "PMALLOC_EXE=", 0) >= 0 && sd_journal_add_match(rd->j, m, 0) >= 0 &&
	    (since ? sd_journal_seek_realtime_usec(rd->j, since) : sd_journal_seek_head(rd->j)) >= 0) {
		uint64_t usec;
		while (sd_journal_next(rd->j) > 0)
			n += !since || (sd_journal_get_realtime_usec(rd->j, &usec) >= 0 && usec >= since);
	}
	free(m);
	return n;
}
