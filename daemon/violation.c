/*
 * violation.c - from a violation report to the journal entry people read.
 *
 * Owns: resolving the report's frames through symbolize.c, the backtrace
 * line, the one-line MESSAGE and the entry's fields (pmallocd(8)).
 * Never: trusts report strings in a MESSAGE without sanitizing them, takes
 * the pid or the exe from the report (the registry entry has the kernel's;
 * server.c checked its policy and pool against the hand-out), or fails
 * to log: whatever cannot be resolved is shown raw.
 */
#define _GNU_SOURCE
#include "violation.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "journal.h"
#include "strbuf.h"

struct modinfo {
	bool resolved;
	char path[PMW_PATH];             /* as reported; the process's exe for an unnamed main program */
	const char *shown;               /* path escaped: shown_buf or the entry's exe */
	char shown_buf[ESCAPED_SIZE(PMW_PATH)];
	struct sym_module *sym;          /* NULL: not symbolized */
	int error;
	char build_id[2 * 64 + 1];       /* hex, "" unknown */
};

struct report_ctx {
	struct symbolizer *sym;
	const struct proc_entry *e;
	const struct pmw_report *rep;
	struct modinfo mods[PMW_MODULES];
};

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

	str_copy(mi->path, sizeof(mi->path), pm->path);
	text_escape(mi->shown_buf, sizeof(mi->shown_buf), mi->path);
	mi->shown = mi->shown_buf;
	/* The main program has no name in the link map: it is the exe. */
	if (!mi->path[0] && x->e->exe) {
		str_copy(mi->path, sizeof(mi->path), x->e->exe);
		mi->shown = proc_entry_exe(x->e);
	}
	if (pm->build_id_len > 0)
		hex(mi->build_id, sizeof(mi->build_id), pm->build_id, pm->build_id_len);

	if (mi->path[0] != '/') {
		mi->error = -EINVAL;
		return mi;
	}
	r = symbolizer_open(x->sym, mi->path, pm->build_id, pm->build_id_len, x->e->uid, &mi->sym);
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

	return mi && mi->sym && sym_module_lookup(mi->sym, offset, buf, size) >= 0;
}

static void frame_text(struct report_ctx *x, const struct pmw_frame *f, struct strbuf *b)
{
	struct modinfo *mi = f->module == PMW_NO_MODULE ? NULL : module_get(x, f->module);
	char sym[ESCAPED_SIZE(PMW_SYM + 32)];

	if (!mi) {
		strbuf_printf(b, "0x%" PRIx64, f->ip);
		return;
	}
	strbuf_printf(b, "%s+0x%" PRIx64, mi->shown[0] ? mi->shown : "?", f->offset);
	if (mi->sym && sym_module_lookup(mi->sym, f->offset, sym, sizeof(sym)) >= 0)
		strbuf_printf(b, " (%s)", sym);
	else if (mi->error == -ESTALE)
		strbuf_puts(b, " (file replaced since: build-id differs)");
	if (mi->build_id[0])
		strbuf_printf(b, " [%s]", mi->build_id);
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
	str_copy(out, size, shown);
	str_copy(short_out, short_size, shown);
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
			struct strbuf b;

			strbuf_init_fixed(&b, out, size);
			strbuf_printf(&b, "%s (%s)", sym, shown);
			str_copy(short_out, short_size, sym);
		}
		return;
	}
}

void violation_log(struct symbolizer *sym, const struct proc_entry *e, const struct pmw_report *rep)
{
	struct report_ctx x = { .sym = sym, .e = e, .rep = rep };
	char policy[ESCAPED_SIZE(PMW_NAME)], pool[ESCAPED_SIZE(PMW_NAME)];
	char site[2 * ESCAPED_SIZE(PMW_SYM + 32)], site_short[ESCAPED_SIZE(PMW_SYM + 32)];
	char fault_sym[ESCAPED_SIZE(PMW_SYM + 32)], btbuf[8192], msgbuf[4096];
	char objbuf[512];
	struct strbuf bt, msg;
	const char *exe, *mode;
	bool audit = rep->mode == PMW_MODE_AUDIT, have_object;
	uint64_t offset = 0;
	struct jentry j;

	/* Every string of the report is escaped once, here (escape.h). */
	text_escape(policy, sizeof(policy), rep->policy);
	text_escape(pool, sizeof(pool), rep->pool);
	/* The kernel's word only: what the report claims is never the exe. */
	exe = proc_entry_exe(e);
	mode = audit ? "audit" : "enforce";

	have_object = rep->object_start != 0 && rep->address >= rep->object_start;
	if (have_object)
		offset = rep->address - rep->object_start;

	/* Backtrace, one line, innermost first. */
	strbuf_init_fixed(&bt, btbuf, sizeof(btbuf));
	for (uint32_t i = 0; i < rep->n_frames; i++) {
		if (rep->frames[i].ip == 0)
			break;                   /* the end of the stack */
		if (i)
			strbuf_puts(&bt, " < ");
		frame_text(&x, &rep->frames[i], &bt);
	}

	/* Fault symbol: the daemon's resolution of the faulting ip, else the shim's. */
	fault_sym[0] = '\0';
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
		if (idx == PMW_NO_MODULE || !symbol_of(&x, idx, off, fault_sym, sizeof(fault_sym)))
			text_escape(fault_sym, sizeof(fault_sym), rep->fault_symbol);
	}

	site[0] = site_short[0] = '\0';
	if (rep->object_site[0])
		object_site_text(&x, rep->object_site, site, sizeof(site), site_short, sizeof(site_short));

	/* MESSAGE */
	strbuf_init_fixed(&msg, msgbuf, sizeof(msgbuf));
	strbuf_printf(&msg, "pmalloc: PID %d (%s) wrote to protected pool \"%s\"", (int)e->pid, exe,
		      pool);
	if (policy[0])
		strbuf_printf(&msg, " of policy \"%s\"", policy);
	strbuf_printf(&msg, " at 0x%" PRIx64, rep->address);
	if (have_object) {
		snprintf(objbuf, sizeof(objbuf), "offset %" PRIu64 " in %" PRIu64 "-byte object", offset,
			 rep->object_size);
		strbuf_printf(&msg, " (%s%s%s)", objbuf, site_short[0] ? " allocated at " : "", site_short);
	} else
		strbuf_puts(&msg, " (not inside a known object)");
	strbuf_printf(&msg, ", ip 0x%" PRIx64, rep->fault_ip);
	if (fault_sym[0])
		strbuf_printf(&msg, " in %s", fault_sym);
	strbuf_puts(&msg, audit ? "; write allowed (audit)" : "; process killed (enforce)");

	jentry_init(&j, MID_VIOLATION, audit ? LOG_WARNING : LOG_CRIT);
	jentry_about(&j, e->uid);
	jentry_add(&j, "MESSAGE=%s", strbuf_str(&msg));
	jentry_add(&j, "OBJECT_PID=%d", (int)e->pid);
	jentry_add(&j, "PMALLOC_POLICY=%s", policy);
	jentry_add(&j, "PMALLOC_POOL=%s", pool);
	jentry_add(&j, "PMALLOC_MODE=%s", mode);
	jentry_add(&j, "PMALLOC_ADDRESS=0x%" PRIx64, rep->address);
	if (have_object) {
		jentry_add(&j, "PMALLOC_OFFSET=%" PRIu64, offset);
		jentry_add(&j, "PMALLOC_OBJECT_SIZE=%" PRIu64, rep->object_size);
		jentry_add(&j, "PMALLOC_OBJECT_START=0x%" PRIx64, rep->object_start);
	}
	if (site[0])
		jentry_add(&j, "PMALLOC_OBJECT_SITE=%s", site);
	jentry_add(&j, "PMALLOC_FAULT_IP=0x%" PRIx64, rep->fault_ip);
	if (fault_sym[0])
		jentry_add(&j, "PMALLOC_FAULT_SYMBOL=%s", fault_sym);
	if (bt.len)
		jentry_add(&j, "PMALLOC_BACKTRACE=%s", strbuf_str(&bt));
	jentry_add(&j, "PMALLOC_EXE=%s", exe);
	jentry_add(&j, "PMALLOC_EXE_SOURCE=%s", e->exe ? "kernel" : "unknown");
	if (e->exe && e->exe_pid)
		jentry_add(&j, "PMALLOC_EXE_PID=%d", (int)e->exe_pid);
	if (e->comm[0])
		jentry_add(&j, "PMALLOC_COMM=%s", e->comm);
	jentry_add(&j, "PMALLOC_UID=%u", (unsigned)e->uid);
	jentry_add(&j, "PMALLOC_GENERATION=%" PRIu64, e->generation);
	if (e->via_pid)
		jentry_add(&j, "PMALLOC_VIA_PID=%d", (int)e->via_pid);
	/* The signal the process dies of, as coredump's COREDUMP_SIGNAL. */
	if (!audit) {
		jentry_add(&j, "PMALLOC_SIGNAL=%d", SIGSEGV);
		jentry_add(&j, "PMALLOC_SIGNAL_NAME=SIGSEGV");
	}
	journal_add_object(&j, e);
	(void)jentry_send(&j);
}
