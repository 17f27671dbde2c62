/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve_read.c - when each object's symbols are read.  An object loaded
 * at start-up that the rules can name by function waits (an entry of its
 * own, its code marked whole in site.c's filter) for the first allocation
 * made from its code; the rule check before main reads the exported
 * functions first and a table only for a rule that names none; a program
 * about to restrict itself has every table still unread read
 * (resolve_read_all); an object whose code shares the filter's granules
 * with a site's is read with it (resolve_read_sharing).  Once read, its
 * filter marks are narrowed to the ranges the rules name.  An object
 * loaded later goes to resolve_object.c's dlopen path.
 *
 * Must never read an object's table before one of those moments, read
 * one twice, or call out (debug lines) under resolve_lock.  Its own
 * allocations go to the heap by name (heap.h).  Never called from a
 * signal handler.
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
#include "resolve_inner.h"      /* last: its short names are macros */

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
		if (resolve_key_equal(&pending[i].obj, base, name))
			return &pending[i];
	return NULL;
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
 * resolve_lock, where a byte map from the heap was 64 KiB of fresh pages
 * at each narrowing (16 first touches, about 60 us of python3's
 * start-up).  Only the words of the object being narrowed are cleared
 * and computed (the window): unmark reads no other, so the rest is
 * neither touched nor walked (python3's 16,000 granules are 250 words of
 * the 1,024). */
static uint64_t keep_bits[SITE_POLICY_KEEP_WORDS];

#define WINDOW_MAX 8
struct keep_window {
	size_t n;                    /* word intervals below; 0 with all: every word */
	bool all;
	struct {
		size_t lo, hi;
	} w[WINDOW_MAX];
};

/* The words of code [lo, hi)'s granules, into the window (ctx). */
static void window_add(uintptr_t lo, uintptr_t hi, void *ctx)
{
	struct keep_window *kw = ctx;
	struct site_policy_run run[2];
	size_t n = site_policy_runs(lo + 1, hi + 1, run);
	for (size_t k = 0; k < n; k++) {
		if (kw->n == WINDOW_MAX) {
			kw->all = true;
			return;
		}
		kw->w[kw->n].lo = run[k].at / 64;
		kw->w[kw->n].hi = (run[k].at + run[k].n + 63) / 64;
		kw->n++;
	}
}

/* Granules [g, end) kept, a word at a time where it can. */
static void keep_granules(size_t g, size_t end)
{
	for (; g < end && g % 64; g++)
		keep_bits[g / 64] |= UINT64_C(1) << (g % 64);
	for (; g + 64 <= end; g += 64)
		keep_bits[g / 64] = ~UINT64_C(0);
	for (; g < end; g++)
		keep_bits[g / 64] |= UINT64_C(1) << (g % 64);
}

/* Code [lo, hi)'s granules kept, within the window (ctx). */
static void keep_text(uintptr_t lo, uintptr_t hi, void *ctx)
{
	const struct keep_window *kw = ctx;
	struct site_policy_run run[2];
	size_t n = site_policy_runs(lo + 1, hi + 1, run);
	for (size_t k = 0; k < n; k++) {
		size_t g = run[k].at, end = run[k].at + run[k].n;
		if (kw->all) {
			keep_granules(g, end);
			continue;
		}
		for (size_t i = 0; i < kw->n; i++) {
			size_t a = kw->w[i].lo * 64, b = kw->w[i].hi * 64;
			if (g < b && a < end)
				keep_granules(g > a ? g : a, end < b ? end : b);
		}
	}
}

/* What unmark_text does: the granules kept, and the object's new table,
 * stored at its first text, before any granule is cleared. */
struct unmark {
	const uint64_t *keep;
	struct range_table *store;
};

/* Only the filter's pages of this code opened (site.h), with the rules'
 * page after them when a table is to be stored: one mprotect each way for
 * the store and the narrowing, where each had its two. */
static void unmark_text(uintptr_t lo, uintptr_t hi, void *ctx)
{
	struct unmark *u = ctx;
	bool joint = u->store && site_policy_open_range_next(lo + 1, hi + 1, &rro, sizeof(rro));
	if (u->store) {
		resolve_store_table(&table, u->store, joint);
		u->store = NULL;
	}
	if (!joint)
		site_policy_open_range(lo + 1, hi + 1);
	site_policy_unmark(lo + 1, hi + 1, u->keep);
	if (joint)
		site_policy_close_range_next(lo + 1, hi + 1, &rro, sizeof(rro));
	else
		site_policy_close_range(lo + 1, hi + 1);
}

/* The code of an object whose symbols wait for its first allocation is
 * marked in site.c's filter whole (resolve_init): the filter may be what
 * malloc looks at first (interpose.c), and one of its call sites may be a
 * rule's.  Once its symbols are read (pe, just read; resolve_lock held),
 * only the ranges the rules name stay marked: its other granules are
 * cleared unless a range, or the code of another object still unread,
 * shares them (the filter folds addresses). */
static bool texts_marked;          /* start-up's unread objects are (resolve_init) */

/* nt: pe's new function table, not stored yet (or NULL): stored here,
 * before a granule is cleared. */
static void narrow(const struct pending *pe, struct range_table *nt)
{
	struct keep_window kw = { 0 };
	each_text(pe->ph, pe->phnum, pe->obj.base, window_add, &kw);
	if (kw.all || kw.n == 0)
		memset(keep_bits, 0, sizeof(keep_bits));
	for (size_t i = 0; !kw.all && i < kw.n; i++)
		memset(keep_bits + kw.w[i].lo, 0, (kw.w[i].hi - kw.w[i].lo) * sizeof(keep_bits[0]));
	kw.all = kw.all || kw.n == 0;
	struct range_table *tabs[] = { nt ? nt : atomic_load(&table), atomic_load(&points) };
	for (size_t k = 0; k < ARRAY_SIZE(tabs); k++)
		for (size_t i = 0; tabs[k] && i < tabs[k]->n; i++)
			keep_text(tabs[k]->r[i].start, tabs[k]->r[i].end, &kw);
	for (size_t i = 0; i < n_pending; i++)
		if (&pending[i] != pe && !atomic_load_explicit(&pending[i].read, memory_order_relaxed))
			each_text(pending[i].ph, pending[i].phnum, pending[i].obj.base, keep_text, &kw);
	struct unmark u = { keep_bits, nt };
	each_text(pe->ph, pe->phnum, pe->obj.base, unmark_text, &u);
	if (u.store)                       /* no code to narrow */
		resolve_store_table(&table, u.store, false);
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
		resolve_collect_functions(c, &a, &t, pe->path);
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
	/* The table stored before the object is said read: a thread that
	 * sees it read finds its ranges. */
	struct range_table *nt;
	resolve_publish_built(c, &nt);
	if (texts_marked)
		narrow(pe, nt);
	else if (nt)
		resolve_store_table(&table, nt, false);
	atomic_store_explicit(&pe->read, true, memory_order_release);
	atomic_fetch_sub(&n_unread, 1);
}

/* The object holding code address a, read if it was not. */
void resolve_ensure_read(uintptr_t a)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)a, &dlfo) != 0 || !dlfo.dlfo_link_map)
		return;
	const struct link_map *lm = dlfo.dlfo_link_map;
	const char *key_name = lm->l_name ? lm->l_name : "";
	struct collect c = { 0 };
	pthread_mutex_lock(&resolve_lock);
	bool done = resolve_already_read(lm->l_addr, key_name);
	struct pending *pe = done ? NULL : find_pending(lm->l_addr, key_name);
	if (pe && atomic_load_explicit(&pe->read, memory_order_relaxed))
		pe = NULL;          /* read, then forgotten: loaded again since */
	if (pe)
		read_pending(pe, &c);
	pthread_mutex_unlock(&resolve_lock);
	if (pe)
		resolve_say_ranges(&c, pe->path);
	heap_free(c.r);
	if (!done && !pe)
		resolve_read_loaded(lm, key_name);
}

/* resolve_ensure_read() for an object loaded at start-up and not read
 * yet; for the others, one lock-free look (a wrapper's callers are looked
 * up at every call through it), none once every one is read. */
void resolve_read_if_pending(uintptr_t a)
{
	if (!atomic_load_explicit(&n_unread, memory_order_acquire))
		return;
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)a, &dlfo) != 0 || !dlfo.dlfo_link_map)
		return;
	const struct link_map *lm = dlfo.dlfo_link_map;
	const struct pending *pe = find_pending(lm->l_addr, lm->l_name ? lm->l_name : "");
	if (pe && !atomic_load_explicit(&pe->read, memory_order_acquire))
		resolve_ensure_read(a);
}

/* One object loaded at start-up: the call sites offset rules name in it
 * (no symbols needed), and, when rules can name its functions, an entry
 * for its symbols, located and read at the first allocation from it: no
 * file is opened here.  The shim's own code is never a site. */
void resolve_prepare_object(const struct loaded_object *so, uintptr_t self)
{
	char buf[4096];
	const char *path = resolve_object_path(so->name, buf, sizeof(buf));
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
		resolve_collect_points(&p, path, so->ph, so->phnum);
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
	resolve_mark_read(obj);
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
	resolve_collect_functions(&c, a, &t, pe->path);
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
	bool unread = !resolve_already_read(pe->obj.base, pe->obj.name) &&
		      !(once_only && atomic_load_explicit(&pe->read, memory_order_relaxed));
	if (unread)
		read_pending(pe, &c);
	pthread_mutex_unlock(&resolve_lock);
	if (unread)
		resolve_say_ranges(&c, pe->path);
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
void resolve_check_rules(void)
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

void resolve_read_all(void)
{
	if (!state || !atomic_load(&n_unread))
		return;
	for (size_t i = 0; i < n_pending; i++)
		read_one(&pending[i], true);
}

/* The filter as the policy is armed, in one open and close (the first
 * close makes it read-only: site.c): every site when a pool takes every
 * site (a heap route cached for any is confirmed), else, beside the
 * ranges published already, the code of what resolve_check_rules left unread
 * (narrow()). */
void resolve_mark_filter(const struct shim_state *st)
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

/* An object loaded at start-up and never read, now gone (l does not list
 * it): its entry is done with (its program headers went with it); loaded
 * again, it is read as any dlopen'ed object is.  resolve_lock held. */
void resolve_forget_pending(const struct loaded_list *l)
{
	for (size_t i = 0; i < n_pending; i++)
		if (!atomic_load_explicit(&pending[i].read, memory_order_relaxed) && !resolve_is_loaded(l, &pending[i].obj)) {
			heap_free(pending[i].dyn_r);
			pending[i].dyn_r = NULL;
			atomic_store_explicit(&pending[i].read, true, memory_order_release);
			atomic_fetch_sub(&n_unread, 1);
		}
}
