/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_violations.c - "pmallocctl violations": the violation entries of the
 * journal (MESSAGE_ID MID_VIOLATION of msgid.h, fields in pmallocd(8)),
 * read with the sd-journal API: the local machine's journal or collected
 * ones (--directory, --file: each entry's host shown), filtered by process,
 * unit, policy, time and cursor, the last N, oldest or newest first, and
 * with --follow those written afterwards (sd_journal_wait()'s parts), shown
 * through a pager on a terminal as journalctl does.
 *
 * Owns the command line (journalctl's spelling wherever an option means
 * what journalctl's does) and the walk through the journal; how an entry
 * looks is ctl_vio_show.c's.  Must never trust a field: an entry is copied
 * by each value's length and matched by exact field name.
 */
#define _GNU_SOURCE                  /* asprintf, secure_getenv */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "ctl.h"
#include "ctl_escape.h"
#include "ctl_time.h"
#include "ctl_util.h"
#include "ctl_vio.h"
#include "msgid.h"

#define VIO_UNITS_MAX 64

struct vio_opts {
	long pid;                    /* 0: any process */
	const char *policy;          /* NULL: any policy */
	const char *units[VIO_UNITS_MAX];   /* -u: any of these (globs), as journalctl names them */
	size_t n_units;
	uint64_t since_usec;         /* 0: from the start of the journal */
	uint64_t until_usec;         /* UINT64_MAX: to its end */
	size_t lines;                /* 0: all, else the last N (the first N after a cursor) */
	const char *cursor;          /* --cursor / --after-cursor */
	bool after_cursor;
	bool show_cursor;
	bool reverse;
	bool follow;
	bool no_pager;
	int full;                    /* 1 --full, 0 --no-full, -1 as the terminal says */
	enum vio_output output;
	const char *directory;       /* journal files of a directory instead of the system's */
	const char **files;          /* NULL-terminated, or NULL */
	size_t n_files;
};

/* The fields an entry keeps: the PMALLOC_* ones, the process it is about,
 * the human message and priority, and the sender as journald saw it (the
 * only fields nobody can forge: they tell pmallocd's entries from others). */
static bool vio_field_wanted(const char *name, size_t len)
{
	static const char *const extra[] = {
		"OBJECT_PID", "MESSAGE", "PRIORITY", "_PID", "_UID", "_GID", "_COMM", "_EXE",
		"_HOSTNAME", "_MACHINE_ID", "_BOOT_ID", "_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER",
		"OBJECT_SYSTEMD_UNIT", "OBJECT_SYSTEMD_CGROUP", "OBJECT_SYSTEMD_SLICE",
		"OBJECT_SYSTEMD_USER_UNIT",
	};

	if (len > 8 && memcmp(name, "PMALLOC_", 8) == 0)
		return true;
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		if (strlen(extra[i]) == len && memcmp(name, extra[i], len) == 0)
			return true;
	return false;
}

static void vio_entry_clear(struct vio_entry *e)
{
	for (size_t i = 0; i < e->n_fields; i++) {
		free(e->fields[i].name);
		free(e->fields[i].value);
	}
	free(e->fields);
	free(e->cursor);
	e->cursor = NULL;
	e->fields = NULL;
	e->n_fields = 0;
}

static int vio_field_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vio_field *)a)->name, ((const struct vio_field *)b)->name);
}

/* Add NAME=VALUE (data[0, len)) to e unless unwanted or already there. */
static int vio_entry_add(struct vio_entry *e, const char *data, size_t len)
{
	const char *eq = memchr(data, '=', len);
	struct vio_field *fields, *f;
	size_t name_len;

	if (!eq)
		return 0;
	name_len = (size_t)(eq - data);
	if (!vio_field_wanted(data, name_len))
		return 0;
	for (size_t i = 0; i < e->n_fields; i++)
		if (strlen(e->fields[i].name) == name_len &&
		    memcmp(e->fields[i].name, data, name_len) == 0)
			return 0;

	fields = realloc(e->fields, (e->n_fields + 1) * sizeof(*fields));
	if (!fields)
		return -ENOMEM;
	e->fields = fields;
	f = &fields[e->n_fields];
	f->len = len - name_len - 1;
	f->name = strndup(data, name_len);
	f->value = malloc(f->len + 1);
	if (!f->name || !f->value) {
		free(f->name);
		free(f->value);
		return -ENOMEM;
	}
	memcpy(f->value, eq + 1, f->len);
	f->value[f->len] = '\0';
	e->n_fields++;
	return 0;
}

/* The entry j points at, into *e (cleared first). */
static int vio_entry_read(sd_journal *j, struct vio_entry *e)
{
	const void *data;
	size_t len;
	int r;

	vio_entry_clear(e);
	r = sd_journal_get_realtime_usec(j, &e->usec);
	if (r < 0)
		return r;
	(void)sd_journal_get_cursor(j, &e->cursor);
	sd_journal_restart_data(j);
	while ((r = sd_journal_enumerate_available_data(j, &data, &len)) > 0) {
		r = vio_entry_add(e, data, len);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	if (e->n_fields > 1)
		qsort(e->fields, e->n_fields, sizeof(*e->fields), vio_field_cmp);
	return 0;
}

/* Whether field name of e is a plain string matching one of the units. */
static bool vio_unit_matches(const struct vio_opts *o, const struct vio_entry *e, const char *name)
{
	const struct vio_field *f = vio_get(e, name);

	if (!f || f->len == 0 || f->len != strlen(f->value))
		return false;
	for (size_t i = 0; i < o->n_units; i++)
		if (fnmatch(o->units[i], f->value, 0) == 0)
			return true;
	return false;
}

/* Read the entry j is at into e: 1 when it is one to show, 0 when not (out
 * of the time range, another unit, unreadable), or -ENOMEM.  A seek by
 * time is approximate across journal files: the range is checked here. */
static int vio_read_wanted(sd_journal *j, const struct vio_opts *o, struct vio_entry *e)
{
	int r = vio_entry_read(j, e);

	if (r == -ENOMEM)
		return r;
	if (r < 0 || e->usec < o->since_usec || e->usec > o->until_usec)
		return 0;
	/* The unit of the process the entry is about: as pmallocd saw it, or
	 * as journald saw the process that wrote about itself. */
	if (o->n_units && !vio_unit_matches(o, e, "OBJECT_SYSTEMD_UNIT") &&
	    !vio_unit_matches(o, e, "_SYSTEMD_UNIT"))
		return 0;
	return 1;
}

static int vio_open(const struct vio_opts *o, sd_journal **ret)
{
	sd_journal *j;
	int r;

	if (o->directory)
		r = sd_journal_open_directory(&j, o->directory, 0);
	else if (o->files)
		r = sd_journal_open_files(&j, o->files, 0);
	else
		r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
	if (r < 0)
		return r;
	r = sd_journal_add_match(j, "MESSAGE_ID=" MID_VIOLATION, 0);
	if (r >= 0 && o->pid) {
		char match[32];

		snprintf(match, sizeof(match), "OBJECT_PID=%ld", o->pid);
		r = sd_journal_add_match(j, match, 0);
	}
	if (r >= 0 && o->policy) {
		char *match = NULL;

		r = asprintf(&match, "PMALLOC_POLICY=%s", o->policy) < 0 ? -ENOMEM : 0;
		if (r == 0)
			r = sd_journal_add_match(j, match, 0);
		free(match);
	}
	/* --follow: watch the files from now on, so that nothing written while
	 * the past is listed is missed. */
	if (r >= 0 && o->follow)
		r = sd_journal_get_fd(j);
	if (r < 0) {
		sd_journal_close(j);
		return r;
	}
	*ret = j;
	return 0;
}

/* Where the listing starts, leaving j where the first step (next(), or
 * previous() with --reverse) moves onto the first entry to consider: at
 * the cursor; at --since (forward) or --until (--reverse); or, with -n N
 * forward, at the Nth last entry to show up to --until (found walking
 * back). */
static int vio_seek(sd_journal *j, const struct vio_opts *o, struct vio_entry *e)
{
	char *cursor = NULL;
	size_t n = 0;
	int r;

	if (o->cursor) {
		/* sd-journal says only EINVAL for a cursor it cannot parse:
		 * said by vio_run as what it is. */
		int r2 = sd_journal_seek_cursor(j, o->cursor);

		return r2 == -EINVAL ? -EBADMSG : r2;
	}
	if (o->reverse)
		return o->until_usec != UINT64_MAX ? sd_journal_seek_realtime_usec(j, o->until_usec + 1)
						   : sd_journal_seek_tail(j);
	if (o->lines == 0)
		return o->since_usec ? sd_journal_seek_realtime_usec(j, o->since_usec)
				     : sd_journal_seek_head(j);
	r = o->until_usec != UINT64_MAX ? sd_journal_seek_realtime_usec(j, o->until_usec + 1)
					: sd_journal_seek_tail(j);
	while (r >= 0 && n < o->lines && (r = sd_journal_previous(j)) > 0) {
		uint64_t usec;

		r = sd_journal_get_realtime_usec(j, &usec);
		if (r < 0 || usec > o->until_usec)
			continue;
		if (usec < o->since_usec)
			break;
		r = vio_read_wanted(j, o, e);
		if (r <= 0)
			continue;
		n++;
		free(cursor);
		cursor = NULL;
		r = sd_journal_get_cursor(j, &cursor);
	}
	if (r < 0) {
		free(cursor);
		return r;
	}
	/* Nothing in range: on the last entry, so that next() finds only new ones. */
	r = cursor ? sd_journal_seek_cursor(j, cursor) : sd_journal_seek_tail(j);
	if (r >= 0 && !cursor)
		r = sd_journal_previous(j);
	free(cursor);
	return r < 0 ? r : 0;
}

struct vio_state {
	struct vio_show *show;
	struct vio_entry e;
	size_t count;
	char *last_cursor;           /* of the last entry shown (--show-cursor) */
	bool at_cursor;              /* the next entry read is the one --cursor named */
};

/* The entries from j's position on (backwards with --reverse), shown on f,
 * until the journal ends or -n N are shown; 0 or -errno. */
static int vio_print_new(sd_journal *j, const struct vio_opts *o, struct vio_state *st, FILE *f)
{
	int r;

	while ((r = o->reverse ? sd_journal_previous(j) : sd_journal_next(j)) > 0) {
		bool at_cursor = st->at_cursor;

		st->at_cursor = false;
		if (at_cursor && o->after_cursor && sd_journal_test_cursor(j, o->cursor) > 0)
			continue;
		if (o->reverse && (o->lines && st->count >= o->lines))
			break;
		r = vio_read_wanted(j, o, &st->e);
		if (r < 0)
			return r;
		if (r == 0) {
			if (o->reverse && st->e.usec && st->e.usec < o->since_usec)
				break;
			continue;
		}
		if (o->cursor && o->lines && st->count >= o->lines)
			break;
		st->count++;
		r = vio_show_entry(st->show, f, &st->e);
		if (r < 0)
			return r;
		free(st->last_cursor);
		st->last_cursor = st->e.cursor;
		st->e.cursor = NULL;
	}
	return r;
}

/* --follow ends at SIGINT or SIGTERM, with exit status 0 (journalctl -f's
 * way).  The signals stay blocked except inside ppoll(), which unblocks them
 * atomically: one that arrives while entries are printed is taken at the
 * next wait, never lost between a check of the flag and the wait. */
static volatile sig_atomic_t vio_stop;

static void vio_on_signal(int sig)
{
	(void)sig;
	vio_stop = 1;
}

/* Catch SIGINT and SIGTERM, blocked; *ret_wait is the mask to wait with. */
static void vio_catch_signals(sigset_t *ret_wait)
{
	struct sigaction sa = { .sa_handler = vio_on_signal };   /* no SA_RESTART */
	sigset_t block;

	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	(void)sigprocmask(SIG_BLOCK, &block, ret_wait);
	sigdelset(ret_wait, SIGINT);
	sigdelset(ret_wait, SIGTERM);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
}

/* Wait until the journal changes or a signal comes: 0 (look again), or
 * -errno.  sd_journal_wait() cannot take a signal mask, hence its parts. */
static int vio_wait(sd_journal *j, const sigset_t *wait_mask)
{
	struct pollfd p = { .fd = sd_journal_get_fd(j) };
	struct timespec ts, *tsp = NULL;
	uint64_t until;
	int r;

	if (p.fd < 0)
		return p.fd;
	r = sd_journal_get_events(j);
	if (r < 0)
		return r;
	p.events = (short)r;
	r = sd_journal_get_timeout(j, &until);
	if (r < 0)
		return r;
	if (until != UINT64_MAX) {
		struct timespec now;
		uint64_t now_us, left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		now_us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
		left = until > now_us ? until - now_us : 0;
		ts.tv_sec = (time_t)(left / 1000000u);
		ts.tv_nsec = (long)(left % 1000000u) * 1000;
		tsp = &ts;
	}
	if (ppoll(&p, 1, tsp, wait_mask) < 0)
		return errno == EINTR ? 0 : -errno;
	r = sd_journal_process(j);
	return r < 0 ? r : 0;
}

/* The width the table may take: none with --full; else $COLUMNS, else
 * the terminal's; not a terminal: none (as journalctl, whole lines to a
 * pipe), unless --no-full (80). */
static size_t vio_columns(const struct vio_opts *o)
{
	const char *env = secure_getenv("COLUMNS");
	struct winsize ws;
	char *end;
	unsigned long v;

	if (o->full == 1)
		return 0;
	if (env && *env) {
		errno = 0;
		v = strtoul(env, &end, 10);
		if (!errno && !*end && v > 0 && v <= 100000)
			return v;
	}
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return o->full == 0 ? 80 : 0;
}

/* On a terminal, unless --no-pager or --follow: the pager journalctl would
 * run ($SYSTEMD_PAGER, else $PAGER, else less with LESS=FRSXMK), as a
 * stream to write to; NULL: write to stdout. */
static FILE *vio_pager(const struct vio_opts *o)
{
	const char *pager;
	FILE *f;

	if (o->no_pager || o->follow || !isatty(STDOUT_FILENO))
		return NULL;
	pager = secure_getenv("SYSTEMD_PAGER");
	if (!pager)
		pager = secure_getenv("PAGER");
	if (!pager)
		pager = "less";
	if (!*pager || strcmp(pager, "cat") == 0)
		return NULL;
	(void)setenv("LESS", "FRSXMK", 0);
	fflush(stdout);
	f = popen(pager, "w");
	if (f)
		signal(SIGPIPE, SIG_IGN);   /* the user quit the pager: the listing ends */
	return f;
}

/* Write the matching entries to f (then, with --follow, those to come);
 * 0 and *ret_count, or -errno. */
static int vio_list(const struct vio_opts *o, FILE *f, size_t *ret_count)
{
	struct vio_show_opts so = {
		.output = o->output, .host = o->directory || o->files, .columns = vio_columns(o),
	};
	struct vio_state st = { .at_cursor = o->cursor != NULL };
	sigset_t wait_mask;
	sd_journal *j;
	int r;

	r = vio_show_new(&so, &st.show);
	if (r < 0)
		return r;
	r = vio_open(o, &j);
	if (r < 0) {
		vio_show_free(st.show);
		return r;
	}
	if (o->follow)
		vio_catch_signals(&wait_mask);
	r = vio_seek(j, o, &st.e);
	if (r >= 0)
		r = vio_print_new(j, o, &st, f);
	if (r >= 0 && (st.count || o->follow))
		vio_show_flush(st.show, f, true);
	while (r >= 0 && o->follow && !vio_stop) {
		if (fflush(f) != 0) {
			r = -errno;
			break;
		}
		r = vio_wait(j, &wait_mask);
		if (r >= 0 && !vio_stop)     /* Ctrl-C, SIGTERM: the end of --follow, not an error */
			r = vio_print_new(j, o, &st, f);
		if (r >= 0)
			vio_show_flush(st.show, f, false);
	}
	/* journalctl's line, whatever the output mode. */
	if (r >= 0 && o->show_cursor && st.last_cursor)
		fprintf(f, "-- cursor: %s\n", st.last_cursor);
	vio_entry_clear(&st.e);
	free(st.last_cursor);
	sd_journal_close(j);
	vio_show_free(st.show);
	if (r < 0)
		return r;
	*ret_count = st.count;
	return 0;
}

/* Whether the system journal is readable to us: root, or a member of the
 * groups journald gives read access to (journalctl's own hint). */
static bool vio_sees_system_journal(void)
{
	static const char *const groups[] = { "systemd-journal", "adm", "wheel" };
	gid_t list[256];
	int n;

	if (geteuid() == 0)
		return true;
	n = getgroups(sizeof(list) / sizeof(list[0]), list);
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		const struct group *g = getgrnam(groups[i]);

		if (!g)
			continue;
		if (g->gr_gid == getegid())
			return true;
		for (int k = 0; k < n; k++)
			if (list[k] == g->gr_gid)
				return true;
	}
	return false;
}

static int vio_time_arg(const char *opt, const char *arg, uint64_t now, uint64_t *ret)
{
	int r = ctl_parse_time(arg, now, ret);
	char what[64];

	if (r == 0)
		return 0;
	snprintf(what, sizeof(what), r == -ERANGE ? "%s out of range" : "invalid %s", opt);
	return ctl_usage_error(what, arg);
}

static int vio_run(struct vio_opts *o)
{
	FILE *pager = vio_pager(o), *f = pager ? pager : stdout;
	size_t count = 0;
	int r = vio_list(o, f, &count), ret = CTL_EXIT_OK;

	if (r == -EBADMSG && o->cursor) {
		fflush(f);
		fputs(CTL_NAME ": --cursor ", stderr);
		ctl_put_str(stderr, o->cursor, 0);
		fputs(" is not a journal cursor (one that --show-cursor or journalctl --show-cursor printed)\n",
		      stderr);
		ret = CTL_EXIT_FAILURE;
	} else if (r < 0) {
		fflush(f);
		fputs(CTL_NAME ": cannot read the journal", stderr);
		if (o->directory) {
			fputs(" in ", stderr);
			ctl_put_str(stderr, o->directory, 0);
		}
		fprintf(stderr, ": %s\n", strerror(-r));
		ret = CTL_EXIT_FAILURE;
	} else if (count == 0 && o->output == VIO_SHORT) {
		fputs("No violations.\n", f);
	}
	if (r >= 0 && count == 0 && !o->directory && !o->files && !vio_sees_system_journal())
		fputs(CTL_NAME ": note: only the journal files readable by this user were searched; "
		      "members of the groups 'adm' and 'systemd-journal' see all.\n", stderr);
	if (fflush(f) != 0 && !pager)
		ret = CTL_EXIT_FAILURE;
	if (pager)
		(void)pclose(pager);
	return ret;
}

/* -u UNIT as journalctl takes it: a glob as it is; a name without a type
 * suffix is a service. */
static int vio_unit_arg(struct vio_opts *o, const char *arg, char **owned)
{
	const char *dot = strrchr(arg, '.');

	if (!arg[0] || strpbrk(arg, "\n/") || strlen(arg) > 255)
		return ctl_usage_error("invalid --unit", arg);
	if (o->n_units == VIO_UNITS_MAX)
		return ctl_usage_error("too many --unit options", NULL);
	if (!strpbrk(arg, "*?[") && (!dot || dot == arg)) {
		if (asprintf(owned, "%s.service", arg) < 0) {
			*owned = NULL;
			fputs(CTL_NAME ": out of memory\n", stderr);
			return CTL_EXIT_FAILURE;
		}
		arg = *owned;
	}
	o->units[o->n_units++] = arg;
	return 0;
}

static int vio_output_arg(struct vio_opts *o, const char *arg)
{
	static const struct {
		const char *name;
		enum vio_output output;
	} modes[] = {
		{ "short", VIO_SHORT }, { "json", VIO_JSON }, { "json-pretty", VIO_JSON_PRETTY },
		{ "cat", VIO_CAT },
	};

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(arg, modes[i].name) == 0) {
			o->output = modes[i].output;
			return 0;
		}
	return ctl_usage_error("invalid --output (short, json, json-pretty, cat)", arg);
}

int ctl_cmd_violations(int argc, char **argv)
{
	struct vio_opts o = { .until_usec = UINT64_MAX, .full = -1 };
	char *owned_units[VIO_UNITS_MAX] = { 0 };
	uint64_t now = ctl_now_usec();
	int32_t pid;
	const char **files;
	char *end;
	unsigned long long n;
	int c, ret = -1;

	while (ret < 0 && (c = ctl_getopt(argc, argv, "violations", &ret)) != -1) {
		switch (c) {
		case 'p':
			if (ctl_parse_pid(optarg, &pid) < 0) {
				ret = ctl_usage_error("invalid --pid", optarg);
				break;
			}
			o.pid = pid;
			break;
		case 'P':
			/* A policy name as pmalloc.conf(5) allows it: never empty, one line. */
			if (!optarg[0] || strpbrk(optarg, "\n=") || strlen(optarg) > 255)
				ret = ctl_usage_error("invalid --policy", optarg);
			o.policy = optarg;
			break;
		case 'u':
			if (vio_unit_arg(&o, optarg, &owned_units[o.n_units]) != 0)
				ret = CTL_EXIT_USAGE;
			break;
		case 'S':
			if (vio_time_arg("--since", optarg, now, &o.since_usec) != 0)
				ret = CTL_EXIT_USAGE;
			break;
		case 'U':
			if (vio_time_arg("--until", optarg, now, &o.until_usec) != 0)
				ret = CTL_EXIT_USAGE;
			break;
		case 'n':
			errno = 0;
			n = strtoull(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end || errno || n == 0 || n > 1000000)
				ret = ctl_usage_error("invalid --lines (1 to 1000000)", optarg);
			o.lines = (size_t)n;
			break;
		case 'f':
			o.follow = true;
			break;
		case 'r':
			o.reverse = true;
			break;
		case 'j':
			o.output = VIO_JSON;
			break;
		case 'o':
			if (vio_output_arg(&o, optarg) != 0)
				ret = CTL_EXIT_USAGE;
			break;
		case 'l':
			o.full = 1;
			break;
		case CTL_OPT_NO_FULL:
			o.full = 0;
			break;
		case CTL_OPT_NO_PAGER:
			o.no_pager = true;
			break;
		case 'c':
		case CTL_OPT_AFTER_CURSOR:
			if (!optarg[0] || strlen(optarg) > 1024 || strpbrk(optarg, "\n"))
				ret = ctl_usage_error("invalid cursor", optarg);
			o.cursor = optarg;
			o.after_cursor = c == CTL_OPT_AFTER_CURSOR;
			break;
		case CTL_OPT_SHOW_CURSOR:
			o.show_cursor = true;
			break;
		case 'D':
			o.directory = optarg;
			break;
		case CTL_OPT_FILE:
			files = realloc(o.files, (o.n_files + 2) * sizeof(*files));
			if (!files) {
				fputs(CTL_NAME ": out of memory\n", stderr);
				ret = CTL_EXIT_FAILURE;
				break;
			}
			o.files = files;
			o.files[o.n_files++] = optarg;
			o.files[o.n_files] = NULL;
			break;
		}
	}
	if (ret < 0) {               /* else --help given, or a bad option said */
		if (optind < argc)
			ret = ctl_usage_error("violations takes no arguments, got", argv[optind]);
		else if (o.directory && o.files)
			ret = ctl_usage_error("--directory and --file exclude each other", NULL);
		else if (o.since_usec > o.until_usec)
			ret = ctl_usage_error("--since is after --until", NULL);
		else if (o.follow && o.reverse)
			ret = ctl_usage_error("--follow and --reverse exclude each other", NULL);
		else
			ret = vio_run(&o);
	}
	for (size_t i = 0; i < VIO_UNITS_MAX; i++)
		free(owned_units[i]);
	free(o.files);
	return ret;
}
