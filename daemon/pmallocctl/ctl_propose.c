/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose.c - pmallocctl propose: from the contexts learn mode wrote to
 * the journal (MESSAGE_ID MID_LEARNED, one entry per pool and context per
 * process) to the enforce policy of one executable.
 *
 * Owns which entries are read and believed; the choice of sites and the
 * pool text are ctl_propose_chain.c's, the file edit ctl_conf_merge.c's.
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
 * Refine from audit (ctl_propose_audit.c reads them): violation entries of
 * the executable in audit mode
 * (MESSAGE_ID MID_VIOLATION, PMALLOC_MODE=audit), believed by the same rule
 * (their writer pmallocd or the process itself; the uid trusted or one seen
 * in a trusted run), name the site that allocated the object written
 * (PMALLOC_OBJECT_SITE, "function+0xOFF").  That site is left out of the
 * proposal (ctl_propose_chain.c's pset_leave_out) and a comment names the
 * writing function and how often.  A write by another build of the
 * executable (its PMALLOC_FAULT_BUILD_ID where the executable wrote, or a
 * frame of the executable in PMALLOC_BACKTRACE of another build-id) is
 * refused like a learned entry of it.
 *
 * Reads the journal only; writes stdout or --output.
 */
#define _GNU_SOURCE
#include "role.h"
#include "ctl.h"
#include "msgid.h"
#include "ctl_buildid.h"
#include "ctl_conf_merge.h"
#include "ctl_escape.h"
#include "ctl_learned.h"
#include "ctl_quote.h"
#include "ctl_time.h"
#include "ctl_util.h"
#include "ctl_root.h"
#include "ctl_unit_env.h"
#include "policy_lint.h"
#include "ctl_propose.h"
#include "ctl_vio.h"
#include "policy_image.h"
#include "wire.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#define UIDS_MAX 64
#define RUNS_MAX 64
#define FILES_MAX 64
#define BUILD_ID_HEX (2 * 64 + 1)

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
static int open_journal(const struct popts *o, sd_journal **j)
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

static int read_entries(const struct popts *o, const char *exe, struct pread *rd)
{
	sd_journal *j;
	char *match = NULL;
	int r = open_journal(o, &j);
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
	free(match);
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

/* The chains of the entries selected; an entry that has none (or is gone
 * from the journal since) is left aside as an older shim's. */
static int read_chains(struct pread *rd, size_t *old_format)
{
	for (size_t i = 0; i < rd->n; i++) {
		struct pentry *e = &rd->e[i];
		if (!e->selected)
			continue;
		if (sd_journal_seek_cursor(rd->j, e->cursor) < 0 || sd_journal_next(rd->j) <= 0 ||
		    sd_journal_test_cursor(rd->j, e->cursor) <= 0)
			e->chain = strdup("");
		else
			e->chain = ctl_learned_field(rd->j, "PMALLOC_CHAIN");
		if (!e->chain)
			return -ENOMEM;
		if (!e->chain[0]) {
			e->selected = false;
			(*old_format)++;
		}
	}
	return 0;
}

static void free_entries(struct pread *rd)
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
	if (rd->j)
		sd_journal_close(rd->j);
}

static bool run_ok(const char *run)
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
		bool final = false, protected = false, said = false, secure = false;
		uint64_t last_seq = 0;
		/* One process: [i, k). */
		while (k < n && strcmp(v[k]->host, v[i]->host) == 0 && strcmp(v[k]->run, v[i]->run) == 0 &&
		       strcmp(v[k]->pid, v[i]->pid) == 0) {
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
static int select_entries(const struct popts *o, const char *build_id, struct pread *rd, struct ptally *t)
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
		if (!run_ok(e->run))
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
static size_t count_empty_exe(struct pread *rd, const char *build_id, uint64_t since)
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

/* The count of entries, one line: read, used, and each reason not to. */
static void put_counts(FILE *f, const char *prefix, const struct ptally *t)
{
	fprintf(f, "%sentries read %zu: used %zu, superseded by a later flush %zu, of other runs or loads or "
		   "before --since %zu, another build %zu, not believed %zu, older format %zu, unreadable chain %zu\n",
		   prefix, t->read, t->used, t->superseded, t->earlier, t->other_build, t->forged + t->unbelieved + t->stranger,
		   t->old_format, t->bad_chain);
	if (t->empty_exe)
		fprintf(f, "%sand %zu entries of this build-id without the executable's path (an older shim in a "
			   "chroot): not used\n", prefix, t->empty_exe);
}

/* What the processes' entries say of their delivery and their trigger. */
static void put_processes(FILE *f, const char *prefix, const struct ptally *t)
{
	if (t->unfinished)
		fprintf(f, "%s%zu of the processes sent no entry at exit or exec (killed by a signal, or running "
			   "still): what they learned after their last flush (at most PMALLOC_LEARN_INTERVAL, 10 s by "
			   "default) is missing\n", prefix, t->unfinished);
	if (t->unprotected)
		fprintf(f, "%s%zu of the processes never had a pool protected by a trigger: they learned no write, "
			   "and their contexts are proposed only where other processes' entries agree\n", prefix,
			t->unprotected);
}

static void put_secure(FILE *f, const char *prefix, const struct ptally *t)
{
	if (t->secure_execs)
		fprintf(f, "%s%zu of the processes exec'd a program in secure mode (set-user-ID, set-group-ID or "
			   "file capabilities; PMALLOC_LEARN_EXEC names it): the loader ignored LD_PRELOAD, it ran "
			   "without the shim and learned nothing\n", prefix, t->secure_execs);
}

static void say_tally(const struct ptally *t, const char *exe, const char *build_id)
{
	put_secure(stderr, CTL_NAME ": propose: ", t);
	put_counts(stderr, CTL_NAME ": propose: ", t);
	put_processes(stderr, CTL_NAME ": propose: ", t);
	if (t->forged)
		fprintf(stderr, CTL_NAME ": propose: %zu entries not believed: written by processes that were not "
				"running %s (journald's _EXE)\n", t->forged, exe);
	if (t->unbelieved)
		fprintf(stderr, CTL_NAME ": propose: %zu entries not believed: the journal does not say their "
				"process's uid\n", t->unbelieved);
	if (t->stranger) {
		fprintf(stderr, CTL_NAME ": propose: %zu entries refused: runs of %s by uid", t->stranger, exe);
		for (size_t i = 0; i < t->n_stranger_uid; i++)
			fprintf(stderr, "%s%u", i ? ", " : " ", (unsigned)t->stranger_uid[i]);
		fprintf(stderr, ", not root, yours, one given with --uid or the --unit's User= (another user's "
				"runs decide nothing for yours)\n");
	}
	if (t->other_build) {
		fprintf(stderr, CTL_NAME ": propose: %zu entries refused: another build of %s (build-id ", t->other_build,
			exe);
		ctl_put_str(stderr, t->other_id[0] ? t->other_id : "none", 0);
		fprintf(stderr, "; the file's now: %s)\n", build_id[0] ? build_id : "none");
	}
	if (t->old_format)
		fprintf(stderr, CTL_NAME ": propose: %zu entries without a call chain or run id ignored (an older "
				"shim's learning)\n", t->old_format);
	if (t->bad_chain)
		fprintf(stderr, CTL_NAME ": propose: %zu entries with a call chain that does not parse ignored\n",
			t->bad_chain);
}

static void count_warning(void *ctx, int line, const char *msg)
{
	fprintf(stderr, CTL_NAME ": propose: line %d: %s\n", line, msg);
	(*(size_t *)ctx)++;
}

/* --unit UNIT: the User= of its files (on this system) is trusted; a unit
 * without User= runs as root, trusted already.  -1, or the exit status. */
static int unit_user(const char *arg, struct popts *o)
{
	char unit[256];
	int root_fd, r;
	struct ctl_unit_env env;
	if (snprintf(unit, sizeof(unit), "%s%s", arg, strchr(arg, '.') ? "" : ".service") >= (int)sizeof(unit) ||
	    strchr(arg, '/'))
		return ctl_usage_error("--unit takes a unit name, not", arg);
	if ((r = ctl_root_open("", &root_fd)) < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot open /: %s\n", strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	r = ctl_unit_env_read(root_fd, unit, NULL, &env);
	close(root_fd);
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read unit %s: %s\n", unit, strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	if (!env.fragment) {
		ctl_unit_env_free(&env);
		fprintf(stderr, CTL_NAME ": propose: no unit file for %s\n", unit);
		return CTL_EXIT_FAILURE;
	}
	if (env.user) {
		const struct passwd *pw = getpwnam(env.user);
		char *end;
		errno = 0;
		unsigned long u = pw ? pw->pw_uid : strtoul(env.user, &end, 10);
		if (!pw && (errno || end == env.user || *end || u >= (uid_t)-1)) {
			fprintf(stderr, CTL_NAME ": propose: %s: User=", unit);
			ctl_put_str(stderr, env.user, 0);
			fprintf(stderr, " is no user of this system\n");
			ctl_unit_env_free(&env);
			return CTL_EXIT_FAILURE;
		}
		if (o->n_uids < UIDS_MAX)
			o->uids[o->n_uids++] = (uid_t)u;
	}
	ctl_unit_env_free(&env);
	return -1;
}

static int parse_args(int argc, char **argv, struct popts *o)
{
	int c, ret;
	o->uids[o->n_uids++] = 0;
	if (getuid() != 0)
		o->uids[o->n_uids++] = getuid();
	opterr = 0;
	while ((c = ctl_getopt(argc, argv, "propose", &ret)) != -1) {
		switch (c) {
		case CTL_OPT_UID: {
			const struct passwd *pw = getpwnam(optarg);
			char *end;
			unsigned long u;
			errno = 0;
			u = pw ? pw->pw_uid : strtoul(optarg, &end, 10);
			if (!pw && (errno || end == optarg || *end || u >= (uid_t)-1 || optarg[0] == '-'))
				return ctl_usage_error("--uid takes a user name or number, not", optarg);
			if (o->n_uids == UIDS_MAX)
				return ctl_usage_error("too many --uid:", optarg);
			o->uids[o->n_uids++] = (uid_t)u;
			break;
		}
		case CTL_OPT_RUN:
			if (!run_ok(optarg))
				return ctl_usage_error("--run takes a run id (32 lower-case hex digits), not", optarg);
			if (o->n_runs == RUNS_MAX)
				return ctl_usage_error("too many --run:", optarg);
			o->runs[o->n_runs++] = optarg;
			break;
		case 'e':
			o->exe_arg = optarg;
			break;
		case 'S':
			if (ctl_parse_time(optarg, ctl_now_usec(), &o->since) < 0)
				return ctl_usage_error("invalid --since", optarg);
			break;
		case CTL_OPT_OUTPUT_FILE:
			o->output = optarg;
			break;
		case 'D':
			o->directory = optarg;
			break;
		case CTL_OPT_FILE:
			if (o->n_files == FILES_MAX)
				return ctl_usage_error("too many --file:", optarg);
			o->files[o->n_files++] = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "audit") != 0 && strcmp(optarg, "enforce") != 0)
				return ctl_usage_error("--mode takes audit or enforce, not", optarg);
			o->mode = optarg;
			break;
		case CTL_OPT_UNIT:
			o->unit = optarg;
			break;
		}
	}
	if (ret >= 0)
		return ret;
	if (optind < argc)
		return ctl_usage_error("unexpected argument", argv[optind]);
	if (!o->exe_arg)
		return ctl_usage_error("--exe PATH is required", NULL);
	if (o->directory && o->n_files)
		return ctl_usage_error("--directory and --file exclude each other", NULL);
	if (!o->mode)
		o->mode = "audit";
	if (o->unit) {
		int r = unit_user(o->unit, o);
		if (r >= 0)
			return r;
	}
	return -1;
}

/* The policy element: header comments, the executable, the pools. */
static int render(struct pset *set, uint64_t min_live, const char *exe, const char *build_id, const char *policy,
		  const struct ptally *t, const struct paudits *au, const char *mode, char **ret, size_t *ret_pools)
{
	char *pools = NULL, *total = NULL, *text = NULL;
	size_t pl = 0, tl = 0, len = 0;
	FILE *p = open_memstream(&pools, &pl), *q = open_memstream(&total, &tl);
	if (!p || !q) {
		if (p)
			fclose(p);
		if (q)
			fclose(q);
		free(pools);
		free(total);
		return -ENOMEM;
	}
	*ret_pools = pset_render(set, min_live, p, q);
	fclose(p);
	fclose(q);
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		free(pools);
		free(total);
		return -ENOMEM;
	}
	fprintf(f, "{\n    # Proposed by pmallocctl propose from %zu learned contexts (%zu entries,\n"
		   "    # %zu runs, %zu processes) of ", pset_chains(set), t->used, t->runs, t->processes);
	ctl_conf_quote(f, exe);
	fputs(", build-id ", f);
	ctl_conf_quote(f, build_id[0] ? build_id : "none");
	fputs(".\n", f);
	put_counts(f, "    # ", t);
	put_processes(f, "    # ", t);
	put_secure(f, "    # ", t);
	fputs("    # In total:\n", f);
	fputs(total, f);
	for (size_t i = 0; i < au->n; i++) {
		const struct paudit *a = &au->a[i];
		fputs(a->contexts ? "    # Left out after audit: the site " : "    # Written in audit, no site proposed: ", f);
		ctl_conf_quote(f, a->site);
		fputs(", written by ", f);
		ctl_conf_quote(f, a->symbol);
		fprintf(f, " %" PRIu64 " times in %zu processes", a->writes, a->processes);
		if (a->contexts)
			fprintf(f, " (%zu contexts)", a->contexts);
		fputs(".\n", f);
	}
	if (strcmp(mode, "audit") == 0)
		fputs("    # mode = \"audit\": a write to protected memory is reported once per site\n"
		      "    # and process and let through.  pmallocctl ready says when it is time for\n"
		      "    # pmallocctl propose --mode enforce.\n", f);
	fputs("    # Each pool takes what its sites allocate until its trigger and none\n"
	      "    # after (take = \"until-trigger\"): a path learning did not see goes to\n"
	      "    # the heap, never to protected memory.\n"
	      "    name = ", f);
	ctl_conf_quote(f, policy);
	fputs(";\n    match = { exe = [ ", f);
	ctl_conf_quote(f, exe);
	fprintf(f, " ]; };\n    mode = \"%s\";\n    pools = (%s\n    );\n  }", mode, pools);
	free(pools);
	free(total);
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	return 0;
}

/* The policy's name: the learn policy's, else the program's file name
 * made a name. */
static void policy_name(const struct pread *rd, const char *exe, char *out, size_t len)
{
	for (size_t i = rd->n; i-- > 0;)
		if (rd->e[i].selected && ctl_conf_ident(rd->e[i].policy, out, len))
			return;
	const char *b = strrchr(exe, '/');
	ctl_conf_ident(b ? b + 1 : exe, out, len);
	if (!out[0])
		snprintf(out, len, "proposed");
}

int ctl_cmd_propose(int argc, char **argv)
{
	struct popts o = { 0 };
	int ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	char exe[PATH_MAX], build_id[BUILD_ID_HEX];
	if (!realpath(o.exe_arg, exe)) {
		fprintf(stderr, CTL_NAME ": propose: ");
		ctl_put_str(stderr, o.exe_arg, 0);
		fprintf(stderr, ": %s\n", strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	int r = ctl_file_build_id(exe, build_id, sizeof(build_id));
	if (r < 0 && r != -ENOEXEC) {
		fprintf(stderr, CTL_NAME ": propose: %s: %s\n", exe, strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	struct pread rd = { 0 };
	struct ptally t = { 0 };
	struct paudits au = { 0 };
	struct pset *set = pset_new();
	char *text = NULL, *whole = NULL;
	int status = CTL_EXIT_FAILURE;
	r = set ? read_entries(&o, exe, &rd) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read the journal: %s\n", strerror(-r));
		goto out;
	}
	r = select_entries(&o, build_id, &rd, &t);
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read the journal: %s\n", strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < rd.n; i++) {
		if (!rd.e[i].selected)
			continue;
		r = pset_add(set, rd.e[i].pool, rd.e[i].triggers, rd.e[i].chain, &rd.e[i].c);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			rd.e[i].selected = false;
			t.bad_chain++;
		} else {
			t.used++;
		}
	}
	t.read = rd.n;
	t.empty_exe = count_empty_exe(&rd, build_id, o.since);
	{
		size_t accounted = t.forged + t.unbelieved + t.stranger + t.other_build + t.old_format + t.bad_chain +
				   t.used + t.superseded;
		t.earlier = t.read > accounted ? t.read - accounted : 0;
	}
	say_tally(&t, exe, build_id);
	sd_journal *aj = NULL;
	r = open_journal(&o, &aj);
	if (r >= 0) {
		r = paudit_read(aj, exe, build_id, o.since, o.uids, o.n_uids, t.run_uids, t.n_run_uids, &au);
		sd_journal_close(aj);
	}
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read the journal's audit reports: %s\n", strerror(-r));
		goto out;
	}
	paudit_say(&au, exe);
	if (au.n && t.used) {
		/* A choice tells each context's site; those audit saw written
		 * are then taken as written.  Until no more are: the next choice
		 * (other wrappers) may name a written site's function again,
		 * by a context whose site was another function before. */
		for (size_t round = 0, marked = 1; marked && round < 16; round++) {
			char *scratch = NULL;
			size_t len = 0;
			FILE *sf = open_memstream(&scratch, &len);
			if (!sf)
				goto out;
			pset_render(set, 0, sf, sf);
			fclose(sf);
			free(scratch);
			marked = 0;
			for (size_t i = 0; i < au.n; i++) {
				size_t m = pset_leave_out(set, au.a[i].site);
				au.a[i].contexts += m;
				marked += m;
			}
		}
	}
	for (size_t k = 0; k < o.n_runs; k++) {
		bool found = false;
		for (size_t i = 0; i < rd.n && !found; i++)
			found = rd.e[i].selected && strcmp(rd.e[i].run, o.runs[k]) == 0;
		if (!found)
			fprintf(stderr, CTL_NAME ": propose: run %s: no entry of %s to use\n", o.runs[k], exe);
	}
	if (t.used == 0) {
		fprintf(stderr, CTL_NAME ": propose: nothing learned for %s to use (run it under the policy "
				"pmallocctl learn writes first)\n", exe);
		goto out;
	}
	char name[256];
	size_t pools = 0;
	policy_name(&rd, exe, name, sizeof(name));
	/* pmallocd hands a policy out in one message: a program with many
	 * contexts gets its smallest sites left out until it fits. */
	for (uint64_t min_live = 0;; min_live = min_live ? min_live * 2 : 16) {
		struct policy_set *ps = NULL;
		char err[POLICY_ERR_MAX];
		void *img = NULL;
		size_t img_len = 0, warnings = 0;
		free(text);
		free(whole);
		text = whole = NULL;
		r = render(set, min_live, exe, build_id, name, &t, &au, o.mode, &text, &pools);
		if (r < 0)
			goto out;
		if (pools == 0) {
			/* The message first, as every other; then what was learned,
			 * a commented policy that says why each context was left out. */
			fprintf(stderr, CTL_NAME ": propose: no context of %s can be protected without being "
					"written; what was learned:\n", exe);
			fputs(text, stderr);
			goto out;
		}
		/* Checked whole, as pmallocctl check would, before anything is written. */
		if (asprintf(&whole, "# Proposed by pmallocctl propose; pmallocctl check FILE validates it.\n"
				     "version = 1;\npolicies = (\n  %s\n);\n", text) < 0) {
			whole = NULL;
			goto out;
		}
		if (policy_set_load_string(whole, "proposal", &ps, err, sizeof(err)) < 0) {
			fprintf(stderr, CTL_NAME ": propose: the proposal does not load (a bug): %s\n", err);
			goto out;
		}
		policy_lint(ps, count_warning, &warnings);
		r = policy_image_compile(ps, &ps->policies[0], &img, &img_len);
		free(img);
		policy_set_free(ps);
		if (warnings)
			goto out;
		if (r == 0 && img_len <= PMW_MAX_MSG - sizeof(struct pmw_policy))
			break;
		if (r < 0 && r != -E2BIG) {
			fprintf(stderr, CTL_NAME ": propose: the proposal does not compile (a bug): %s\n", strerror(-r));
			goto out;
		}
		if (min_live > UINT64_MAX / 4) {
			fprintf(stderr, CTL_NAME ": propose: the proposal does not fit what pmallocd hands out\n");
			goto out;
		}
	}
	if (o.output) {
		if (ctl_conf_put_policy(o.output, exe, text, "propose") == 0)
			status = CTL_EXIT_OK;
	} else {
		fputs(whole, stdout);
		if (fflush(stdout) == 0)
			status = CTL_EXIT_OK;
	}
out:
	free(text);
	free(whole);
	free_entries(&rd);
	paudit_free(&au);
	pset_free(set);
	return status;
}
