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
 * This file answers the route queries (a wrapper's caller found by an
 * unwind), forgets what dlclose unloaded and arms the rules
 * (resolve_init); an object read into ranges is resolve_object.c's, when
 * each is read resolve_read.c's, the rules resolve_rules.c's, the range
 * tables resolve_table.c's (what they share: resolve_inner.h).
 */
#define _GNU_SOURCE
#include "resolve.h"
#include "stderr.h"
#include "os.h"
#include "ro.h"
#include "site.h"
#include "symtab.h"
#include "frames.h"
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

/* The rule's range for code address a: a call site an offset rule names,
 * else the function a name rule names. */
static const struct range *lookup(uintptr_t a)
{
	const struct range *r = resolve_lookup_in(atomic_load_explicit(&points, memory_order_acquire), a);
	return r ? r : resolve_lookup_in(atomic_load_explicit(&table, memory_order_acquire), a);
}

int resolve_route(uintptr_t ra, uint16_t id)
{
	uintptr_t a = ra - 1;        /* inside the call instruction's function */
	if (any_specific)
		resolve_ensure_read(a);
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
	resolve_read_if_pending(ip - 1);
	const struct range *r = lookup(ip - 1);
	if (r && r->route == SITE_ROUTE_WRAPPER)
		return _URC_NO_REASON;      /* a wrapper calling a wrapper: keep going */
	w->caller = ip;
	return _URC_END_OF_STACK;
}

/* The first caller outside a wrapper, read off the stack (frames.c): from
 * the slot of the program's return address ra, each wrapper's own return
 * address sits at the distance its call instruction's unwind rule says.
 * 0 when a rule of the chain cannot be used (the unwind decides); *chain
 * and *n the wrapper calls walked, *trusted whether each rule was
 * confirmed enough. */
#define CHAIN_MAX 8

static uintptr_t caller_from_stack(uintptr_t ra, uintptr_t slot, uintptr_t *chain, size_t *n, bool *trusted)
{
	*n = 0;
	*trusted = true;
	if (!slot || *(const uintptr_t *)slot != ra)
		return 0;            /* not the slot the program's call pushed ra into */
	uintptr_t pc = ra;
	while (*n < CHAIN_MAX) {
		intptr_t k;
		enum frames_rule fr = frames_rule(pc, &k);
		if (fr == FRAMES_UNUSABLE)
			return 0;
		*trusted &= fr == FRAMES_TRUSTED;
		chain[(*n)++] = pc;
		slot += (uintptr_t)k;
		uintptr_t caller = *(const uintptr_t *)slot;
		/* A caller in an object not read yet may be a wrapper too. */
		resolve_read_if_pending(caller - 1);
		const struct range *r = lookup(caller - 1);
		if (!r || r->route != SITE_ROUTE_WRAPPER)
			return caller;
		pc = caller;
	}
	return 0;
}

/* An unwind costs one _Unwind_Backtrace up to the first caller outside a
 * wrapper: about 11,000 instructions for one wrapper level (x86-64,
 * callgrind), some 1,000 a frame walked, the shim's own frames included.
 * So it is made only while a chain's rules are not yet confirmed (the
 * first FRAMES_CHECKS allocations through each wrapper call, each
 * compared) or cannot be used; then the stack says, in a few loads. */
struct site_hit resolve_through_wrapper(uintptr_t ra, uintptr_t slot)
{
	uintptr_t chain[CHAIN_MAX];
	size_t n;
	bool trusted;
	uintptr_t caller = caller_from_stack(ra, slot, chain, &n, &trusted);
	if (!caller || !trusted) {
		struct unwind_walk w = { .ra = ra };
		_Unwind_Backtrace(unwind_step, &w);
		for (size_t i = 0; caller && i < n; i++)
			frames_checked(chain[i], w.caller == caller);
		caller = w.caller;
	}
	if (!caller)            /* no caller found: charge the wrapper, to the heap */
		return (struct site_hit){ SITE_ROUTE_HEAP, site_id(ra) };
	struct site_hit h = site_lookup(caller);
	if (h.route == SITE_ROUTE_UNKNOWN)
		h.route = resolve_route(caller, h.id);
	if (h.route == SITE_ROUTE_WRAPPER)  /* cannot be (wrappers are skipped), but never loop */
		h.route = SITE_ROUTE_HEAP;
	return h;
}

void resolve_forget_unloaded(void)
{
	if (!state || !any_specific)
		return;
	struct loaded_list l = { 0 };
	if (resolve_loaded_list(&l) != 0) {
		heap_free(l.o);
		return;
	}
	pthread_mutex_lock(&resolve_lock);
	/* Forget what was unloaded: its ranges, and that it was read, so an
	 * object loaded at the same place is read afresh. */
	bool changed = resolve_forget_read(&l);
	resolve_forget_pending(&l);
	struct range_table *_Atomic *tabs[] = { &table, &points };
	for (size_t k = 0; changed && k < ARRAY_SIZE(tabs); k++) {
		struct range_table *old = atomic_load(tabs[k]);
		if (!old)
			continue;
		struct collect c = { 0 };
		c.r = heap_malloc(old->n * sizeof(struct range) + 1);
		for (size_t i = 0; c.r && i < old->n; i++)
			if (resolve_is_loaded(&l, &old->r[i].obj))
				c.r[c.n++] = old->r[i];
		if (c.r)
			resolve_merge(tabs[k], &c, false);
		heap_free(c.r);
	}
	pthread_mutex_unlock(&resolve_lock);
	heap_free(l.o);
	/* Return addresses may now mean other code: decide every site again,
	 * and read every wrapper's unwind rule again. */
	if (changed) {
		site_reset_routes();
		frames_forget();
	}
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

int resolve_init(struct shim_state *st, const char *exe)
{
	int r = init_rules(st, exe);
	if (r < 0)
		return r;
	rro.s.frozen = true;
	if ((r = ro_freeze(&rro, sizeof(rro))) < 0)
		rro.s.frozen = false;
	return r;
}

static int init_rules(struct shim_state *st, const char *exe)
{
	state = st;
	resolve_objects_init(exe);
	pthread_atfork(resolve_lock_take, resolve_lock_drop, resolve_lock_drop);
	resolve_table_reserve();
	int r = resolve_rules_load(st);
	if (r < 0)
		return r;
	if (!any_specific) {
		resolve_mark_filter(st);
		return 0;            /* "*" alone needs no symbols */
	}
	struct loaded_list l = { 0 };
	resolve_loaded_list(&l);
	struct dl_find_object self;
	uintptr_t self_base = _dl_find_object((void *)(uintptr_t)resolve_init, &self) == 0 && self.dlfo_link_map
				      ? self.dlfo_link_map->l_addr : UINTPTR_MAX;
	for (size_t i = 0; i < l.n; i++)
		resolve_prepare_object(&l.o[i], self_base);
	heap_free(l.o);
	resolve_check_rules();
	resolve_mark_filter(st);
	debug_printf("rules checked: %zu of %zu name a function loaded at start-up", n_rules - resolve_unmatched(),
		     n_rules);
	return 0;
}
