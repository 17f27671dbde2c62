/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve_object.c - one object read into ranges: the call sites that
 * offset rules name in it, the functions that name rules name, from a
 * symbol table (symtab.c), published into the range tables
 * (resolve_table.c); the set of objects read, the lock that reads one at
 * a time, the objects loaded now (dl_iterate_phdr), and an object loaded
 * after start-up (dlopen) read from memory at the first allocation from
 * it.  When an object loaded at start-up is read: resolve_read.c.
 *
 * Must never open a file for an object loaded after start-up (its
 * .dynsym in memory only), publish but under resolve_lock, or call out
 * (debug lines) while holding it.  Its own allocations go to the heap by
 * name (heap.h).  Never called from a signal handler.
 */
#define _GNU_SOURCE
#include "resolve.h"
#include "stderr.h"
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
#include "resolve_inner.h"      /* last: its short names are macros */

/* The lock of the reading: one object read and published at a time, the
 * filter's writers one at a time (resolve.c, resolve_read.c). */
pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;
#define OBJECTS_MAX 4096

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

bool resolve_already_read(uintptr_t base, const char *name)
{
	for (size_t i = 0; i < n_scanned; i++)
		if (resolve_key_equal(&scanned[i], base, name))
			return true;
	return false;
}

/* Remember obj as read (resolve_lock held, or start-up). */
void resolve_mark_read(struct object_key obj)
{
	if (n_scanned < OBJECTS_MAX)
		scanned[n_scanned++] = obj;
}

/* The call sites that offset rules name in one object (at path), into p.
 * A rule pinned to a build-id the object does not have routes nothing
 * there, and says so (once: each object is scanned once). */
void resolve_collect_points(struct collect *p, const char *path, const ElfW(Phdr) *ph, size_t phnum)
{
	char id[SYMTAB_BUILD_ID_MAX];
	int have_id = -1;            /* read when a rule first asks */
	bool glibc = policy_object_is_glibc(path);
	for (size_t i = 0; i < n_rules; i++) {
		struct rule *ru = &rules[i];
		if (!ru->by_offset || !resolve_object_fits(ru, path, glibc))
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

/* Whether every rule of list[n] names one function, no glob. */
static bool all_literal(struct rule *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!list[i]->literal)
			return false;
	return true;
}

/* The functions literal rules name, each looked up in the loader's hash
 * table of t (.dynsym in memory) instead of a walk over every symbol: the
 * same ranges (each symbol under a rule's name goes to the first rule of
 * that name, as in the walk).  false when t has no hash table. */
static bool lookup_functions(struct collect *c, const struct applicable *a, const struct symtab *t)
{
	if (!t->gnu_hash || !all_literal(a->by_name, a->n_name))
		return false;
	for (size_t i = 0; i < a->n_name; i++) {
		const char *name = a->by_name[i]->function;
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(a->by_name[k]->function, name) == 0;
		if (!seen && symtab_lookup(t, c->obj.base, name, collect_symbol, c) != 0)
			break;           /* no memory for a range: as the walk stops */
	}
	return true;
}

/* The ranges of the functions the rules name in one object, from its
 * symbol table t, into c. */
void resolve_collect_functions(struct collect *c, const struct applicable *a, const struct symtab *t,
			      const char *path)
{
	struct symtab_filter filter;
	c->apply = a->by_name;
	c->n_apply = a->n_name;
	if (!c->n_apply || lookup_functions(c, a, t))
		return;
	if (!may_name(t, a->by_name, a->n_name)) {
		debug_printf("no name in %s can match a rule: its %zu symbols not walked", path, t->n_syms);
		return;
	}
	int r = symtab_walk(t, c->obj.base, resolve_filter_for(&filter, a->by_name, a->n_name), collect_symbol, c);
	if (r < 0)
		debug_printf("cannot read symbols of %s: %s", path, strerror(-r));
}

/* c's object remembered as read, unless another thread did first
 * (resolve_lock held): false then, and nothing of c is to be published. */
static bool claim_read(const struct collect *c)
{
	if (resolve_already_read(c->obj.base, c->obj.name))
		return false;
	resolve_mark_read(c->obj);
	return true;
}

/* Publish what was collected of one object and remember it as read, unless
 * another thread did first (resolve_lock held).  false when it did. */
bool resolve_publish(struct collect *c, struct collect *p)
{
	if (!claim_read(c))
		return false;
	if (p && p->n)
		resolve_merge(&points, p, true);
	return c->n && resolve_merge(&table, c, true) == 0;
}

bool resolve_publish_built(struct collect *c, struct range_table **ret)
{
	*ret = NULL;
	return claim_read(c) && c->n && resolve_merge_build(&table, c, true, ret) == 0;
}

/* Said outside the lock: nothing that may call out runs under it. */
void resolve_say_ranges(const struct collect *c, const char *path)
{
	if (!pm_debug)
		return;
	for (size_t i = 0; i < c->n; i++)
		debug_printf("site %s [%#lx, %#lx) in %s -> %s", c->r[i].name, (unsigned long)c->r[i].start,
			     (unsigned long)c->r[i].end, path,
			     c->r[i].route == SITE_ROUTE_WRAPPER ? "wrapper" : state->pools[c->r[i].route].pool->name);
}

/* The program's path, as read at start-up; NULL when unknown. */
static const char *program_path;

/* The path of the object the link map names l_name ("" for the program). */
const char *resolve_object_path(const char *l_name, char *buf, size_t len)
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

void resolve_objects_init(const char *exe)
{
	program_path = exe[0] ? heap_strdup(exe) : NULL;
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

/* An object loaded after start-up (dlopen), at the first allocation from
 * it: read from memory (.dynsym: no file is opened after start-up). */
void resolve_read_loaded(const struct link_map *lm, const char *key_name)
{
	char buf[4096];
	const char *path = resolve_object_path(lm->l_name, buf, sizeof(buf));
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
		resolve_collect_points(&p, path, q.ph, q.phnum);
	struct symtab t;
	size_t unmatched = resolve_unmatched();
	pthread_mutex_lock(&resolve_lock);
	bool fresh = !resolve_already_read(c.obj.base, c.obj.name);
	if (fresh && a.n_name && symtab_open_loaded(lm->l_ld, lm->l_addr, &t) == 0)
		resolve_collect_functions(&c, &a, &t, path);
	fresh = fresh && resolve_publish(&c, &p);
	pthread_mutex_unlock(&resolve_lock);
	if (fresh)
		resolve_say_ranges(&c, path);
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

int resolve_loaded_list(struct loaded_list *l)
{
	return dl_iterate_phdr(visit_object, l);
}

bool resolve_is_loaded(const struct loaded_list *l, const struct object_key *k)
{
	for (size_t i = 0; i < l->n; i++)
		if (resolve_key_equal(k, l->o[i].base, l->o[i].name))
			return true;
	return false;
}

/* Forget that the objects l no longer lists were read, so an object
 * loaded at the same place is read afresh; whether any was (resolve_lock
 * held). */
bool resolve_forget_read(const struct loaded_list *l)
{
	size_t kept = 0;
	for (size_t i = 0; i < n_scanned; i++)
		if (resolve_is_loaded(l, &scanned[i]))
			scanned[kept++] = scanned[i];
	bool changed = kept != n_scanned;
	n_scanned = kept;
	return changed;
}
