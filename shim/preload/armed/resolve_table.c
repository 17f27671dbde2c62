/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve_table.c - the range tables of resolve (resolve_inner.h): one
 * object's ranges collected, merged with the current table into a new one
 * made read-only and published with one atomic store (the page of the
 * decision opened for that store alone, or with the filter's pages of the
 * object being narrowed: resolve_read.c), and looked up without a lock.
 * A table is never written again nor freed: a lookup may still be reading
 * an old one.  Never called from a signal handler.
 */
#define _GNU_SOURCE
#include "resolve.h"
#include "arena.h"
#include "stderr.h"
#include "os.h"
#include "site.h"
#include "heap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "resolve_inner.h"      /* last: its short names are macros */

#define NAMES_BLOCK 2048

static const char *collect_name(struct collect *c, const char *name)
{
	size_t len = strlen(name) + 1;
	if (len > c->names_left) {
		size_t size = len > NAMES_BLOCK ? len : NAMES_BLOCK;
		char *b = heap_malloc(size);
		if (!b)
			return NULL;
		c->names = b;
		c->names_left = size;
	}
	char *copy = c->names;
	memcpy(copy, name, len);
	c->names += len;
	c->names_left -= len;
	return copy;
}

int resolve_collect_add(struct collect *c, uintptr_t start, uintptr_t end, int route, const char *name,
		       uintptr_t name_base)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct range *nr = heap_realloc(c->r, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		c->r = nr;
		c->cap = cap;
	}
	struct range *r = &c->r[c->n];
	*r = (struct range){ start, end, route, NULL, name_base, c->obj };
	r->name = collect_name(c, name);
	if (!r->name)
		return -ENOMEM;
	c->n++;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Tables come from one mapping made at start-up, the arena's side space
 * (arena.h) when there is a pool: no mmap while the program runs (after a
 * dlclose, a fresh mapping would also take the place of the object just
 * unloaded), and nothing is ever unmapped.  Writable and present only where
 * touched (no commit call per table); each table is made read-only once
 * written. */
#define TABLE_SPACE ((size_t)16 << 20)
static char *table_base;
static size_t table_used;

void resolve_table_reserve(void)
{
	void *space = arena_side_take(TABLE_SPACE);
	if (space || os_map_lazy(TABLE_SPACE, &space) == 0)
		table_base = space;
}

static int table_space(size_t len, void **ret)
{
	if (table_base && table_used + len <= TABLE_SPACE) {
		*ret = table_base + table_used;
		table_used += len;
		return 0;
	}
	return os_map(len, ret);
}

/* The code the new ranges cover marked in site.c's read-only filter before
 * the table is published, so a heap route cached for a call site there is
 * confirmed against them (site.h). */
static void mark_ranges(const struct range_table *t)
{
	size_t i = 0;
	while (i < t->n && site_policy_marked(t->r[i].start + 1, t->r[i].end + 1))
		i++;
	if (i < t->n) {          /* most merges add an object's ranges: two mprotects */
		site_policy_open();
		for (; i < t->n; i++)
			site_policy_mark(t->r[i].start + 1, t->r[i].end + 1);
		site_policy_close();
	}
}

/* The one writer of the table pointers (resolve_lock held, or start-up):
 * the page opened for the store, then closed, unless the caller has it
 * open (page_open: resolve_read.c's narrowing opens it with the filter's
 * pages before it, one mprotect each way). */
void resolve_store_table(struct range_table *_Atomic *tab, struct range_table *t, bool page_open)
{
	bool open = rro.s.frozen && !page_open;
	if (open && os_protect_rw(&rro, sizeof(rro)) < 0)
		fatal("malloc", "cannot open the policy's site tables");
	atomic_store(tab, t);
	if (open && os_protect_ro(&rro, sizeof(rro)) < 0)
		fatal("malloc", "cannot make the policy's site tables read-only again");
}

/* Publish c's ranges, with the current table's when keep_old, as a new
 * read-only table in *tab. */
int resolve_merge(struct range_table *_Atomic *tab, struct collect *c, bool keep_old)
{
	struct range_table *t;
	int r = resolve_merge_build(tab, c, keep_old, &t);
	if (r == 0)
		resolve_store_table(tab, t, false);
	return r;
}

int resolve_merge_build(struct range_table *_Atomic *tab, struct collect *c, bool keep_old, struct range_table **ret)
{
	struct range_table *old = keep_old ? atomic_load(tab) : NULL;
	size_t n = (old ? old->n : 0) + c->n;
	size_t len = ALIGN_UP(sizeof(struct range_table) + n * sizeof(struct range), os_page_size);
	void *mem;
	int r = table_space(len, &mem);
	if (r < 0)
		return r;
	struct range_table *t = mem;
	t->map_len = len;
	t->n = n;
	if (old)
		memcpy(t->r, old->r, old->n * sizeof(struct range));
	memcpy(t->r + (old ? old->n : 0), c->r, c->n * sizeof(struct range));
	qsort(t->r, n, sizeof(struct range), range_cmp);
	if (os_protect_ro(mem, len) < 0)
		fatal("malloc", "cannot make a table of the policy's sites read-only");
	mark_ranges(t);
	/* The old table stays mapped: a lookup may still be reading it. */
	*ret = t;
	return 0;
}

const struct range *resolve_lookup_in(const struct range_table *t, uintptr_t a)
{
	if (!t || t->n == 0)
		return NULL;
	size_t lo = 0, hi = t->n;
	while (lo < hi) {               /* the last range starting at or before a */
		size_t mid = lo + (hi - lo) / 2;
		if (t->r[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct range *r = &t->r[lo - 1];
	return a < r->end ? r : NULL;
}
