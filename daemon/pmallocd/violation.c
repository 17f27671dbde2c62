/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * violation.c - from a violation record (struct pmw_report, sent by the
 * shim as it filled it) to the journal entry people read.
 *
 * Owns: what only pmallocd knows about a violation: the frames, the fault
 * symbol and the object site resolved through symbolize.c (with build-ids),
 * and the process as the kernel and the registry tell it (pid, exe, comm,
 * uid, unit).  The MESSAGE and the fields the shim writes too are
 * violation_fmt.c's, the formatter the shim uses for its own entry.
 * Never: trusts report strings in a MESSAGE without sanitizing them, takes
 * the pid or the exe from the report (the registry entry has the kernel's;
 * server.c checked its policy and pool against the hand-out), or fails
 * to log: whatever cannot be resolved is shown raw; spends more time on
 * module files than the budgets of the process's user allow (budget.h:
 * past them, frames are shown as module+offset, PMALLOC_SYMBOLS=cut).
 */
#define _GNU_SOURCE
#include "violation.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "budget.h"
#include "journal.h"
#include "violation_fmt.h"

struct modinfo {
	bool resolved;
	char path[PMW_PATH];             /* as reported; the process's exe for an unnamed main program */
	const char *shown;               /* path escaped: shown_buf or the entry's exe */
	char shown_buf[ESCAPED_SIZE(PMW_PATH)];
	struct sym_module *sym;          /* NULL: not symbolized */
	int error;
	char build_id[2 * 64 + 1];       /* hex, "" unknown */
};

/* A user's report spends at most this on symbols, whatever its budget. */
#define VIOLATION_SYM_US 10000

struct report_ctx {
	struct symbolizer *sym;
	const struct proc_entry *e;
	const struct pmw_report *rep;
	struct modinfo mods[PMW_MODULES];
	uint64_t start, deadline;        /* CLOCK_MONOTONIC us; deadline UINT64_MAX: none */
	bool cut;                        /* a module or look-up skipped for the deadline */
};

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* May the report open or look up one more thing?  One of each is bounded
 * (SYM_TABLES_MAX), so the deadline is overrun by at most that. */
static bool may_spend(struct report_ctx *x)
{
	if (x->deadline == UINT64_MAX || mono_us() < x->deadline)
		return true;
	x->cut = true;
	return false;
}

static void copy(char *dst, size_t size, const char *src)
{
	struct fmt f;

	fmt_init(&f, dst, size);
	fmt_str(&f, src);
	fmt_cstr(&f);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void hex(char *dst, size_t size, const uint8_t *bytes, size_t n)
{
	size_t i;

	for (i = 0; i < n && 2 * i + 2 < size; i++)
		snprintf(dst + 2 * i, 3, "%02x", bytes[i]);
	dst[2 * i] = '\0';
}

static struct modinfo *module_get(struct report_ctx *x, uint32_t idx)
{
	const struct pmw_module *pm;
	struct modinfo *mi;
	size_t len;
	int r;

	if (idx >= x->rep->n_modules)
		return NULL;
	mi = &x->mods[idx];
	if (mi->resolved)
		return mi;
	mi->resolved = true;
	pm = &x->rep->modules[idx];

	copy(mi->path, sizeof(mi->path), pm->path);
	text_escape(mi->shown_buf, sizeof(mi->shown_buf), mi->path);
	mi->shown = mi->shown_buf;
	/* The main program has no name in the link map: it is the exe. */
	if (!mi->path[0] && x->e->exe) {
		copy(mi->path, sizeof(mi->path), x->e->exe);
		mi->shown = proc_entry_exe(x->e);
	}
	if (pm->build_id_len > 0)
		hex(mi->build_id, sizeof(mi->build_id), pm->build_id, pm->build_id_len);

	if (mi->path[0] != '/') {
		mi->error = -EINVAL;
		return mi;
	}
	if (!may_spend(x)) {
		mi->error = -ETIME;
		return mi;
	}
	r = symbolizer_open(x->sym, mi->path, pm->build_id, pm->build_id_len, x->e->uid, x->e->gid,
			    &mi->sym);
	if (r < 0) {
		mi->error = r;
		mi->sym = NULL;
	} else if (!mi->build_id[0]) {
		const uint8_t *id = sym_module_build_id(mi->sym, &len);
		if (id)
			hex(mi->build_id, sizeof(mi->build_id), id, len);
	}
	return mi;
}

/* The module holding ip: the one with the highest base at or below it. */
static uint32_t module_for_ip(const struct pmw_report *rep, uint64_t ip)
{
	uint32_t best = PMW_NO_MODULE;

	for (uint32_t i = 0; i < rep->n_modules; i++)
		if (rep->modules[i].base <= ip &&
		    (best == PMW_NO_MODULE || rep->modules[i].base > rep->modules[best].base))
			best = i;
	return best;
}

/* "symbol+0xoff" of offset in module idx; false when unknown. */
static bool symbol_of(struct report_ctx *x, uint32_t idx, uint64_t offset, char *buf, size_t size)
{
	struct modinfo *mi = module_get(x, idx);

	return mi && mi->sym && may_spend(x) && sym_module_lookup(mi->sym, offset, buf, size) >= 0;
}

/* Text already escaped goes in with fmt_str, numbers with fmt_printf. */
static void frame_text(struct report_ctx *x, const struct pmw_frame *f, struct fmt *b)
{
	struct modinfo *mi = f->module == PMW_NO_MODULE ? NULL : module_get(x, f->module);
	char sym[ESCAPED_SIZE(PMW_SYM + 32)];

	if (!mi) {
		fmt_printf(b, "0x%" PRIx64, f->ip);
		return;
	}
	fmt_str(b, mi->shown[0] ? mi->shown : "?");
	fmt_printf(b, "+0x%" PRIx64, f->offset);
	if (mi->sym && may_spend(x) && sym_module_lookup(mi->sym, f->offset, sym, sizeof(sym)) >= 0) {
		fmt_str(b, " (");
		fmt_str(b, sym);
		fmt_str(b, ")");
	} else if (mi->error == -ESTALE)
		fmt_str(b, " (file replaced since: build-id differs)");
	if (mi->build_id[0])
		fmt_printf(b, " [%s]", mi->build_id);   /* hex */
}

/* An object site the shim wrote as "module+0xoff" gets its symbol; one it
 * already wrote as "symbol+0xoff" stays as it is.  site is as reported
 * (matched against module paths as reported); out and short_out escaped. */
static void object_site_text(struct report_ctx *x, const char *site, char *out, size_t size,
			     char *short_out, size_t short_size)
{
	char name[PMW_SYM], sym[ESCAPED_SIZE(PMW_SYM + 32)], shown[ESCAPED_SIZE(PMW_SYM)];
	const char *plus = strrchr(site, '+');
	unsigned long long off;
	char *end;

	text_escape(shown, sizeof(shown), site);
	copy(out, size, shown);
	copy(short_out, short_size, shown);
	if (!plus || plus == site || (size_t)(plus - site) >= sizeof(name) ||
	    strncmp(plus, "+0x", 3) != 0)
		return;
	errno = 0;
	off = strtoull(plus + 3, &end, 16);
	if (errno || *end || end == plus + 3)
		return;
	memcpy(name, site, (size_t)(plus - site));
	name[plus - site] = '\0';
	for (uint32_t i = 0; i < x->rep->n_modules; i++) {
		struct modinfo *mi = module_get(x, i);

		if (!mi || !mi->path[0])
			continue;
		if (strcmp(mi->path, name) != 0 && strcmp(base_name(mi->path), name) != 0)
			continue;
		if (symbol_of(x, i, off, sym, sizeof(sym))) {
			struct fmt b;

			fmt_init(&b, out, size);
			fmt_str(&b, sym);
			fmt_str(&b, " (");
			fmt_str(&b, shown);
			fmt_str(&b, ")");
			fmt_cstr(&b);
			copy(short_out, short_size, sym);
		}
		return;
	}
}

void violation_log(struct symbolizer *sym, const struct proc_entry *e, const struct pmw_report *rep)
{
	struct report_ctx x = { .sym = sym, .e = e, .rep = rep };
	char site[2 * ESCAPED_SIZE(PMW_SYM + 32)], site_short[ESCAPED_SIZE(PMW_SYM + 32)];
	char fault_sym[ESCAPED_SIZE(PMW_SYM + 32)], btbuf[8192], fields[JENTRY_BUF];
	struct violation_shown shown = {
		.pid = (int)e->pid,
		.generation = e->generation,
		.exe = proc_entry_exe(e),   /* the kernel's word only, never the report's */
	};
	struct fmt bt, f;
	struct jentry j;
	uint64_t allowance = budget_symbolize_allowance(e->budget);

	symbolizer_begin(sym);
	x.start = mono_us();
	if (allowance != UINT64_MAX)
		x.deadline = x.start + (allowance < VIOLATION_SYM_US ? allowance : VIOLATION_SYM_US);
	else
		x.deadline = UINT64_MAX;

	/* Backtrace, one line, innermost first. */
	fmt_init(&bt, btbuf, sizeof(btbuf));
	for (uint32_t i = 0; i < rep->n_frames; i++) {
		if (rep->frames[i].ip == 0)
			break;                   /* the end of the stack */
		if (i)
			fmt_str(&bt, " < ");
		frame_text(&x, &rep->frames[i], &bt);
	}
	shown.backtrace = fmt_cstr(&bt);

	/* Fault symbol: the daemon's resolution of the faulting ip, else the shim's. */
	{
		uint32_t idx = PMW_NO_MODULE;
		uint64_t off = 0;

		if (rep->n_frames > 0 && rep->frames[0].ip == rep->fault_ip &&
		    rep->frames[0].module != PMW_NO_MODULE) {
			idx = rep->frames[0].module;
			off = rep->frames[0].offset;
		} else {
			idx = module_for_ip(rep, rep->fault_ip);
			if (idx != PMW_NO_MODULE)
				off = rep->fault_ip - rep->modules[idx].base;
		}
		if (idx != PMW_NO_MODULE && symbol_of(&x, idx, off, fault_sym, sizeof(fault_sym)))
			shown.fault_symbol = fault_sym;
	}

	if (rep->object_site[0]) {
		object_site_text(&x, rep->object_site, site, sizeof(site), site_short, sizeof(site_short));
		shown.object_site = site;
		shown.object_site_short = site_short;
	}

	budget_symbolize_spent(e->budget, mono_us() - x.start, x.cut);

	/* What the shim would write, with what only the daemon knows. */
	jentry_init(&j, MID_VIOLATION, violation_priority(rep));
	jentry_about(&j, proc_entry_person(e));
	fmt_init(&f, fields, sizeof(fields));
	violation_fmt_fields(&f, rep, &shown);
	jentry_add_lines(&j, fmt_cstr(&f));
	jentry_add(&j, "OBJECT_PID=%d", (int)e->pid);
	jentry_add(&j, "PMALLOC_EXE_SOURCE=%s", e->exe ? "kernel" : "unknown");
	if (e->exe && e->exe_pid)
		jentry_add(&j, "PMALLOC_EXE_PID=%d", (int)e->exe_pid);
	if (e->comm[0])
		jentry_add(&j, "PMALLOC_COMM=%s", e->comm);
	jentry_add(&j, "PMALLOC_UID=%u", (unsigned)e->uid);
	if (e->via_pid)
		jentry_add(&j, "PMALLOC_VIA_PID=%d", (int)e->via_pid);
	if (x.cut)
		jentry_add(&j, "PMALLOC_SYMBOLS=cut");
	journal_add_object(&j, &e->object);
	(void)jentry_send(&j);
}
