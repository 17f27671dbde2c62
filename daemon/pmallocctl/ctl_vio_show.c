/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_vio_show.c - how "pmallocctl violations" shows an entry, in
 * journalctl's output modes: short (a table that fits the terminal, or
 * whole with --full), json (one object a line), json-pretty, cat (the
 * message alone); and who wrote each entry.
 *
 * Owns the table's columns, their order of giving way on a narrow
 * terminal, and the keys pmallocctl adds to journalctl's JSON
 * (PMALLOCCTL_WRITER, PMALLOCCTL_FAULT_SYMBOL; pmallocctl(8) lists all).
 * Must never trust a field: any local process can write an entry with our
 * MESSAGE_ID, so every value is taken by its length and escaped on output,
 * an entry missing fields shows "-" rather than being skipped, and one not
 * written by pmallocd or by the process it names is marked forged in every
 * mode (shown, never silently dropped: hiding it would hide the attempt).
 */
#define _GNU_SOURCE                  /* asprintf */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_escape.h"
#include "ctl_time.h"
#include "ctl_vio.h"

const struct vio_field *vio_get(const struct vio_entry *e, const char *name)
{
	for (size_t i = 0; i < e->n_fields; i++)
		if (strcmp(e->fields[i].name, name) == 0)
			return &e->fields[i];
	return NULL;
}

/* The value of name when it is a plain string (no NUL in it), else NULL. */
static const char *plain(const struct vio_entry *e, const char *name)
{
	const struct vio_field *f = vio_get(e, name);

	return f && f->len == strlen(f->value) ? f->value : NULL;
}

static bool same_value(const struct vio_field *a, const struct vio_field *b)
{
	return a && b && a->len > 0 && a->len == b->len && memcmp(a->value, b->value, a->len) == 0;
}

bool vio_by_pmallocd(const char *uid, const char *comm, const char *exe, const char *unit)
{
	const char *base = NULL;

	if (exe) {
		base = strrchr(exe, '/');
		base = base ? base + 1 : exe;
	}
	/* Root's word is the system's: only root's process named pmallocd, or
	 * root's process of pmallocd.service (journald names a process by what
	 * it read of it last: for about a second after the start, that can be
	 * systemd's child "(pmallocd)" before its exec, when it logged). */
	return uid && strcmp(uid, "0") == 0 &&
	       ((comm && strcmp(comm, "pmallocd") == 0) || (base && strcmp(base, "pmallocd") == 0) ||
		(unit && strcmp(unit, "pmallocd.service") == 0));
}

enum vio_writer vio_writer(const struct vio_entry *e)
{
	if (vio_by_pmallocd(plain(e, "_UID"), plain(e, "_COMM"), plain(e, "_EXE"), plain(e, "_SYSTEMD_UNIT")))
		return VIO_BY_PMALLOCD;
	if (same_value(vio_get(e, "_PID"), vio_get(e, "OBJECT_PID")))
		return VIO_BY_SELF;
	return VIO_FORGED;
}

static const char *writer_name(enum vio_writer w)
{
	return w == VIO_BY_PMALLOCD ? "pmallocd" : w == VIO_BY_SELF ? "self" : "FORGED";
}

/* The fault's function as pmallocctl finds it in the module file, for an
 * entry that names none (the shim's own, with no daemon): NULL when it
 * names one already, when it is forged (its module path is anybody's
 * word), or when the file does not say. */
static char *cli_symbol(const struct vio_entry *e, enum vio_writer w)
{
	const struct vio_field *sym = vio_get(e, "PMALLOC_FAULT_SYMBOL");
	const struct vio_field *mod = vio_get(e, "PMALLOC_FAULT_MODULE");
	const struct vio_field *off = vio_get(e, "PMALLOC_FAULT_OFFSET");
	const struct vio_field *bid = vio_get(e, "PMALLOC_FAULT_BUILD_ID");
	const struct vio_field *uid = vio_get(e, "_UID");
	unsigned long long offset, owner;
	char *end, *ret = NULL;

	if ((sym && sym->len) || w == VIO_FORGED || !mod || !off || !uid ||
	    mod->len != strlen(mod->value) || mod->value[0] != '/' || off->len != strlen(off->value))
		return NULL;
	errno = 0;
	offset = strtoull(off->value, &end, 16);
	if (errno || *end || end == off->value)
		return NULL;
	owner = strtoull(uid->value, &end, 10);
	if (errno || *end || end == uid->value || owner > UINT32_MAX)
		return NULL;
	if (ctl_elf_symbol(mod->value, bid && bid->len == strlen(bid->value) ? bid->value : NULL,
			   offset, (unsigned int)owner, &ret) < 0)
		return NULL;
	return ret;
}

/* ---- the table (short) ---- */

enum {
	COL_TIME, COL_HOST, COL_PID, COL_BY, COL_EXE, COL_POLICY, COL_POOL, COL_MODE,
	COL_ADDRESS, COL_OFFSET, COL_SITE, COL_SYMBOL, N_COLS
};
static const char *const headers[N_COLS] = {
	"TIME", "HOST", "PID", "BY", "EXE", "POLICY", "POOL", "MODE", "ADDRESS", "OFFSET/SIZE", "SITE",
	"FAULT SYMBOL",
};
/* Too wide a table: these narrow (widest first) down to SHRINK_SOFT, then
 * the first drop_order columns go, then they narrow to SHRINK_HARD, then
 * the other drop_order columns go (TIME, PID, BY and EXE always stay). */
static const int shrink_order[] = { COL_EXE, COL_SITE, COL_SYMBOL, COL_POLICY, COL_POOL, COL_HOST };
#define SHRINK_SOFT 24
#define SHRINK_HARD 12
#define DROP_SOFT 3
static const int drop_order[] = {
	COL_ADDRESS, COL_OFFSET, COL_MODE, COL_POOL, COL_SITE, COL_HOST, COL_POLICY, COL_SYMBOL,
};

struct vio_show {
	struct vio_show_opts o;
	char *(*rows)[N_COLS];       /* escaped cells */
	size_t n_rows, cap;
	size_t natural[N_COLS];      /* widest cell so far (--follow keeps widening) */
	size_t width[N_COLS];        /* as printed: 0 dropped */
};

int vio_show_new(const struct vio_show_opts *o, struct vio_show **ret)
{
	struct vio_show *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->o = *o;
	*ret = s;
	return 0;
}

/* The escaped value of field name, or "-" when absent or empty. */
static int cell(const struct vio_entry *e, const char *name, char **ret)
{
	const struct vio_field *f = vio_get(e, name);

	if (!f || f->len == 0) {
		*ret = strdup("-");
		return *ret ? 0 : -ENOMEM;
	}
	return ctl_escape(f->value, f->len, 0, ret);
}

/* The exe of an entry the process wrote itself (no daemon): its own word
 * (PMALLOC_EXE) is anybody's claim, journald's _EXE is what the kernel
 * said.  The cell shows the attested one, and the claim beside it when the
 * two differ or journald had none.  pmallocd's entries name the exe it read
 * itself (cell already set), and a forged entry is marked as a whole. */
static int exe_cell(const struct vio_entry *e, enum vio_writer w, char **cellp)
{
	const struct vio_field *claimed = vio_get(e, "PMALLOC_EXE"), *attested = vio_get(e, "_EXE");
	char *a = NULL;
	int r;

	if (w != VIO_BY_SELF || same_value(claimed, attested))
		return 0;
	if (!attested || attested->len == 0)
		r = asprintf(&a, "%s (claimed; not attested)", *cellp);
	else {
		char *esc = NULL;

		r = ctl_escape(attested->value, attested->len, 0, &esc);
		if (r < 0)
			return r;
		r = asprintf(&a, "%s (claims %s)", esc, *cellp);
		free(esc);
	}
	if (r < 0)
		return -ENOMEM;
	free(*cellp);
	*cellp = a;
	return 0;
}

static int table_add(struct vio_show *s, const struct vio_entry *e)
{
	static const char *const simple[N_COLS] = {
		[COL_PID] = "OBJECT_PID", [COL_EXE] = "PMALLOC_EXE", [COL_POLICY] = "PMALLOC_POLICY",
		[COL_POOL] = "PMALLOC_POOL", [COL_MODE] = "PMALLOC_MODE", [COL_ADDRESS] = "PMALLOC_ADDRESS",
		[COL_SITE] = "PMALLOC_OBJECT_SITE",
	};
	const struct vio_field *hostname = vio_get(e, "_HOSTNAME");
	const struct vio_field *sym = vio_get(e, "PMALLOC_FAULT_SYMBOL");
	enum vio_writer w = vio_writer(e);
	char *(*row)[N_COLS];
	char *offset = NULL, *size = NULL;
	char when[64];
	int r = 0;

	if (s->n_rows == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char *(*rows)[N_COLS] = realloc(s->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		s->rows = rows;
		s->cap = cap;
	}
	row = &s->rows[s->n_rows];
	memset(row, 0, sizeof(*row));

	if (ctl_format_local(e->usec, when, sizeof(when)) < 0)
		snprintf(when, sizeof(when), "@%llu", (unsigned long long)(e->usec / 1000000));
	(*row)[COL_TIME] = strdup(when);
	(*row)[COL_BY] = strdup(writer_name(w));
	if (!(*row)[COL_TIME] || !(*row)[COL_BY])
		r = -ENOMEM;
	/* The host by name, else by machine id (a name need not be unique). */
	if (r == 0)
		r = cell(e, hostname && hostname->len ? "_HOSTNAME" : "_MACHINE_ID", &(*row)[COL_HOST]);
	for (int c = 0; c < N_COLS && r == 0; c++)
		if (simple[c])
			r = cell(e, simple[c], &(*row)[c]);
	if (r == 0)
		r = cell(e, "PMALLOC_OFFSET", &offset);
	if (r == 0)
		r = cell(e, "PMALLOC_OBJECT_SIZE", &size);
	if (r == 0 && asprintf(&(*row)[COL_OFFSET], "%s/%s", offset, size) < 0) {
		(*row)[COL_OFFSET] = NULL;
		r = -ENOMEM;
	}
	/* The faulting function: the writer's name for it, else the module
	 * file's, else the raw address. */
	if (r == 0 && !(sym && sym->len) && ((*row)[COL_SYMBOL] = cli_symbol(e, w)) == NULL)
		r = cell(e, "PMALLOC_FAULT_IP", &(*row)[COL_SYMBOL]);
	else if (r == 0 && sym && sym->len)
		r = cell(e, "PMALLOC_FAULT_SYMBOL", &(*row)[COL_SYMBOL]);
	if (r == 0)
		r = exe_cell(e, w, &(*row)[COL_EXE]);
	free(offset);
	free(size);
	if (r < 0) {
		for (int c = 0; c < N_COLS; c++)
			free((*row)[c]);
		return r;
	}
	s->n_rows++;
	return 0;
}

static size_t table_total(const struct vio_show *s)
{
	size_t total = 0, n = 0;

	for (int c = 0; c < N_COLS; c++)
		if (s->width[c]) {
			total += s->width[c];
			n++;
		}
	return n ? total + 2 * (n - 1) : 0;
}

static void table_shrink(struct vio_show *s, size_t limit, size_t floor)
{
	while (table_total(s) > limit) {
		int widest = -1;

		for (size_t k = 0; k < sizeof(shrink_order) / sizeof(shrink_order[0]); k++) {
			int c = shrink_order[k];

			if (s->width[c] > floor && (widest < 0 || s->width[c] > s->width[widest]))
				widest = c;
		}
		if (widest < 0)
			return;
		s->width[widest]--;
	}
}

static void table_drop(struct vio_show *s, size_t limit, size_t from, size_t to)
{
	for (size_t k = from; k < to && table_total(s) > limit; k++)
		s->width[drop_order[k]] = 0;
}

/* The widths to print with: every cell whole, or, past o.columns, the
 * narrowing and dropping above. */
static void table_fit(struct vio_show *s)
{
	size_t limit = s->o.columns;

	for (int c = 0; c < N_COLS; c++) {
		if (s->natural[c] < strlen(headers[c]))
			s->natural[c] = strlen(headers[c]);
		for (size_t i = 0; i < s->n_rows; i++) {
			size_t w = ctl_text_width(s->rows[i][c]);

			if (w > s->natural[c])
				s->natural[c] = w;
		}
		s->width[c] = c == COL_HOST && !s->o.host ? 0 : s->natural[c];
	}
	if (limit == 0)
		return;
	table_shrink(s, limit, SHRINK_SOFT);
	table_drop(s, limit, 0, DROP_SOFT);
	table_shrink(s, limit, SHRINK_HARD);
	table_drop(s, limit, DROP_SOFT, sizeof(drop_order) / sizeof(drop_order[0]));
}

/* cells[c] cut to width w: "..." at the end, or at the start for EXE (the
 * program's name is at the end of its path). */
static void put_cell(FILE *f, const char *text, size_t w, int c, bool last)
{
	size_t have = ctl_text_width(text);

	if (have > w) {
		size_t keep = w > 3 ? w - 3 : 0, skip = c == COL_EXE ? have - keep : 0, n = 0;
		const char *p = text;

		if (c == COL_EXE)
			fputs("...", f);
		/* Count code points as ctl_text_width() does: bytes not 10xxxxxx. */
		for (; *p; p++) {
			bool start = ((unsigned char)*p & 0xc0) != 0x80;

			if (start)
				n++;
			if (start && (n > skip + keep))
				break;
			if (n > skip)
				fputc(*p, f);
		}
		if (c != COL_EXE)
			fputs("...", f);
		have = w;
	} else {
		fputs(text, f);
	}
	if (!last)
		fprintf(f, "%*s", (int)(w - have + 2), "");
}

static void row_print(FILE *f, const struct vio_show *s, const char *const *cells)
{
	int last = -1;

	for (int c = 0; c < N_COLS; c++)
		if (s->width[c])
			last = c;
	for (int c = 0; c < N_COLS; c++)
		if (s->width[c])
			put_cell(f, cells[c], s->width[c], c, c == last);
	fputc('\n', f);
}

void vio_show_flush(struct vio_show *s, FILE *f, bool header)
{
	if (s->o.output != VIO_SHORT)
		return;
	table_fit(s);
	if (header)
		row_print(f, s, headers);
	for (size_t i = 0; i < s->n_rows; i++) {
		row_print(f, s, (const char *const *)s->rows[i]);
		for (int c = 0; c < N_COLS; c++)
			free(s->rows[i][c]);
	}
	s->n_rows = 0;
}

void vio_show_free(struct vio_show *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_rows; i++)
		for (int c = 0; c < N_COLS; c++)
			free(s->rows[i][c]);
	free(s->rows);
	free(s);
}

/* ---- json, json-pretty, cat ---- */

static void json_pair(FILE *f, bool pretty, bool *first, const char *name, const char *value, size_t len)
{
	fputs(*first ? (pretty ? "{\n\t" : "{") : (pretty ? ",\n\t" : ","), f);
	*first = false;
	ctl_put_json(f, name, strlen(name));
	fputs(pretty ? " : " : ":", f);
	ctl_put_json(f, value, len);
}

/* journalctl's keys (every value a string, or an array of bytes), then
 * pmallocctl's own: who wrote the entry, and the function it found. */
static void put_json(FILE *f, const struct vio_entry *e, bool pretty)
{
	enum vio_writer w = vio_writer(e);
	char num[32], iso[64];
	bool first = true;
	char *sym;

	if (e->cursor)
		json_pair(f, pretty, &first, "__CURSOR", e->cursor, strlen(e->cursor));
	snprintf(num, sizeof(num), "%llu", (unsigned long long)e->usec);
	json_pair(f, pretty, &first, "__REALTIME_TIMESTAMP", num, strlen(num));
	if (ctl_format_iso_utc(e->usec, iso, sizeof(iso)) == 0)
		json_pair(f, pretty, &first, "TIMESTAMP", iso, strlen(iso));
	for (size_t i = 0; i < e->n_fields; i++)
		json_pair(f, pretty, &first, e->fields[i].name, e->fields[i].value, e->fields[i].len);
	json_pair(f, pretty, &first, "PMALLOCCTL_WRITER", writer_name(w), strlen(writer_name(w)));
	sym = cli_symbol(e, w);
	if (sym)
		json_pair(f, pretty, &first, "PMALLOCCTL_FAULT_SYMBOL", sym, strlen(sym));
	free(sym);
	/* The exe the journal attests (see exe_cell): pmallocd's own reading,
	 * or journald's _EXE of a process that wrote its entry itself. */
	{
		const struct vio_field *x = vio_get(e, w == VIO_BY_SELF ? "_EXE" : "PMALLOC_EXE");

		if (w != VIO_FORGED && x && x->len)
			json_pair(f, pretty, &first, "PMALLOCCTL_EXE", x->value, x->len);
	}
	fputs(pretty ? "\n}\n" : "}\n", f);
}

int vio_show_entry(struct vio_show *s, FILE *f, const struct vio_entry *e)
{
	const struct vio_field *msg;

	switch (s->o.output) {
	case VIO_SHORT:
		return table_add(s, e);
	case VIO_JSON:
	case VIO_JSON_PRETTY:
		put_json(f, e, s->o.output == VIO_JSON_PRETTY);
		return 0;
	case VIO_CAT:
		msg = vio_get(e, "MESSAGE");
		if (vio_writer(e) == VIO_FORGED)
			fputs("[FORGED] ", f);
		if (msg)
			ctl_put_text(f, msg->value, msg->len, 0);
		fputc('\n', f);
		return 0;
	}
	return -EINVAL;
}
