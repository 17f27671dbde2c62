/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve.c - from "the function whose code called malloc" to a pool: the
 * policy's site and wrapper rules, read from its image (policy_image.h, in
 * the read-only state), turned into address ranges, and the decision for
 * each return address, made once and cached in site.c.
 *
 * Reading symbols is what costs (libc's debug file alone has 10,000
 * functions), so an object loaded at start-up that the rules can name has
 * its table (.symtab where present, its debug file's, so static functions
 * count; .dynsym otherwise) located and read only at the first allocation
 * made from its code: an object that never allocates is never opened.  A
 * file opened then that is not the object loaded (replaced since, or
 * another under a chroot: its build-id differs), or that cannot be opened
 * (a sandbox refusing it), leaves the object its exported functions,
 * .dynsym in memory (symtab.c).  Before main, the rules are only checked
 * against the exported functions (for the word on a rule that names
 * nothing); a rule that names none has the tables it could name read then.
 * A program about to restrict itself (no_new_privs, a seccomp filter:
 * restrict.c) has every table still unread read first: a filter may kill
 * the process at an open(2).  Objects loaded later by dlopen are read from
 * memory (.dynsym, exported functions only) at the first allocation made
 * from them.
 *
 * Range tables are built aside and published with one atomic store, then
 * never written again (they are mprotect'ed read-only) nor freed, so
 * lookups take no lock.  Its own allocations go to the heap by name
 * (heap.h); it runs with shim_busy set for what the loader and libc
 * allocate on its behalf.  Never called from a signal handler.
 *
 * This file reads the objects and answers the route queries; the rules
 * are resolve_rules.c's, the range tables resolve_table.c's (what they
 * share: resolve_inner.h).
 */
#define _GNU_SOURCE
#include "resolve.h"
#include "stderr.h"
#include "os.h"
#include "site.h"
#include "symtab.h"
#include "heap.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>
#include "resolve_inner.h"      /* last: its short names are macros */

#define OBJECTS_MAX 4096

static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static struct object_key scanned[OBJECTS_MAX];   /* objects already read */
static size_t n_scanned;

static int collect_symbol(void *ctx, const char *name, uintptr_t start, size_t size)
{
	struct collect *c = ctx;
	struct rule *ru = resolve_first_rule(c->apply, c->n_apply, name);
	if (!ru)
		return 0;
	resolve_mark_matched(ru);
	return resolve_collect_add(c, start, start + size, ru->route, name, start);
}

static bool key_equal(const struct object_key *a, uintptr_t base, const char *name)
{
	return a->base == base && strcmp(a->name, name) == 0;
}

static bool already_scanned(uintptr_t base, const char *name)
{
	for (size_t i = 0; i < n_scanned; i++)
		if (key_equal(&scanned[i], base, name))
			return true;
	return false;
}

/* Remember obj as read (resolve_lock held, or start-up). */
static void mark_scanned(struct object_key obj)
{
	if (n_scanned < OBJECTS_MAX)
		scanned[n_scanned++] = obj;
}

/* The call sites that offset rules name in one object (at path), into p.
 * A rule pinned to a build-id the object does not have routes nothing
 * there, and says so (once: each object is scanned once). */
static void collect_points(struct collect *p, const char *path, const ElfW(Phdr) *ph, size_t phnum)
{
	char id[SYMTAB_BUILD_ID_MAX];
	int have_id = -1;            /* read when a rule first asks */
	for (size_t i = 0; i < n_rules; i++) {
		struct rule *ru = &rules[i];
		if (!ru->by_offset || !resolve_object_matches(ru, path))
			continue;
		if (ru->build_id) {
			if (have_id < 0)
				have_id = ph && symtab_build_id(ph, phnum, p->obj.base, id);
			if (!have_id || strcmp(id, ru->build_id) != 0) {
				debug_printf("site rule \"%s@%s:%s\": %s has build-id %s: not routed",
					     ru->object, ru->build_id, ru->function, path,
					     have_id ? id : "(none)");
				continue;
			}
		}
		uintptr_t ra = p->obj.base + (uintptr_t)ru->offset;
		if (ra == 0 || resolve_collect_add(p, ra - 1, ra, ru->route, resolve_base_name(path), p->obj.base) < 0)
			continue;
		resolve_mark_matched(ru);
	}
}

/* Whether a name in t may match one of list[n]: false only when every
 * rule spells its first characters and none of those texts occurs in the
 * string table.  One search over the names (libc's debug file: 130 KB,
 * one pass per distinct rarest byte of the rules' texts) instead of the
 * walk over every symbol (240 KB more touched, and the loop): objects the
 * rules cannot name, the common case, cost that only. */
static bool may_name(const struct symtab *t, struct rule *const *list, size_t n)
{
	const char *texts[SYMTAB_TEXTS_MAX];
	size_t lens[SYMTAB_TEXTS_MAX];
	if (n > SYMTAB_TEXTS_MAX)
		return true;             /* more than one search looks for: may */
	for (size_t i = 0; i < n; i++) {
		texts[i] = list[i]->function;
		lens[i] = list[i]->prefix_len;
	}
	return symtab_has_any(t, texts, lens, n);
}

/* The ranges of the functions the rules name in one object, from its
 * symbol table t, into c. */
static void collect_functions(struct collect *c, const struct applicable *a, const struct symtab *t,
			      const char *path)
{
	struct symtab_filter filter;
	c->apply = a->by_name;
	c->n_apply = a->n_name;
	if (!c->n_apply)
		return;
	if (!may_name(t, a->by_name, a->n_name)) {
		debug_printf("no name in %s can match a rule: its %zu symbols not walked", path, t->n_syms);
		return;
	}
	int r = symtab_walk(t, c->obj.base, resolve_filter_for(&filter, a->by_name, a->n_name), collect_symbol, c);
	if (r < 0)
		debug_printf("cannot read symbols of %s: %s", path, strerror(-r));
}

/* Publish what was collected of one object and remember it as read, unless
 * another thread did first (resolve_lock held).  false when it did. */
static bool publish(struct collect *c, struct collect *p)
{
	if (already_scanned(c->obj.base, c->obj.name))
		return false;
	mark_scanned(c->obj);
	if (p && p->n)
		resolve_merge(&points, p, true);
	return c->n && resolve_merge(&table, c, true) == 0;
}

/* Said outside the lock: nothing that may call out runs under it. */
static void say_ranges(const struct collect *c, const char *path)
{
	if (!pm_debug)
		return;
	for (size_t i = 0; i < c->n; i++)
		debug_printf("site %s [%#lx, %#lx) in %s -> %s", c->r[i].name, (unsigned long)c->r[i].start,
			     (unsigned long)c->r[i].end, path,
			     c->r[i].route == SITE_ROUTE_WRAPPER ? "wrapper" : state->pools[c->r[i].route].pool->name);
}

/* Objects loaded at start-up that rules can name by function: their symbol
 * tables located (files opened) and read at the first allocation made from
 * their code, most objects of a large program never allocating from a
 * site, or never at all.  Written at start-up only, but for an entry's
 * .dynsym ranges and its read flag, under resolve_lock. */
struct pending {
	struct object_key obj;
	const char *path;
	/* Its program headers, mapped while it is loaded; an entry whose
	 * object is unloaded (one an earlier constructor dlopen'ed) is marked
	 * read then, and never used again (resolve_forget_unloaded). */
	const ElfW(Phdr) *ph;
	size_t phnum;
	/* The ranges the rule check found in its .dynsym before main (when it
	 * walked it): what the object's table gives when .dynsym is all it has,
	 * so that table is not walked twice. */
	struct range *dyn_r;
	size_t dyn_n;
	size_t dyn_syms;            /* the symbols it walked */
	bool dyn_walked;
	_Atomic bool read;
};
static struct pending *pending;
static size_t n_pending;
static _Atomic size_t n_unread;      /* of them */

static struct pending *find_pending(uintptr_t base, const char *name)
{
	for (size_t i = 0; i < n_pending; i++)
		if (key_equal(&pending[i].obj, base, name))
			return &pending[i];
	return NULL;
}

/* The program's path, as read at start-up; NULL when unknown. */
static const char *program_path;

/* The path of the object the link map names l_name ("" for the program). */
static const char *object_path(const char *l_name, char *buf, size_t len)
{
	if (l_name && l_name[0])
		return l_name;
	if (program_path)
		return program_path;
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

/* The rule's range for code address a: a call site an offset rule names,
 * else the function a name rule names. */
static const struct range *lookup(uintptr_t a)
{
	const struct range *r = resolve_lookup_in(atomic_load_explicit(&points, memory_order_acquire), a);
	return r ? r : resolve_lookup_in(atomic_load_explicit(&table, memory_order_acquire), a);
}

struct phdr_query {
	uintptr_t base;
	const char *name;
	const ElfW(Phdr) *ph;
	size_t phnum;
};

static int find_phdrs(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct phdr_query *q = ctx;
	if (info->dlpi_addr != q->base || strcmp(info->dlpi_name ? info->dlpi_name : "", q->name) != 0)
		return 0;
	q->ph = info->dlpi_phdr;
	q->phnum = info->dlpi_phnum;
	return 1;
}

/* The executable segments of an object, [lo, hi) each, to fn. */
static void each_text(const ElfW(Phdr) *ph, size_t phnum, uintptr_t base,
		      void (*fn)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx)
{
	for (size_t i = 0; ph && i < phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && ph[i].p_memsz)
			fn(base + ph[i].p_vaddr, base + ph[i].p_vaddr + ph[i].p_memsz, ctx);
}

/* The return addresses of code [lo, hi) (a call's return address is past
 * it, so one byte on), into the filter: between site_policy_open and
 * site_policy_close. */
static void mark_text(uintptr_t lo, uintptr_t hi, void *ctx)
{
	(void)ctx;
	site_policy_mark(lo + 1, hi + 1);
}

/* The granules narrow() keeps, a bit each (site.h): 8 KiB of .bss under
 * resolve_lock, two pages touched, where a byte map from the heap was
 * 64 KiB of fresh pages at each narrowing (16 first touches, about 60 us
 * of python3's start-up). */
static uint64_t keep_bits[SITE_POLICY_KEEP_WORDS];

static void keep_text(uintptr_t lo, uintptr_t hi, void *ctx)
{
	uint64_t *keep = ctx;
	struct site_policy_run run[2];
	size_t n = site_policy_runs(lo + 1, hi + 1, run);
	for (size_t k = 0; k < n; k++) {
		size_t g = run[k].at, end = run[k].at + run[k].n;
		for (; g < end && g % 64; g++)
			keep[g / 64] |= UINT64_C(1) << (g % 64);
		for (; g + 64 <= end; g += 64)
			keep[g / 64] = ~UINT64_C(0);
		for (; g < end; g++)
			keep[g / 64] |= UINT64_C(1) << (g % 64);
	}
}

static void unmark_text(uintptr_t lo, uintptr_t hi, void *ctx)
{
	site_policy_unmark(lo + 1, hi + 1, ctx);
}

/* The code of an object whose symbols wait for its first allocation is
 * marked in site.c's filter whole (resolve_init): the filter may be what
 * malloc looks at first (interpose.c), and one of its call sites may be a
 * rule's.  Once its symbols are read (pe, just read; resolve_lock held),
 * only the ranges the rules name stay marked: its other granules are
 * cleared unless a range, or the code of another object still unread,
 * shares them (the filter folds addresses). */
static bool texts_marked;          /* start-up's unread objects are (resolve_init) */

static void narrow(const struct pending *pe)
{
	if (!texts_marked)
		return;
	memset(keep_bits, 0, sizeof(keep_bits));
	struct range_table *tabs[] = { atomic_load(&table), atomic_load(&points) };
	for (size_t k = 0; k < ARRAY_SIZE(tabs); k++)
		for (size_t i = 0; tabs[k] && i < tabs[k]->n; i++)
			keep_text(tabs[k]->r[i].start, tabs[k]->r[i].end, keep_bits);
	for (size_t i = 0; i < n_pending; i++)
		if (&pending[i] != pe && !atomic_load_explicit(&pending[i].read, memory_order_relaxed))
			each_text(pending[i].ph, pending[i].phnum, pending[i].obj.base, keep_text, keep_bits);
	site_policy_open();
	each_text(pe->ph, pe->phnum, pe->obj.base, unmark_text, keep_bits);
	site_policy_close();
}

/* An object loaded at start-up, at the first allocation from it (or before
 * main, for the rule check): its table located now, its functions read,
 * the table released (resolve_lock held: a second thread allocating from
 * it meanwhile waits for the ranges instead of deciding without them).
 * When the table found is the .dynsym the rule check walked already, its
 * ranges then are the object's. */
static void read_pending(struct pending *pe, struct collect *c)
{
	struct applicable a;
	resolve_applicable_rules(pe->path, &a);
	c->obj = pe->obj;
	struct symtab t;
	/* .dynsym in memory only when the rule check did not walk it already
	 * (counting its symbols walks the hash table: 6,400 instructions for
	 * python3's). */
	bool found = symtab_open(pe->path, pe->obj.base, pe->ph, pe->phnum, !pe->dyn_walked, &t) == 0;
	if (found && (t.map || !pe->dyn_walked)) {
		debug_printf("reading the %zu symbols of %s", t.n_syms, pe->path);
		collect_functions(c, &a, &t, pe->path);
	} else if (pe->dyn_walked) {
		debug_printf("%s has only the %zu exported symbols read for the rules", pe->path, pe->dyn_syms);
		c->r = pe->dyn_r;
		c->n = c->cap = pe->dyn_n;
		pe->dyn_r = NULL;
	}
	if (found)
		symtab_close(&t);
	heap_free(pe->dyn_r);
	pe->dyn_r = NULL;
	publish(c, NULL);
	atomic_store_explicit(&pe->read, true, memory_order_release);
	atomic_fetch_sub(&n_unread, 1);
	narrow(pe);
}

/* An object loaded after start-up (dlopen), at the first allocation from
 * it: read from memory (.dynsym: no file is opened after start-up). */
static void read_loaded(const struct link_map *lm, const char *key_name)
{
	char buf[4096];
	const char *path = object_path(lm->l_name, buf, sizeof(buf));
	path = path ? path : "?";
	/* Its program headers (for its build-id): they stay mapped while the
	 * object is loaded, and dlclose cannot run under the shim's guard. */
	struct phdr_query q = { lm->l_addr, key_name, NULL, 0 };
	dl_iterate_phdr(find_phdrs, &q);
	struct applicable a;
	size_t waiting = resolve_waiting();
	resolve_applicable_rules(path, &a);
	struct collect c = { .obj = { lm->l_addr, heap_strdup(key_name) } };
	if (!c.obj.name)
		return;
	struct collect p = { .obj = c.obj };
	if (a.n_offset)
		collect_points(&p, path, q.ph, q.phnum);
	struct symtab t;
	size_t unmatched = resolve_unmatched();
	pthread_mutex_lock(&resolve_lock);
	bool fresh = !already_scanned(c.obj.base, c.obj.name);
	if (fresh && a.n_name && symtab_open_loaded(lm->l_ld, lm->l_addr, &t) == 0)
		collect_functions(&c, &a, &t, path);
	fresh = fresh && publish(&c, &p);
	pthread_mutex_unlock(&resolve_lock);
	if (fresh)
		say_ranges(&c, path);
	heap_free(c.r);
	heap_free(p.r);
	/* pmallocd shows which rules matched: tell it when a dlopen'ed
	 * object resolves one that nothing matched before, or is the first
	 * that a waiting rule's object glob fits.  (A start-up object read
	 * late never does: every object a rule without a match could name
	 * was read before main.) */
	const struct shim_state *st = state;   /* the read-only copy of shim */
	if ((resolve_unmatched() < unmatched || resolve_waiting() < waiting) && st && st->rules_changed)
		st->rules_changed();
}

/* The object holding code address a, read if it was not. */
static void ensure_scanned(uintptr_t a)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)a, &dlfo) != 0 || !dlfo.dlfo_link_map)
		return;
	const struct link_map *lm = dlfo.dlfo_link_map;
	const char *key_name = lm->l_name ? lm->l_name : "";
	struct collect c = { 0 };
	pthread_mutex_lock(&resolve_lock);
	bool done = already_scanned(lm->l_addr, key_name);
	struct pending *pe = done ? NULL : find_pending(lm->l_addr, key_name);
	if (pe && atomic_load_explicit(&pe->read, memory_order_relaxed))
		pe = NULL;          /* read, then forgotten: loaded again since */
	if (pe)
		read_pending(pe, &c);
	pthread_mutex_unlock(&resolve_lock);
	if (pe)
		say_ranges(&c, pe->path);
	heap_free(c.r);
	if (!done && !pe)
		read_loaded(lm, key_name);
}

/* ensure_scanned() for an object loaded at start-up and not read yet; for
 * the others, one lock-free look (a wrapper's callers are looked up at
 * every call through it). */
static void read_if_pending(uintptr_t a)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)a, &dlfo) != 0 || !dlfo.dlfo_link_map)
		return;
	const struct link_map *lm = dlfo.dlfo_link_map;
	const struct pending *pe = find_pending(lm->l_addr, lm->l_name ? lm->l_name : "");
	if (pe && !atomic_load_explicit(&pe->read, memory_order_acquire))
		ensure_scanned(a);
}

int resolve_route(uintptr_t ra, uint16_t id)
{
	uintptr_t a = ra - 1;        /* inside the call instruction's function */
	if (any_specific)
		ensure_scanned(a);
	const struct range *r = lookup(a);
	int route = r ? r->route : state->match_all >= 0 ? state->match_all : SITE_ROUTE_HEAP;
	if (r && route >= 0 && id != SITE_NONE && !site_symbol(id)) {
		char sym[64];
		snprintf(sym, sizeof(sym), "%s+%#lx", r->name, (unsigned long)(ra - r->name_base));
		site_set_symbol(id, sym);
		debug_printf("allocation site %s (%#lx) -> pool \"%s\"", sym, (unsigned long)ra,
			     state->pools[route].pool->name);
	}
	site_set_route(id, route);
	return route;
}

/* Does code [lo, hi), folded as the filter folds it, cover index g? */
struct fold_query {
	uint16_t g;
	bool covers;
};

static void text_covers(uintptr_t lo, uintptr_t hi, void *ctx)
{
	struct fold_query *q = ctx;
	uintptr_t g0 = (lo + 1) >> SITE_POLICY_SHIFT, g1 = hi >> SITE_POLICY_SHIFT;
	if (g1 - g0 >= SITE_POLICY_GRANULES)
		q->covers = true;
	else if ((uint16_t)(q->g - (uint16_t)g0) <= (uint16_t)(g1 - g0))
		q->covers = true;
}

static void read_one(struct pending *pe, bool once_only);

void resolve_read_sharing(uintptr_t ra)
{
	if (!atomic_load_explicit(&n_unread, memory_order_acquire))
		return;
	for (size_t i = 0; i < n_pending; i++) {
		struct fold_query q = { site_policy_index(ra), false };
		if (atomic_load_explicit(&pending[i].read, memory_order_acquire))
			continue;
		each_text(pending[i].ph, pending[i].phnum, pending[i].obj.base, text_covers, &q);
		if (q.covers)
			read_one(&pending[i], true);
	}
}

void resolve_pools_closed(void)
{
	/* The filter's writers take resolve_lock (publish_table): one opens
	 * the pages at a time. */
	pthread_mutex_lock(&resolve_lock);
	if (!site_policy_closed()) {
		site_policy_open();
		site_policy_mark_closed();
		site_policy_close();
	}
	pthread_mutex_unlock(&resolve_lock);
}

int resolve_policy_route(uintptr_t ra)
{
	const struct range *r = lookup(ra - 1);
	return r ? r->route : state && state->match_all >= 0 ? state->match_all : SITE_ROUTE_HEAP;
}

struct unwind_walk {
	uintptr_t ra;
	uintptr_t caller;
	bool seen;
};

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_walk *w = arg;
	uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
	if (!w->seen) {
		w->seen = ip == w->ra;
		return _URC_NO_REASON;
	}
	/* A caller in an object not read yet may be a wrapper too. */
	if (atomic_load_explicit(&n_unread, memory_order_acquire))
		read_if_pending(ip - 1);
	const struct range *r = lookup(ip - 1);
	if (r && r->route == SITE_ROUTE_WRAPPER)
		return _URC_NO_REASON;      /* a wrapper calling a wrapper: keep going */
	w->caller = ip;
	return _URC_END_OF_STACK;
}

/* Costs one _Unwind_Backtrace up to the first caller outside a wrapper,
 * at every allocation through a wrapper (the caller's own decision is then
 * the cached one): about 9,000 instructions for one wrapper level called
 * 8 frames deep (x86-64, callgrind), some 1,000 a frame walked, the
 * shim's own frames included. */
struct site_hit resolve_through_wrapper(uintptr_t ra)
{
	struct unwind_walk w = { .ra = ra };
	_Unwind_Backtrace(unwind_step, &w);
	if (!w.caller)          /* no caller found: charge the wrapper, to the heap */
		return (struct site_hit){ SITE_ROUTE_HEAP, site_id(ra) };
	struct site_hit h = site_lookup(w.caller);
	if (h.route == SITE_ROUTE_UNKNOWN)
		h.route = resolve_route(w.caller, h.id);
	if (h.route == SITE_ROUTE_WRAPPER)  /* cannot be (wrappers are skipped), but never loop */
		h.route = SITE_ROUTE_HEAP;
	return h;
}

/* A loaded object, as dl_iterate_phdr lists it. */
struct loaded_object {
	uintptr_t base;
	const char *name;            /* l_name: stays while it is loaded */
	const ElfW(Phdr) *ph;
	size_t phnum;
};

struct loaded_list {
	struct loaded_object *o;
	size_t n, cap;
};

static int visit_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct loaded_list *l = ctx;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct loaded_object *o = heap_realloc(l->o, cap * sizeof(*o));
		if (!o)
			return 1;
		l->o = o;
		l->cap = cap;
	}
	l->o[l->n++] = (struct loaded_object){ info->dlpi_addr, info->dlpi_name ? info->dlpi_name : "",
						info->dlpi_phdr, info->dlpi_phnum };
	return 0;
}

/* One object loaded at start-up: the call sites offset rules name in it
 * (no symbols needed), and, when rules can name its functions, an entry
 * for its symbols, located and read at the first allocation from it: no
 * file is opened here.  The shim's own code is never a site. */
static void prepare_object(const struct loaded_object *so, uintptr_t self)
{
	char buf[4096];
	const char *path = object_path(so->name, buf, sizeof(buf));
	if (!path)
		return;
	if (strncmp(resolve_base_name(path), "linux-vdso", 10) == 0 || strncmp(resolve_base_name(path), "linux-gate", 10) == 0)
		return;
	struct object_key obj = { so->base, heap_strdup(so->name) };
	if (!obj.name)
		return;
	struct applicable a;
	resolve_applicable_rules(path, &a);
	if (so->base == self)
		a.n_name = 0;
	if (a.n_offset) {
		struct collect p = { .obj = obj };
		collect_points(&p, path, so->ph, so->phnum);
		if (p.n)
			resolve_merge(&points, &p, true);
		heap_free(p.r);
	}
	if (a.n_name) {
		struct pending *np = heap_realloc(pending, (n_pending + 1) * sizeof(*np));
		if (np) {
			pending = np;
			np[n_pending] = (struct pending){ .obj = obj, .path = heap_strdup(path), .ph = so->ph,
							  .phnum = so->phnum };
		}
		if (np && np[n_pending].path) {
			debug_printf("%s: its symbols to be read at its first allocation", path);
			n_pending++;
			atomic_fetch_add(&n_unread, 1);
			return;
		}
	}
	mark_scanned(obj);
}

/* Whether a rule that has no match yet can name a function of pe; the
 * rules that can name its functions in *a. */
static bool wanted(const struct pending *pe, struct applicable *a)
{
	resolve_applicable_rules(pe->path, a);
	for (size_t k = 0; k < a->n_name; k++)
		if (!resolve_rule_matched((size_t)(a->by_name[k] - rules)))
			return true;
	return false;
}

/* The rule check's first look at pe: its exported functions, from its
 * .dynsym where the loader mapped it (no file, no system call).  The
 * ranges are kept for read_pending(). */
static void check_dynsym(struct pending *pe, const struct applicable *a)
{
	const ElfW(Dyn) *dyn = symtab_dynamic(pe->ph, pe->phnum, pe->obj.base);
	struct symtab t;
	if (!dyn || symtab_open_loaded(dyn, pe->obj.base, &t) < 0)
		return;
	struct collect c = { .obj = pe->obj };
	debug_printf("checking the rules against the %zu exported symbols of %s", t.n_syms, pe->path);
	collect_functions(&c, a, &t, pe->path);
	pe->dyn_r = c.r;
	pe->dyn_n = c.n;
	pe->dyn_syms = t.n_syms;
	pe->dyn_walked = true;
}

/* pe's tables read, unless its object was read already (or, with
 * once_only, pe itself was read before); its ranges are said after the
 * lock is given back. */
static void read_one(struct pending *pe, bool once_only)
{
	struct collect c = { 0 };
	pthread_mutex_lock(&resolve_lock);
	bool unread = !already_scanned(pe->obj.base, pe->obj.name) &&
		      !(once_only && atomic_load_explicit(&pe->read, memory_order_relaxed));
	if (unread)
		read_pending(pe, &c);
	pthread_mutex_unlock(&resolve_lock);
	if (unread)
		say_ranges(&c, pe->path);
	heap_free(c.r);
}

/* Whether each rule names a function loaded at start-up, for the word on a
 * rule that names nothing, checked before main at the least cost: first
 * against the exported functions (.dynsym, in memory) of the objects a
 * rule still without a match can name, in load order, until every rule
 * has one; nearly every policy stops there, having opened no file.  Only
 * a rule that names no exported function has the tables it could name
 * (.symtab: static functions count) located and read now, until it has a
 * match: a rule for a dlopen'ed plugin, none loaded yet, has every table
 * its object glob allows read. */
static void check_rules(void)
{
	for (size_t i = 0; i < n_pending && !resolve_all_matched(); i++) {
		struct applicable a;
		if (wanted(&pending[i], &a))
			check_dynsym(&pending[i], &a);
	}
	for (size_t i = 0; i < n_pending && !resolve_all_matched(); i++) {
		struct applicable a;
		if (!wanted(&pending[i], &a))
			continue;       /* no rule still looking for a match can name it */
		read_one(&pending[i], false);
	}
}

static bool is_loaded(const struct loaded_list *l, const struct object_key *k)
{
	for (size_t i = 0; i < l->n; i++)
		if (key_equal(k, l->o[i].base, l->o[i].name))
			return true;
	return false;
}

void resolve_read_all(void)
{
	if (!state || !atomic_load(&n_unread))
		return;
	for (size_t i = 0; i < n_pending; i++)
		read_one(&pending[i], true);
}

void resolve_forget_unloaded(void)
{
	if (!state || !any_specific)
		return;
	struct loaded_list l = { 0 };
	if (dl_iterate_phdr(visit_object, &l) != 0) {
		heap_free(l.o);
		return;
	}
	pthread_mutex_lock(&resolve_lock);
	/* Forget what was unloaded: its ranges, and that it was read, so an
	 * object loaded at the same place is read afresh. */
	size_t kept = 0;
	for (size_t i = 0; i < n_scanned; i++)
		if (is_loaded(&l, &scanned[i]))
			scanned[kept++] = scanned[i];
	bool changed = kept != n_scanned;
	n_scanned = kept;
	/* An object loaded at start-up and never read, now gone: its entry is
	 * done with (its program headers went with it); loaded again, it is
	 * read as any dlopen'ed object is. */
	for (size_t i = 0; i < n_pending; i++)
		if (!atomic_load_explicit(&pending[i].read, memory_order_relaxed) && !is_loaded(&l, &pending[i].obj)) {
			heap_free(pending[i].dyn_r);
			pending[i].dyn_r = NULL;
			atomic_store_explicit(&pending[i].read, true, memory_order_release);
			atomic_fetch_sub(&n_unread, 1);
		}
	struct range_table *_Atomic *tabs[] = { &table, &points };
	for (size_t k = 0; changed && k < ARRAY_SIZE(tabs); k++) {
		struct range_table *old = atomic_load(tabs[k]);
		if (!old)
			continue;
		struct collect c = { 0 };
		c.r = heap_malloc(old->n * sizeof(struct range) + 1);
		for (size_t i = 0; c.r && i < old->n; i++)
			if (is_loaded(&l, &old->r[i].obj))
				c.r[c.n++] = old->r[i];
		if (c.r)
			resolve_merge(tabs[k], &c, false);
		heap_free(c.r);
	}
	pthread_mutex_unlock(&resolve_lock);
	heap_free(l.o);
	/* Return addresses may now mean other code: decide every site again. */
	if (changed)
		site_reset_routes();
}

static void resolve_lock_take(void)
{
	pthread_mutex_lock(&resolve_lock);
}

static void resolve_lock_drop(void)
{
	pthread_mutex_unlock(&resolve_lock);
}

static int init_rules(struct shim_state *st, const char *exe);

/* The filter as the policy is armed, in one open and close (the first
 * close makes it read-only: site.c): every site when a pool takes every
 * site (a heap route cached for any is confirmed), else, beside the
 * ranges published already, the code of what check_rules left unread
 * (narrow()). */
static void mark_filter(const struct shim_state *st)
{
	site_policy_open();
	if (st->match_all >= 0) {
		site_policy_mark(0, UINTPTR_MAX);
	} else if (atomic_load(&n_unread)) {
		for (size_t i = 0; i < n_pending; i++)
			if (!atomic_load_explicit(&pending[i].read, memory_order_relaxed))
				each_text(pending[i].ph, pending[i].phnum, pending[i].obj.base, mark_text, NULL);
		texts_marked = true;
	}
	site_policy_close();
}

int resolve_init(struct shim_state *st, const char *exe)
{
	int r = init_rules(st, exe);
	if (r < 0)
		return r;
	rro.s.frozen = true;
	if ((r = os_protect_ro(&rro, sizeof(rro))) < 0)
		rro.s.frozen = false;
	return r;
}

static int init_rules(struct shim_state *st, const char *exe)
{
	state = st;
	program_path = exe[0] ? heap_strdup(exe) : NULL;
	pthread_atfork(resolve_lock_take, resolve_lock_drop, resolve_lock_drop);
	resolve_table_reserve();
	int r = resolve_rules_load(st);
	if (r < 0)
		return r;
	if (!any_specific) {
		mark_filter(st);
		return 0;            /* "*" alone needs no symbols */
	}
	struct loaded_list l = { 0 };
	dl_iterate_phdr(visit_object, &l);
	struct dl_find_object self;
	uintptr_t self_base = _dl_find_object((void *)(uintptr_t)resolve_init, &self) == 0 && self.dlfo_link_map
				      ? self.dlfo_link_map->l_addr : UINTPTR_MAX;
	for (size_t i = 0; i < l.n; i++)
		prepare_object(&l.o[i], self_base);
	heap_free(l.o);
	check_rules();
	mark_filter(st);
	debug_printf("rules checked: %zu of %zu name a function loaded at start-up", n_rules - resolve_unmatched(),
		     n_rules);
	return 0;
}

