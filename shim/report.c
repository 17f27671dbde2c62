/*
 * report.c - the violation line on stderr, and the hand-off to pmallocd or
 * the journal (report_send_hook, set by the client code at start-up).
 *
 * Async-signal-safe throughout: no malloc, no stdio, no locks.  Module
 * names come from _dl_find_object(), which glibc documents as AS-safe.
 */
#define _GNU_SOURCE
#include "report.h"
#include "fmt.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

void (*report_send_hook)(const struct violation *v);
const char *report_program;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void report_fmt_location(struct fmt *f, uintptr_t a)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)a, &dlfo) == 0 && dlfo.dlfo_link_map) {
		const char *name = dlfo.dlfo_link_map->l_name;
		if (!name || !*name)      /* the program: argv[0] may be retitled */
			name = report_program && *report_program ? report_program : program_invocation_short_name;
		fmt_str(f, base_name(name));
		fmt_str(f, "+");
		fmt_hex(f, a - (uintptr_t)dlfo.dlfo_link_map->l_addr);
		return;
	}
	fmt_hex(f, a);
}

void report_violation(const struct violation *v)
{
	char buf[1024];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_str(&f, "pmalloc[");
	fmt_u64(&f, (uint64_t)getpid());
	fmt_str(&f, "]: write to protected pool \"");
	fmt_str(&f, v->pool);
	fmt_str(&f, "\" at ");
	fmt_hex(&f, v->address);
	if (v->object) {
		fmt_str(&f, ": offset ");
		fmt_u64(&f, v->address - v->object);
		fmt_str(&f, " in ");
		fmt_u64(&f, v->object_size);
		fmt_str(&f, "-byte object ");
		fmt_hex(&f, v->object);
		if (v->site_ra) {
			fmt_str(&f, " allocated at ");
			if (v->site_symbol)
				fmt_str(&f, v->site_symbol);
			else
				report_fmt_location(&f, v->site_ra);
		}
	} else {
		fmt_str(&f, ": not inside an object");
	}
	fmt_str(&f, "; ip ");
	fmt_hex(&f, v->ip);
	fmt_str(&f, " (");
	report_fmt_location(&f, v->ip);
	fmt_str(&f, ")");
	if (v->policy && *v->policy) {
		fmt_str(&f, "; policy \"");
		fmt_str(&f, v->policy);
		fmt_str(&f, "\"");
	}
	fmt_str(&f, v->audit ? "; audit: write allowed\n" : "; enforce: killed by SIGSEGV\n");
	fmt_flush_stderr(&f);
	if (report_send_hook)
		report_send_hook(v);
}
