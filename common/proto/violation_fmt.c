/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * violation_fmt.c - a violation record (struct pmw_report) as text: the
 * stderr line and the journal fields of pmallocd(8).  The one place that
 * says what a violation's line and entry hold; the shim (report.c,
 * journal.c) and pmallocd (violation.c) both call it.
 *
 * Owns: the wording of the line and of MESSAGE, the violation fields and
 * their order.
 * Never: allocates, calls a library function, or writes a string of the
 * record unescaped (the record may come from a hostile client: the daemon
 * checked its counts and NULs, not its text).  Async-signal-safe.
 */
#define _GNU_SOURCE
#include "violation_fmt.h"

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>

static const char *base_name(const char *path)
{
	const char *b = path;
	for (const char *p = path; *p; p++)
		if (*p == '/')
			b = p + 1;
	return b;
}

static bool has_object(const struct pmw_report *r)
{
	return r->object_start != 0 && r->address >= r->object_start;
}

/* shown (already escaped) when given, else raw escaped. */
static void text(struct fmt *f, const char *shown, const char *raw)
{
	if (shown)
		fmt_str(f, shown);
	else
		fmt_escaped(f, raw);
}

/* "KEY=value\n", or nothing when the value is empty. */
static void field(struct fmt *f, const char *key, const char *shown, const char *raw)
{
	if (shown ? !*shown : !*raw)
		return;
	fmt_str(f, key);
	fmt_str(f, "=");
	text(f, shown, raw);
	fmt_str(f, "\n");
}

int violation_priority(const struct pmw_report *r)
{
	return r->mode == PMW_MODE_AUDIT ? 4 : 2;
}

void violation_fmt_frame(struct fmt *f, const struct pmw_report *r, const struct pmw_frame *fr)
{
	if (fr->module < r->n_modules && fr->module < PMW_MODULES)
		fmt_printf(f, "%s+0x%" PRIx64, base_name(r->modules[fr->module].path), fr->offset);
	else
		fmt_printf(f, "0x%" PRIx64, fr->ip);
}

void violation_fmt_line(struct fmt *f, const struct pmw_report *r)
{
	fmt_printf(f, "write to protected pool \"%s\" at 0x%" PRIx64, r->pool, r->address);
	if (has_object(r)) {
		fmt_printf(f, ": offset %" PRIu64 " in %" PRIu64 "-byte object 0x%" PRIx64,
			   r->address - r->object_start, r->object_size, r->object_start);
		if (r->object_site[0])
			fmt_printf(f, " allocated at %s", r->object_site);
	} else {
		fmt_str(f, ": not inside an object");
	}
	if (r->fault_ip) {
		fmt_printf(f, "; ip 0x%" PRIx64 " (", r->fault_ip);
		violation_fmt_frame(f, r, &r->frames[0]);
		fmt_str(f, ")");
	} else {
		fmt_str(f, "; ip unknown");
	}
	if (r->cause == PMW_CAUSE_KERNEL)
		fmt_printf(f, " by the kernel in %s(2)", r->kernel_call);
	else if (r->cause == PMW_CAUSE_OTHER_THREAD)
		fmt_str(f, " (changed while the page was open for another audited write)");
	if (r->policy[0])
		fmt_printf(f, "; policy \"%s\"", r->policy);
	fmt_str(f, r->mode == PMW_MODE_AUDIT ? "; audit: write allowed\n" : "; enforce: killed by SIGSEGV\n");
}

static void message(struct fmt *f, const struct pmw_report *r, const struct violation_shown *s)
{
	fmt_printf(f, "MESSAGE=pmalloc: PID %d (", s->pid);
	text(f, s->exe, r->exe);
	fmt_printf(f, ") wrote to protected pool \"%s\"", r->pool);
	if (r->policy[0])
		fmt_printf(f, " of policy \"%s\"", r->policy);
	fmt_printf(f, " at 0x%" PRIx64, r->address);
	if (has_object(r)) {
		const char *site = s->object_site_short ? s->object_site_short : s->object_site;
		fmt_printf(f, " (offset %" PRIu64 " in %" PRIu64 "-byte object", r->address - r->object_start,
			   r->object_size);
		if (site ? *site : r->object_site[0]) {
			fmt_str(f, " allocated at ");
			text(f, site, r->object_site);
		}
		fmt_str(f, ")");
	} else {
		fmt_str(f, " (not inside a known object)");
	}
	if (r->fault_ip)
		fmt_printf(f, ", ip 0x%" PRIx64, r->fault_ip);
	else
		fmt_str(f, ", ip unknown");
	if (s->fault_symbol ? *s->fault_symbol : r->fault_symbol[0]) {
		fmt_str(f, " in ");
		text(f, s->fault_symbol, r->fault_symbol);
	}
	if (r->cause == PMW_CAUSE_KERNEL)
		fmt_printf(f, " by the kernel in %s(2)", r->kernel_call);
	else if (r->cause == PMW_CAUSE_OTHER_THREAD)
		fmt_str(f, " (changed while the page was open for another audited write)");
	fmt_str(f, r->mode == PMW_MODE_AUDIT ? "; write allowed (audit)\n" : "; process killed (enforce)\n");
}

/* The faulting instruction's module file, offset and build-id: what a
 * reader needs to name the function when the writer could not (the shim
 * reads no symbol file; pmallocctl does, from this path). */
static void fault_module(struct fmt *f, const struct pmw_report *r)
{
	const struct pmw_module *m;
	char hex[2 * PMW_BUILD_ID + 1];
	uint32_t n;

	if (r->n_frames == 0 || r->frames[0].module >= r->n_modules || r->frames[0].module >= PMW_MODULES)
		return;
	m = &r->modules[r->frames[0].module];
	if (m->path[0] != '/')
		return;
	fmt_str(f, "PMALLOC_FAULT_MODULE=");
	fmt_escaped(f, m->path);
	fmt_printf(f, "\nPMALLOC_FAULT_OFFSET=0x%" PRIx64 "\n", r->frames[0].offset);
	n = m->build_id_len < PMW_BUILD_ID ? m->build_id_len : PMW_BUILD_ID;
	if (n == 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		hex[2 * i] = "0123456789abcdef"[m->build_id[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[m->build_id[i] & 0xf];
	}
	hex[2 * n] = '\0';
	fmt_printf(f, "PMALLOC_FAULT_BUILD_ID=%s\n", hex);
}

void violation_fmt_fields(struct fmt *f, const struct pmw_report *r, const struct violation_shown *s)
{
	bool audit = r->mode == PMW_MODE_AUDIT;

	message(f, r, s);
	fmt_printf(f, "PMALLOC_POLICY=%s\nPMALLOC_POOL=%s\nPMALLOC_MODE=%s\nPMALLOC_ADDRESS=0x%" PRIx64 "\n",
		   r->policy, r->pool, audit ? "audit" : "enforce", r->address);
	if (has_object(r))
		fmt_printf(f, "PMALLOC_OFFSET=%" PRIu64 "\nPMALLOC_OBJECT_SIZE=%" PRIu64
			   "\nPMALLOC_OBJECT_START=0x%" PRIx64 "\n", r->address - r->object_start,
			   r->object_size, r->object_start);
	field(f, "PMALLOC_OBJECT_SITE", s->object_site, r->object_site);
	fmt_printf(f, "PMALLOC_FAULT_IP=0x%" PRIx64 "\n", r->fault_ip);
	field(f, "PMALLOC_FAULT_SYMBOL", s->fault_symbol, r->fault_symbol);
	fault_module(f, r);
	if (s->backtrace) {
		field(f, "PMALLOC_BACKTRACE", s->backtrace, "");
	} else if (r->n_frames > 0 && r->frames[0].ip) {
		fmt_str(f, "PMALLOC_BACKTRACE=");
		for (uint32_t i = 0; i < r->n_frames && i < PMW_FRAMES && r->frames[i].ip; i++) {
			if (i)
				fmt_str(f, " < ");
			violation_fmt_frame(f, r, &r->frames[i]);
		}
		fmt_str(f, "\n");
	}
	if (r->cause == PMW_CAUSE_KERNEL)
		fmt_printf(f, "PMALLOC_KERNEL_CALL=%s\n", r->kernel_call);
	fmt_str(f, "PMALLOC_EXE=");
	text(f, s->exe, r->exe);
	fmt_printf(f, "\nPMALLOC_GENERATION=%" PRIu64 "\n", s->generation);
	if (r->role[0])
		fmt_printf(f, "PMALLOC_ROLE=%s\n", r->role);
	/* The signal the process dies of, as coredump's COREDUMP_SIGNAL. */
	if (!audit)
		fmt_printf(f, "PMALLOC_SIGNAL=%d\nPMALLOC_SIGNAL_NAME=SIGSEGV\n", SIGSEGV);
}
