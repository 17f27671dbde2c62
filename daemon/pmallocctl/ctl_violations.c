/*
 * ctl_violations.c - "pmallocctl violations": the violation entries of the
 * journal (MESSAGE_ID MID_VIOLATION of msgid.h, fields in pmallocd(8)),
 * read with the sd-journal API, as a table or as JSON lines: the local
 * machine's journal or collected ones (--directory, --file: each entry's
 * host shown), filtered by process, policy and time, the last N, and with
 * --follow those written afterwards (sd_journal_wait()).
 *
 * Owns the table's columns and the JSON object's keys (pmallocctl(8) lists
 * both).  Must never trust a field: any local process can write an entry
 * with this MESSAGE_ID, so every value is taken by its length (it may hold
 * NUL bytes, newlines, escape sequences or invalid UTF-8), looked up by exact
 * field name, and escaped on output; an entry missing fields is shown with
 * "-" rather than skipped, so nothing is hidden by leaving a field out.
 */
#define _GNU_SOURCE                  /* asprintf */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "ctl.h"
#include "msgid.h"

struct vio_opts {
	long pid;                    /* 0: any process */
	const char *policy;          /* NULL: any policy */
	uint64_t since_usec;         /* 0: from the start of the journal */
	uint64_t until_usec;         /* UINT64_MAX: to its end */
	size_t lines;                /* 0: all, else the last N */
	bool follow;
	bool json;
	const char *directory;       /* journal files of a directory instead of the system's */
	const char **files;          /* NULL-terminated, or NULL */
	size_t n_files;
};

/* One field of an entry, copied out of the journal (whose pointers live only
 * until the next call). */
struct vio_field {
	char *name;
	char *value;                 /* value[len] is NUL, but value may hold NULs too */
	size_t len;
};

struct vio_entry {
	uint64_t usec;
	struct vio_field *fields;    /* sorted by name; the first occurrence of each */
	size_t n_fields;
};

/* HOST is shown for collected journals (--directory, --file) only. */
enum { VIO_COLUMNS = 11, VIO_HOST = 1 };
static const char *const vio_headers[VIO_COLUMNS] = {
	"TIME", "HOST", "PID", "EXE", "POLICY", "POOL", "MODE", "ADDRESS", "OFFSET/SIZE", "SITE",
	"FAULT SYMBOL",
};

struct vio_table {
	char *(*rows)[VIO_COLUMNS];  /* escaped cells */
	size_t n_rows, cap;
	bool host;                   /* print the HOST column */
	size_t width[VIO_COLUMNS];   /* of what was printed so far (--follow) */
};

/* The fields an entry keeps: the PMALLOC_* ones, the process it is about,
 * the human message and priority, and the sender as journald saw it (the
 * only fields nobody can forge: they tell pmallocd's entries from others). */
static bool vio_field_wanted(const char *name, size_t len)
{
	static const char *const extra[] = {
		"OBJECT_PID", "MESSAGE", "PRIORITY", "_PID", "_UID", "_COMM",
		"_HOSTNAME", "_MACHINE_ID", "_BOOT_ID", "_SYSTEMD_UNIT",
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
	e->fields = NULL;
	e->n_fields = 0;
}

static const struct vio_field *vio_get(const struct vio_entry *e, const char *name)
{
	for (size_t i = 0; i < e->n_fields; i++)
		if (strcmp(e->fields[i].name, name) == 0)
			return &e->fields[i];
	return NULL;
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

/* One JSON object on one line: the timestamps, then every field kept. */
static void vio_put_json(FILE *f, const struct vio_entry *e)
{
	char iso[64];

	fprintf(f, "{\"__REALTIME_TIMESTAMP\":\"%llu\"", (unsigned long long)e->usec);
	if (ctl_format_iso_utc(e->usec, iso, sizeof(iso)) == 0)
		fprintf(f, ",\"TIMESTAMP\":\"%s\"", iso);
	for (size_t i = 0; i < e->n_fields; i++) {
		fputc(',', f);
		ctl_put_json(f, e->fields[i].name, strlen(e->fields[i].name));
		fputc(':', f);
		ctl_put_json(f, e->fields[i].value, e->fields[i].len);
	}
	fputs("}\n", f);
}

/* The escaped value of field name, or "-" when absent or empty. */
static int vio_cell(const struct vio_entry *e, const char *name, char **ret)
{
	const struct vio_field *f = vio_get(e, name);

	if (!f || f->len == 0) {
		*ret = strdup("-");
		return *ret ? 0 : -ENOMEM;
	}
	return ctl_escape(f->value, f->len, 0, ret);
}

static int vio_table_add(struct vio_table *t, const struct vio_entry *e)
{
	static const char *const simple[VIO_COLUMNS] = {
		[2] = "OBJECT_PID", [3] = "PMALLOC_EXE", [4] = "PMALLOC_POLICY",
		[5] = "PMALLOC_POOL", [6] = "PMALLOC_MODE", [7] = "PMALLOC_ADDRESS",
		[9] = "PMALLOC_OBJECT_SITE",
	};
	const struct vio_field *hostname = vio_get(e, "_HOSTNAME");
	char *(*row)[VIO_COLUMNS];
	char *offset = NULL, *size = NULL;
	char when[64];
	int r = 0;

	if (t->n_rows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char *(*rows)[VIO_COLUMNS] = realloc(t->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		t->cap = cap;
	}
	row = &t->rows[t->n_rows];
	memset(row, 0, sizeof(*row));

	if (ctl_format_local(e->usec, when, sizeof(when)) < 0)
		snprintf(when, sizeof(when), "@%llu", (unsigned long long)(e->usec / 1000000));
	(*row)[0] = strdup(when);
	if (!(*row)[0])
		r = -ENOMEM;
	/* The host by name, else by machine id (a name need not be unique). */
	if (r == 0)
		r = vio_cell(e, hostname && hostname->len ? "_HOSTNAME" : "_MACHINE_ID", &(*row)[VIO_HOST]);
	for (int c = 2; c < VIO_COLUMNS && r == 0; c++)
		if (simple[c])
			r = vio_cell(e, simple[c], &(*row)[c]);
	if (r == 0)
		r = vio_cell(e, "PMALLOC_OFFSET", &offset);
	if (r == 0)
		r = vio_cell(e, "PMALLOC_OBJECT_SIZE", &size);
	if (r == 0 && asprintf(&(*row)[8], "%s/%s", offset, size) < 0) {
		(*row)[8] = NULL;
		r = -ENOMEM;
	}
	/* The faulting instruction by name where known, else by address. */
	if (r == 0) {
		const struct vio_field *sym = vio_get(e, "PMALLOC_FAULT_SYMBOL");

		r = vio_cell(e, sym && sym->len ? "PMALLOC_FAULT_SYMBOL" : "PMALLOC_FAULT_IP",
			     &(*row)[10]);
	}
	free(offset);
	free(size);
	if (r < 0) {
		for (int c = 0; c < VIO_COLUMNS; c++)
			free((*row)[c]);
		return r;
	}
	t->n_rows++;
	return 0;
}

static void vio_row_print(FILE *f, const struct vio_table *t, const char *const *cells)
{
	for (int c = 0; c < VIO_COLUMNS; c++) {
		if (c == VIO_HOST && !t->host)
			continue;
		fputs(cells[c], f);
		if (c < VIO_COLUMNS - 1)
			fprintf(f, "%*s", (int)(t->width[c] - ctl_text_width(cells[c]) + 2), "");
	}
	fputc('\n', f);
}

/* Widen the columns to what the rows hold (never narrower than before). */
static void vio_table_widths(struct vio_table *t)
{
	for (int c = 0; c < VIO_COLUMNS; c++) {
		if (t->width[c] < strlen(vio_headers[c]))
			t->width[c] = strlen(vio_headers[c]);
		for (size_t i = 0; i < t->n_rows; i++) {
			size_t w = ctl_text_width(t->rows[i][c]);

			if (w > t->width[c])
				t->width[c] = w;
		}
	}
}

/* The rows held, after the header when header is set; then forgets them
 * (their widths stay, for the rows --follow prints later). */
static void vio_table_flush(FILE *f, struct vio_table *t, bool header)
{
	vio_table_widths(t);
	if (header)
		vio_row_print(f, t, vio_headers);
	for (size_t i = 0; i < t->n_rows; i++) {
		vio_row_print(f, t, (const char *const *)t->rows[i]);
		for (int c = 0; c < VIO_COLUMNS; c++)
			free(t->rows[i][c]);
	}
	t->n_rows = 0;
}

static void vio_table_free(struct vio_table *t)
{
	for (size_t i = 0; i < t->n_rows; i++)
		for (int c = 0; c < VIO_COLUMNS; c++)
			free(t->rows[i][c]);
	free(t->rows);
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

/* Where the listing starts: the first entry at or after --since, or, with
 * -n N, the Nth last entry up to --until (found walking back).  Leaves j
 * where sd_journal_next() moves onto it. */
static int vio_seek(sd_journal *j, const struct vio_opts *o)
{
	char *cursor = NULL;
	size_t n = 0;
	uint64_t usec;
	int r;

	if (o->lines == 0)
		return o->since_usec ? sd_journal_seek_realtime_usec(j, o->since_usec)
				     : sd_journal_seek_head(j);
	r = o->until_usec != UINT64_MAX ? sd_journal_seek_realtime_usec(j, o->until_usec + 1)
					: sd_journal_seek_tail(j);
	while (r >= 0 && n < o->lines && (r = sd_journal_previous(j)) > 0) {
		r = sd_journal_get_realtime_usec(j, &usec);
		if (r < 0 || usec > o->until_usec)
			continue;
		if (usec < o->since_usec)
			break;
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

/* The entries from j's position on, to f; 0 and *count increased, or -errno. */
static int vio_print_new(sd_journal *j, const struct vio_opts *o, struct vio_table *table,
			 struct vio_entry *e, FILE *f, size_t *count)
{
	int r;

	while ((r = sd_journal_next(j)) > 0) {
		r = vio_entry_read(j, e);
		if (r == -ENOMEM)
			return r;
		/* A seek by time is approximate across journal files: filter exactly. */
		if (r < 0 || e->usec < o->since_usec || e->usec > o->until_usec)
			continue;
		(*count)++;
		if (o->json) {
			vio_put_json(f, e);
		} else {
			r = vio_table_add(table, e);
			if (r < 0)
				return r;
		}
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

/* Write the matching entries to f (then, with --follow, those to come);
 * 0 and *ret_count, or -errno. */
static int vio_list(const struct vio_opts *o, FILE *f, size_t *ret_count)
{
	struct vio_table table = { .host = o->directory || o->files };
	struct vio_entry e = { 0 };
	sigset_t wait_mask;
	sd_journal *j;
	size_t count = 0;
	int r;

	r = vio_open(o, &j);
	if (r < 0)
		return r;
	if (o->follow)
		vio_catch_signals(&wait_mask);
	r = vio_seek(j, o);
	if (r >= 0)
		r = vio_print_new(j, o, &table, &e, f, &count);
	if (r >= 0 && !o->json && (count || o->follow))
		vio_table_flush(f, &table, true);
	while (r >= 0 && o->follow && !vio_stop) {
		if (fflush(f) != 0) {
			r = -errno;
			break;
		}
		r = vio_wait(j, &wait_mask);
		if (r >= 0 && !vio_stop)     /* Ctrl-C, SIGTERM: the end of --follow, not an error */
			r = vio_print_new(j, o, &table, &e, f, &count);
		if (r >= 0 && !o->json)
			vio_table_flush(f, &table, false);
	}
	vio_entry_clear(&e);
	sd_journal_close(j);
	vio_table_free(&table);
	if (r < 0)
		return r;
	*ret_count = count;
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
	size_t count = 0;
	int r = vio_list(o, stdout, &count);

	if (r < 0) {
		fflush(stdout);
		fputs(CTL_NAME ": cannot read the journal", stderr);
		if (o->directory) {
			fputs(" in ", stderr);
			ctl_put_str(stderr, o->directory, 0);
		}
		fprintf(stderr, ": %s\n", strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	if (count == 0 && !o->json)
		puts("No violations.");
	if (count == 0 && !o->directory && !o->files && !vio_sees_system_journal())
		fputs(CTL_NAME ": note: only the journal files readable by this user were searched; "
		      "members of the groups 'adm' and 'systemd-journal' see all.\n", stderr);
	return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

int ctl_cmd_violations(int argc, char **argv)
{
	struct vio_opts o = { .until_usec = UINT64_MAX };
	uint64_t now = ctl_now_usec();
	int32_t pid;
	const char **files;
	char *end;
	unsigned long long n;
	int c, ret;

	while ((c = ctl_getopt(argc, argv, "violations", &ret)) != -1) {
		switch (c) {
		case 'p':
			if (ctl_parse_pid(optarg, &pid) < 0)
				return ctl_usage_error("invalid --pid", optarg);
			o.pid = pid;
			break;
		case 'P':
			/* A policy name as pmalloc.conf(5) allows it: never empty, one line. */
			if (!optarg[0] || strpbrk(optarg, "\n=") || strlen(optarg) > 255)
				return ctl_usage_error("invalid --policy", optarg);
			o.policy = optarg;
			break;
		case 'S':
			if (vio_time_arg("--since", optarg, now, &o.since_usec) != 0)
				return CTL_EXIT_USAGE;
			break;
		case 'U':
			if (vio_time_arg("--until", optarg, now, &o.until_usec) != 0)
				return CTL_EXIT_USAGE;
			break;
		case 'n':
			errno = 0;
			n = strtoull(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end || errno || n == 0 || n > 1000000)
				return ctl_usage_error("invalid --lines (1 to 1000000)", optarg);
			o.lines = (size_t)n;
			break;
		case 'f':
			o.follow = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'D':
			o.directory = optarg;
			break;
		case CTL_OPT_FILE:
			files = realloc(o.files, (o.n_files + 2) * sizeof(*files));
			if (!files) {
				free(o.files);
				fputs(CTL_NAME ": out of memory\n", stderr);
				return CTL_EXIT_FAILURE;
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
		else
			ret = vio_run(&o);
	}
	free(o.files);
	return ret;
}
