/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve_rules.c - the policy's site and wrapper rules: read from its
 * image (start-up) into a mapping made read-only, which of them apply to
 * an object and name a function, and their status (which matched, which
 * wait for their object, which were left out), for pmallocd and the
 * journal.  The status is never a decision, so it stays writable beside
 * the read-only rules.  Never called from a signal handler; its own
 * allocations go to the heap by name (heap.h).
 */
#define _GNU_SOURCE
#include "resolve.h"
#include "stderr.h"
#include "os.h"
#include "site.h"
#include "heap.h"
#include "policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "resolve_inner.h"      /* last: its short names are macros */

/* The page of the decision (resolve_inner.h): the rules' place and the
 * tables' pointers, frozen by resolve_init. */
union resolve_ro_page rro __attribute__((aligned(RO_PAGE)));
const struct ro_span resolve_ro_span = { &rro, sizeof(rro) };   /* ro.h: init.c lists it */

/* Which rules matched something, which rules' object glob fits a loaded
 * object (until then an unmatched rule waits for its object rather than
 * matching nothing), and which were left out of an object that more than
 * POLICY_OBJECT_NAME_RULES_MAX name rules fit: status for pmallocd and the
 * journal, never a decision, so writable beside the read-only rules. */
static bool *matched, *object_loaded, *dropped;

void resolve_mark_matched(const struct rule *ru)
{
	matched[ru - rules] = true;
}

bool resolve_rule_matched(size_t i)
{
	return matched[i];
}

const char *resolve_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Does rule r fit the object at path (glibc: whether it is glibc's,
 * policy_object_is_glibc, asked once an object)?  A rule without an object
 * fits every object, and a glob the objects whose path or file name fit
 * it; but a site fits glibc's objects only when it names one without a
 * glob ("libc.so.6:setlocale"): what glibc allocates for itself is state
 * it writes again on events of its own (a lookup that first needs a
 * name-service module, a dlopen, a time zone change), so "parse_*" or
 * "*:foo_*" meaning the program's code never route it, and an object that
 * only such rules could name is never read for them (python3's start-up
 * with the bench's "*:_PyObject_*": libc's debug file opened, 132 KB of
 * names searched, 57 us).  Wrappers fit as before. */
bool resolve_object_fits(const struct rule *r, const char *path, bool glibc)
{
	bool fits = !r->object || fnmatch(r->object, path, 0) == 0 ||
		    fnmatch(r->object, resolve_base_name(path), 0) == 0;
	if (!fits || !glibc || r->route == SITE_ROUTE_WRAPPER)
		return fits;
	return r->object && !strpbrk(r->object, "*?[\\");
}

/* A rule by name past the first POLICY_OBJECT_NAME_RULES_MAX that fit the
 * object at path is not applied there: marked (status shows it, the
 * journal says it) and said once under PMALLOC_DEBUG. */
static void drop_rule(size_t i, const char *path)
{
	if (!dropped || dropped[i])
		return;
	dropped[i] = true;
	const struct rule *ru = &rules[i];
	debug_printf("%s rule \"%s%s%s\" not applied in %s: more than %d rules by name fit it (the first %d are)",
		     ru->route == SITE_ROUTE_WRAPPER ? "wrapper" : "site", ru->object ? ru->object : "",
		     ru->object ? ":" : "", ru->function, path, POLICY_OBJECT_NAME_RULES_MAX,
		     POLICY_OBJECT_NAME_RULES_MAX);
}

void resolve_applicable_rules(const char *path, struct applicable *a)
{
	bool glibc = policy_object_is_glibc(path);
	a->n_name = a->n_offset = 0;
	for (size_t i = 0; i < n_rules; i++) {
		if (!resolve_object_fits(&rules[i], path, glibc))
			continue;
		if (object_loaded)
			object_loaded[i] = true;
		if (rules[i].by_offset)
			a->n_offset++;
		else if (a->n_name < ARRAY_SIZE(a->by_name))
			a->by_name[a->n_name++] = &rules[i];
		else
			drop_rule(i, path);
	}
}

/* The first of rules[n] that names function name, or NULL: first rule
 * wins (wrappers are listed before sites).  The first characters, then
 * the literal prefix, reject nearly all before strcmp or fnmatch is asked. */
struct rule *resolve_first_rule(struct rule *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		struct rule *ru = list[i];
		if (ru->prefix_len && (name[0] != ru->function[0] ||
				       (ru->prefix_len > 1 && name[1] != ru->function[1])))
			continue;
		if (ru->literal ? strcmp(ru->function, name) == 0
				: strncmp(ru->function, name, ru->prefix_len) == 0 &&
				  (ru->prefix_star || fnmatch(ru->function, name, 0) == 0))
			return ru;
	}
	return NULL;
}

/* The walk's filter for the names list[n] can match: on as many of their
 * first characters as every rule spells (up to 4); NULL when a rule starts
 * with a glob. */
const struct symtab_filter *resolve_filter_for(struct symtab_filter *f, struct rule *const *list, size_t n)
{
	size_t k = 4;
	for (size_t i = 0; i < n; i++)
		k = list[i]->prefix_len < k ? list[i]->prefix_len : k;
	if (k == 0)
		return NULL;
	symtab_filter_clear(f, (unsigned)k);
	for (size_t i = 0; i < n; i++)
		symtab_filter_add(f, list[i]->function);
	return f;
}

bool resolve_all_matched(void)
{
	for (size_t i = 0; i < n_rules; i++)
		if (!matched[i])
			return false;
	return true;
}

static int add_rule(struct rule ru)
{
	struct rule *nr = heap_realloc(rules, (n_rules + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	rules = nr;
	ru.prefix_len = strcspn(ru.function, "*?[\\");
	ru.literal = ru.function[ru.prefix_len] == '\0';
	ru.prefix_star = ru.function[ru.prefix_len] == '*' && ru.function[ru.prefix_len + 1] == '\0';
	rules[n_rules++] = ru;
	return 0;
}

/* A wrapper given as a call, "OBJECT-GLOB[@BUILD-ID]:+0xOFFSET" (checked
 * by the parser), made the offset rule it names: a call site looked
 * through.  Its object and build-id live as long as the rules. */
static int wrapper_call(struct rule *ru)
{
	const char *w = ru->function, *colon = strrchr(w, ':'), *at = NULL;
	for (const char *p = w; p < colon; p++)
		if (*p == '@')
			at = p;        /* the last '@' of the object part */
	char *object = heap_strndup(w, (size_t)((at ? at : colon) - w));
	char *build_id = at ? heap_strndup(at + 1, (size_t)(colon - at - 1)) : NULL;
	if (!object || (at && !build_id)) {
		heap_free(object);
		heap_free(build_id);
		return -ENOMEM;
	}
	for (char *p = build_id; p && *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
	ru->object = object;
	ru->build_id = build_id;
	ru->function = colon + 1;
	ru->offset = strtoull(colon + 4, NULL, 16);
	ru->by_offset = true;
	return 0;
}

static char *copy_str(char **at, const char *str)
{
	if (!str)
		return NULL;
	size_t n = strlen(str) + 1;
	char *r = memcpy(*at, str, n);
	*at += n;
	return r;
}

/* The rules, with every string they point to, moved off the heap (a heap
 * overflow cannot reach them) into read-only memory: the rest of the
 * decision's own page when they fit, made read-only with it by
 * resolve_init before the policy is armed (a policy's few rules: no
 * mapping, no mprotect and no first touch of their own, three system
 * calls or faults of every armed start-up); else a mapping of their own,
 * read-only from here.  0 or -errno. */
static int freeze_rules(void)
{
	size_t len = n_rules * sizeof(struct rule);
	for (size_t i = 0; i < n_rules; i++)
		len += (rules[i].object ? strlen(rules[i].object) + 1 : 0) + strlen(rules[i].function) + 1 +
		       (rules[i].build_id ? strlen(rules[i].build_id) + 1 : 0);
	bool own_map = len > sizeof(rro.s.room);
	len = own_map ? ALIGN_UP(len, os_page_size) : sizeof(rro.s.room);
	void *mem = rro.s.room;
	int r = own_map ? os_map(len, &mem) : 0;
	if (r < 0)
		return r;
	struct rule *fr = mem;
	char *at = (char *)(fr + n_rules);
	for (size_t i = 0; i < n_rules; i++) {
		fr[i] = rules[i];
		fr[i].object = copy_str(&at, rules[i].object);
		fr[i].function = copy_str(&at, rules[i].function);
		fr[i].build_id = copy_str(&at, rules[i].build_id);
	}
	matched = heap_calloc(n_rules ? n_rules : 1, sizeof(*matched));
	object_loaded = heap_calloc(n_rules ? n_rules : 1, sizeof(*object_loaded));
	dropped = heap_calloc(n_rules ? n_rules : 1, sizeof(*dropped));
	if (!matched || !object_loaded || !dropped || (own_map && (r = os_protect_ro(mem, len)) < 0)) {
		if (own_map)
			os_unmap(mem, len);
		return matched && object_loaded && dropped ? r : -ENOMEM;
	}
	/* The working copy was the load's (resolve_rules_load): the array,
	 * and the strings wrapper_call cut from a wrapper call. */
	for (size_t i = 0; i < n_rules; i++)
		if (rules[i].route == SITE_ROUTE_WRAPPER && rules[i].by_offset) {
			heap_free((void *)(uintptr_t)rules[i].object);
			heap_free((void *)(uintptr_t)rules[i].build_id);
		}
	heap_free(rules);
	rules = fr;
	return 0;
}

static int collect_rules(struct shim_state *st);

/* The rules, read from the policy's image into the read-only page (start-up).
 * Their working copy is made in the load's scratch (scratch.h: arming runs
 * with it paused), so that it leaves no hole in the program's heap when
 * freeze_rules frees it: a policy of 300 sites made it 300 reallocations
 * and a 19 KB block, freed before main. */
int resolve_rules_load(struct shim_state *st)
{
	scratch_pause(false);
	int r = collect_rules(st);
	scratch_pause(true);
	return r < 0 ? r : freeze_rules();
}

static int collect_rules(struct shim_state *st)
{
	/* The rules, read from the policy's image (read-only, like the state):
	 * wrappers first, so a function named both ways is looked through. */
	const struct pimg_header *img = st->image;
	/* The first pool with the site "*" (any function of any object) takes
	 * whatever no other rule names, without symbols. */
	st->match_all = -1;
	for (size_t i = 0; i < st->n_pools && st->match_all < 0; i++) {
		const struct pimg_pool *pp = pimg_pool(img, i);
		for (size_t s = 0; s < pp->n_sites; s++) {
			const struct pimg_site *site = pimg_pool_site(img, pp, s);
			if (site->object.off == PIMG_NONE && strcmp(pimg_str(img, site->function), "*") == 0) {
				st->match_all = (int)i;
				break;
			}
		}
	}
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct pimg_pool *pp = pimg_pool(img, i);
		for (size_t w = 0; w < pp->n_wrappers; w++) {
			struct rule ru = { .route = SITE_ROUTE_WRAPPER, .pool = (int)i,
					   .function = pimg_pool_wrapper(img, pp, w) };
			if ((strchr(ru.function, ':') && wrapper_call(&ru) < 0) || add_rule(ru) < 0)
				return -ENOMEM;
		}
	}
	any_specific = n_rules > 0;      /* wrappers need the symbols too */
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct pimg_pool *pp = pimg_pool(img, i);
		for (size_t s = 0; s < pp->n_sites; s++) {
			const struct pimg_site *site = pimg_pool_site(img, pp, s);
			struct rule ru = {
				.route = (int)i, .pool = (int)i, .object = pimg_str(img, site->object),
				.function = pimg_str(img, site->function), .build_id = pimg_str(img, site->build_id),
				.offset = site->offset, .by_offset = (site->flags & PIMG_SITE_BY_OFFSET) != 0,
			};
			if (!ru.object && strcmp(ru.function, "*") == 0 && st->match_all == (int)i)
				continue;
			if (add_rule(ru) < 0)
				return -ENOMEM;
			any_specific = true;
		}
	}
	return 0;
}

size_t resolve_n_rules(void)
{
	return n_rules;
}

bool resolve_may_route(void)
{
	return state && (state->match_all >= 0 || resolve_unmatched() < n_rules);
}

size_t resolve_unmatched(void)
{
	size_t n = 0;
	for (size_t i = 0; i < n_rules; i++)
		n += !matched[i];
	return n;
}

size_t resolve_waiting(void)
{
	size_t n = 0;
	for (size_t i = 0; i < n_rules; i++)
		n += !matched[i] && rules[i].object && !(object_loaded && object_loaded[i]);
	return n;
}

bool resolve_rule(size_t i, struct resolve_rule_view *ret)
{
	if (i >= n_rules)
		return false;
	const struct rule *r = &rules[i];
	*ret = (struct resolve_rule_view){
		.pool = r->pool,
		.wrapper = r->route == SITE_ROUTE_WRAPPER,
		.by_offset = r->by_offset,
		.looked_up = any_specific,
		.matched = matched[i],
		.dropped = dropped && dropped[i],
		.object_loaded = !r->object || (object_loaded && object_loaded[i]),
		.object = r->object,
		.function = r->function,
		.build_id = r->build_id,
	};
	return true;
}
