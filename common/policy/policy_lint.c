/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy_lint.c - what a valid policy file says that cannot be what its
 * author meant: an exe glob that no real path can fit, a policy that an
 * earlier one always wins over, a pool with no trigger (never protected; said
 * once, in the words of take = "until-trigger" where the pool has it), a
 * trigger given twice, a site given twice, more rules by name for one object
 * than the shim applies (POLICY_OBJECT_NAME_RULES_MAX).
 *
 * Owns the warnings' words.  Never judges validity (policy.c alone does)
 * and never changes the model: a warning is advice to the person who wrote
 * the file.  Warns only where it is sure; a rule it cannot decide passes
 * silently.  Used by pmallocctl check and pmallocd; not built into the shim.
 */
#define _GNU_SOURCE
#include "policy_lint.h"
#include "policy.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct lint {
	policy_warn_fn fn;
	void *ctx;
	size_t n;
};

static void warn(struct lint *l, int line, const char *format, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, format);
	vsnprintf(msg, sizeof(msg), format, ap);
	va_end(ap);
	l->fn(l->ctx, line, msg);
	l->n++;
}

static bool has_glob_chars(const char *g)
{
	return strpbrk(g, "*?[\\") != NULL;
}

/* Executables are matched by their real path, which starts with '/'. */
static bool can_start_with_slash(const char *g)
{
	return g[0] == '/' || g[0] == '*' || g[0] == '?' || g[0] == '[';
}

static void lint_exe(struct lint *l, const struct policy *p, const char *g)
{
	if (!can_start_with_slash(g)) {
		warn(l, p->line, "policy \"%s\": exe \"%s\" can never match: executables are matched by "
		     "their real path (/proc/PID/exe), which starts with '/'; write \"*/%s\"",
		     p->name, g, g);
		return;
	}
	if (has_glob_chars(g))
		return;
	/* A literal path that is a symbolic link: the real path is another. */
	struct stat st;
	char real[PATH_MAX];
	if (lstat(g, &st) == 0 && S_ISLNK(st.st_mode) && realpath(g, real))
		warn(l, p->line, "policy \"%s\": exe \"%s\" is a symbolic link and can never match: "
		     "executables are matched by their real path, here \"%s\"", p->name, g, real);
}

/* Every string that b fits, a fits too: b literal and fitting a, a "*", or
 * the same glob. */
static bool glob_covers(const char *a, const char *b)
{
	if (strcmp(a, "*") == 0 || strcmp(a, b) == 0)
		return true;
	return !has_glob_chars(b) && fnmatch(a, b, 0) == 0;
}

/* Every glob of b's list is covered by one of a's. */
static bool list_covers(char *const *a, size_t na, char *const *b, size_t nb)
{
	for (size_t j = 0; j < nb; j++) {
		bool covered = false;
		for (size_t i = 0; i < na && !covered; i++)
			covered = glob_covers(a[i], b[j]);
		if (!covered)
			return false;
	}
	return true;
}

static bool uids_cover(const struct policy *a, const struct policy *b)
{
	for (size_t j = 0; j < b->n_match_uid; j++) {
		bool found = false;
		for (size_t i = 0; i < a->n_match_uid && !found; i++)
			found = a->match_uid[i] == b->match_uid[j];
		if (!found)
			return false;
	}
	return true;
}

/* Every process that b matches, a (which comes first) matches: each
 * criterion a has, b has too, and a's covers b's. */
static bool shadows(const struct policy *a, const struct policy *b)
{
	if (!a->n_match_exe && !a->n_match_comm && !a->n_match_uid)
		return false;            /* refused by the parser; never "everything" */
	if (a->n_match_exe && (!b->n_match_exe ||
			       !list_covers(a->match_exe, a->n_match_exe, b->match_exe, b->n_match_exe)))
		return false;
	if (a->n_match_comm && (!b->n_match_comm ||
				!list_covers(a->match_comm, a->n_match_comm, b->match_comm, b->n_match_comm)))
		return false;
	if (a->n_match_uid && (!b->n_match_uid || !uids_cover(a, b)))
		return false;
	return true;
}

/* The entries of a pool's lists, compared as an author would: the same
 * trigger or site written twice (a and b point at two entries of one list). */
static bool same_trigger(const void *va, const void *vb)
{
	const struct policy_trigger *a = va, *b = vb;

	if (a->kind != b->kind)
		return false;
	if (a->kind == POLICY_TRIGGER_ON_CALL)
		return a->call == b->call;
	if (a->kind == POLICY_TRIGGER_AFTER)
		return a->after_ns == b->after_ns;
	return true;
}

static bool same_site(const void *va, const void *vb)
{
	const struct policy_site *a = va, *b = vb;

	return strcmp(a->function, b->function) == 0 &&
	       (a->object ? b->object && strcmp(a->object, b->object) == 0 : !b->object) &&
	       (a->build_id ? b->build_id && strcmp(a->build_id, b->build_id) == 0 : !b->build_id);
}

/* One warning for each entry of v[0, n) (size bytes each, what names one)
 * that repeats an earlier one, naming the first it repeats. */
static void lint_repeats(struct lint *l, const struct policy *p, const struct policy_pool *pool,
			 const char *what, const void *v, size_t n, size_t size,
			 bool (*same)(const void *, const void *))
{
	const char *e = v;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (same(e + i * size, e + j * size)) {
				warn(l, pool->line, "policy \"%s\", pool \"%s\": %s %zu repeats %s %zu",
				     p->name, pool->name, what, i + 1, what, j + 1);
				break;
			}
}

static void lint_pool(struct lint *l, const struct policy *p, const struct policy_pool *pool)
{
	if (pool->n_triggers == 0 && pool->take != POLICY_TAKE_UNTIL_TRIGGER)
		warn(l, pool->line, "policy \"%s\", pool \"%s\": no protect trigger, so nothing "
		     "it takes is ever protected (\"manual\" if the program protects it)",
		     p->name, pool->name);
	lint_repeats(l, p, pool, "trigger", pool->triggers, pool->n_triggers, sizeof(*pool->triggers),
		     same_trigger);
	lint_repeats(l, p, pool, "site", pool->sites, pool->n_sites, sizeof(*pool->sites), same_site);
	if (pool->take == POLICY_TAKE_UNTIL_TRIGGER && pool->n_triggers == 0)
		warn(l, pool->line, "policy \"%s\", pool \"%s\": take = \"until-trigger\" without a trigger: "
		     "the pool takes for the life of the process and is never protected; add protect = [ ... ]",
		     p->name, pool->name);
}

/* Rules by name that fit every object: wrappers by name (one with ':' is
 * a call by offset), and sites by name without an object glob (but the
 * catch-all "*", which the shim takes apart). */
static size_t names_everywhere(const struct policy *p)
{
	size_t n = 0;

	for (size_t k = 0; k < p->n_pools; k++) {
		const struct policy_pool *pool = &p->pools[k];
		for (size_t w = 0; w < pool->n_wrappers; w++)
			n += !strchr(pool->wrappers[w], ':');
		for (size_t s = 0; s < pool->n_sites; s++)
			n += !pool->sites[s].by_offset && !pool->sites[s].object &&
			     strcmp(pool->sites[s].function, "*") != 0;
	}
	return n;
}

/* The shim applies at most POLICY_OBJECT_NAME_RULES_MAX rules by name to
 * one object: one warning for each object glob whose sites by name, with
 * the rules for every object, pass that (a lower bound: other globs may
 * fit the same object too), or one when those alone do. */
static void lint_names(struct lint *l, const struct policy *p)
{
	size_t every = names_everywhere(p);
	bool said = false;

	for (size_t k = 0; k < p->n_pools; k++)
		for (size_t s = 0; s < p->pools[k].n_sites; s++) {
			const struct policy_site *site = &p->pools[k].sites[s];
			size_t n = 0;
			bool first = true;
			if (site->by_offset || !site->object)
				continue;
			for (size_t k2 = 0; k2 < p->n_pools && first; k2++)
				for (size_t s2 = 0; s2 < p->pools[k2].n_sites; s2++) {
					const struct policy_site *o = &p->pools[k2].sites[s2];
					if (o == site)
						break;
					if (!o->by_offset && o->object && strcmp(o->object, site->object) == 0) {
						first = false;
						break;
					}
				}
			if (!first)
				continue;
			for (size_t k2 = 0; k2 < p->n_pools; k2++)
				for (size_t s2 = 0; s2 < p->pools[k2].n_sites; s2++) {
					const struct policy_site *o = &p->pools[k2].sites[s2];
					n += !o->by_offset && o->object && strcmp(o->object, site->object) == 0;
				}
			if (every + n > POLICY_OBJECT_NAME_RULES_MAX) {
				warn(l, p->line, "policy \"%s\": %zu rules by name fit an object \"%s\" fits (%zu sites "
				     "for it, %zu rules for any object): the shim applies the first %d; pin the others "
				     "by offset", p->name, every + n, site->object, n, every, POLICY_OBJECT_NAME_RULES_MAX);
				said = true;
			}
		}
	if (!said && every > POLICY_OBJECT_NAME_RULES_MAX)
		warn(l, p->line, "policy \"%s\": %zu rules by name fit every object: the shim applies the first %d "
		     "to each", p->name, every, POLICY_OBJECT_NAME_RULES_MAX);
}

size_t policy_lint(const struct policy_set *set, policy_warn_fn fn, void *ctx)
{
	struct lint l = { fn, ctx, 0 };
	for (size_t i = 0; i < set->n_policies; i++) {
		const struct policy *p = &set->policies[i];
		for (size_t k = 0; k < p->n_match_exe; k++)
			lint_exe(&l, p, p->match_exe[k]);
		for (size_t j = 0; j < i; j++)
			if (shadows(&set->policies[j], p)) {
				warn(&l, p->line, "policy \"%s\" is never used: policy \"%s\" (line %d) "
				     "comes first and matches every process it matches",
				     p->name, set->policies[j].name, set->policies[j].line);
				break;
			}
		for (size_t k = 0; k < p->n_pools; k++)
			lint_pool(&l, p, &p->pools[k]);
		lint_names(&l, p);
	}
	return l.n;
}
