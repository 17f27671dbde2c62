/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_chain.c - propose's choice: from learned allocation contexts
 * (call chains with their counts) to each pool's sites and wrappers, its
 * coverage, and its text.  The contexts are a set ctl_propose_set.c
 * filled (its inside: ctl_pset.h).
 *
 * Owns the frame choice and the rule it must keep.  A context is safe when
 * all its allocations were made before the pool's trigger, it was never
 * written and it freed nothing after the trigger; clean when also what it
 * freed before (start-up objects the program was done with) is at most
 * PROPOSE_EARLY_RATIO times what it kept: enforce's pool takes those too
 * and never reuses them, so max_bytes counts them.  Step 1: along each
 * clean chain, from the allocator up, the first frame through which only
 * clean chains pass (by function, else by its call, pinned to the
 * object's build-id) is its choice, and the frames below it become
 * wrappers (by function name when every call of that function a chain
 * passes is below a choice, else by pinned call).  Step 2: enforce mode
 * looks through the pool's wrappers for every allocation, so with that
 * wrapper set W each chain's site is its first frame not in W; a site is
 * proposed only when every chain whose first frame outside W it is, is
 * safe, and what those chains freed before the trigger, together, is at
 * most PROPOSE_EARLY_RATIO times what they kept together: the pool takes
 * a site's allocations as one, so the ratio is the site's (a context that
 * only made scratch, such as the bucket table a dictionary outgrew before
 * the trigger, does not leave out the site that keeps the dictionary).
 * That is the invariant: for every learned chain, the first frame not in
 * W, if a proposed site, belongs to safe chains only, whose early frees
 * max_bytes counts.  A site by name past the POLICY_OBJECT_NAME_RULES_MAX
 * the shim applies to its object (counting every pool's wrappers by name,
 * which fit every object) is written as its calls, pinned (offsets have no
 * limit), never as a name the shim would drop.  Neither the shim's frames
 * nor glibc's are ever a choice or a site, and what glibc allocated for
 * itself is never proposed (in_glibc).  Must never propose a site that a written or late
 * chain reaches, or one that freed while serving; never write a value
 * into the text but through ctl_conf_quote().  Costs: one hash lookup per
 * frame per step (a few thousand contexts of 16 frames for a server:
 * milliseconds).
 */
#define _GNU_SOURCE
#include "ctl_propose_chain.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_propose_set.h"
#include "ctl_pset.h"
#include "ctl_quote.h"
#include "policy.h"
#include "role.h"

/* A learned pool's name and its roles (group_name). */
#define POOL_GROUP_NAME 128

static bool clean(const struct pchain *c)
{
	return pcounts_clean(&c->c);
}

static bool safe(const struct pchain *c)
{
	return pcounts_safe(&c->c);
}

/* Roles: a site is proposed for the roles learning saw for its pool in
 * which every chain whose site it is was safe; a role learning never saw
 * is proposed nothing (it runs unprotected).  Entries without a role (an
 * older shim) stand for every process: a pool holding any is proposed as
 * before, a site only when safe everywhere, for every role. */
static uint32_t pool_roles(const struct pset *s, const char *pool)
{
	uint32_t roles = 0;
	for (size_t i = 0; i < s->ch_n; i++)
		if (s->ch[i].pool == pool)
			roles |= s->ch[i].c.roles;
	return roles;
}

static uint32_t site_roles(uint32_t roles, uint32_t unsafe)
{
	if (roles & PROLE_UNKNOWN)
		return unsafe ? 0 : roles;
	return roles & ~unsafe;
}

/* Of roles, those whose own entries reached the site: a role that sent no
 * entry of it (haproxy's worker: its exit flush cut short by journald,
 * its periodic flush refused a thread by RLIMIT_NPROC) is not enforced
 * from another role's word that it is never written.  Entries without a
 * role (an older shim) keep the old reading. */
static uint32_t seen_in(const struct kstat *k, uint32_t roles)
{
	return k->seen_roles & PROLE_UNKNOWN ? roles : roles & k->seen_roles;
}

/* Safe in at least one role of roles. */
static bool safe_in(const struct pchain *c, uint32_t roles)
{
	return c->c.objects > 0 && (site_roles(c->c.roles, c->c.dirty_roles) & roles) != 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Can a rule name this function ("OBJECT:FUNCTION", a wrapper "FUNCTION")?
 * Not when its name would read as a glob or cannot stand in a policy. */
static bool function_ok(const struct pframe *f)
{
	return f->function && ctl_conf_name_ok(f->function) && !strpbrk(f->function, "*?[]\\");
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* The object part of a rule: its file name, when that reads as itself. */
static const char *object_glob(const struct pframe *f)
{
	const char *b = base_name(f->object);
	return ctl_conf_name_ok(b) && !strpbrk(b, "*?[]\\:@") ? b : NULL;
}

static bool by_name_ok(const struct pframe *f)
{
	return function_ok(f) && object_glob(f);
}

/* The shim's own code: never a choice nor a site, nor looked through (the
 * shim never routes from its own object).  A chain that reaches it from
 * the allocator up is libc's own bookkeeping for a call through one of
 * the shim's interposers (the TLS vector pthread_create allocates, which
 * ld.so writes again as modules with TLS load), or one of the shim's own
 * threads as an older shim learned it: never a program's start-up data.
 * Proposed, they were sites such as "libpmalloc_shim.so:pthread_create"
 * (redis's proposal). */
static bool in_shim(const struct pframe *f)
{
	return strncmp(base_name(f->object), "libpmalloc_shim.so", 18) == 0;
}

/* The C library and the loader (glibc's objects: libc, ld.so, the
 * libraries split from libc, the name-service and gconv modules).  What
 * they allocate for themselves is their state, not the program's: the
 * name-service module records a first lookup allocates for every module
 * nsswitch.conf names (written when a later lookup first needs one), the
 * link maps a dlopen adds to (the next dlopen writes the last), the time
 * zone's strings (appended to when the zone changes), the locale's,
 * environ's array (setenv), FILE buffers.  glibc writes that state on
 * events of its own, which a learn run sees only if its load happened to
 * cause them: proposed, it killed the program at the first such event
 * (tests/integration/learn_libc_state.sh).  So a glibc frame is never a
 * choice nor a site, and a chain glibc allocated for itself is never
 * proposed (glibc_own); in any other chain its glibc frames are looked
 * through as wrappers (below the first frame of the program's, only
 * functions that hand the caller what they allocated: else the chain is
 * glibc's own). */
static bool in_glibc(const struct pframe *f)
{
	return policy_object_is_glibc(f->object);
}

/* glibc's functions that allocate what they return for the caller to own
 * and free, and do nothing else with it (the C library's own strdup and
 * strndup, which the shim interposes for the program, appear only inside
 * glibc, or below one of these): by their names in glibc's tables, less
 * "__GI_", leading underscores and an "_internal" or "_chk" ending.  A
 * function not here keeps what it allocates (or may: getaddrinfo and glob
 * look names up), and a chain through it is glibc's state. */
static bool hands_to_caller(const char *fn)
{
	static const char *const names[] = {
		"strdup", "strndup", "wcsdup", "asprintf", "vasprintf", "getline", "getdelim", "getcwd",
		"get_current_dir_name", "realpath", "canonicalize_file_name", "scandir", "scandir64", "scandirat",
		"scandirat64", "scandir_tail", "scandir64_tail", "tempnam", "backtrace_symbols",
	};
	static const char *const endings[] = { "_internal", "_chk" };
	if (strncmp(fn, "__GI_", 5) == 0)
		fn += 5;
	while (*fn == '_')
		fn++;
	size_t len = strlen(fn);
	for (size_t i = 0; i < sizeof(endings) / sizeof(endings[0]); i++) {
		size_t e = strlen(endings[i]);
		if (len > e && strcmp(fn + len - e, endings[i]) == 0)
			len -= e;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len && strncmp(fn, names[i], len) == 0)
			return true;
	return false;
}

/* A chain glibc allocated for itself: its frames from the allocator up
 * are glibc's to the end, or to a frame of the program's below which one
 * does not hand the caller what it allocated. */
static bool glibc_own(const struct pchain *c)
{
	size_t d;
	for (d = 0; d < c->n && in_glibc(&c->f[d]); d++)
		if (!c->f[d].function || !hands_to_caller(c->f[d].function))
			return true;
	return c->n > 0 && d == c->n;
}

/* A call can be named when its object can, or its build-id can stand for it. */
static bool by_call_ok(const struct pframe *f)
{
	return object_glob(f) || f->build_id[0];
}

static size_t name_key(struct pset *s, const struct pchain *c, const struct pframe *f, bool create)
{
	return f->function ? pset_key(s, K_NAME, c->pool, f->object, f->function, 0, create, 0) : SIZE_MAX;
}

static size_t call_key(struct pset *s, const struct pchain *c, const struct pframe *f, bool create)
{
	return pset_key(s, K_OFF, c->pool, f->object, f->build_id, f->off, create, 0);
}

static size_t wname_key(struct pset *s, const struct pchain *c, const struct pframe *f, bool create)
{
	return f->function ? pset_key(s, K_WNAME, c->pool, NULL, f->function, 0, create, 0) : SIZE_MAX;
}

/* Adds c's live bytes and what it freed before the trigger to those of the
 * site st. */
static void add_site_bytes(struct kstat *st, const struct pchain *c)
{
	st->site_live = add_sat(st->site_live, c->c.live_bytes);
	st->site_early = add_sat(st->site_early, c->c.early_bytes);
}

static bool wrapped(struct pset *s, const struct pchain *c, const struct pframe *f)
{
	size_t w = wname_key(s, c, f, false), k = call_key(s, c, f, false);
	return (w != SIZE_MAX && s->ks[w].wrapper) || (k != SIZE_MAX && s->ks[k].wrapper);
}

/* Step 1 for one pool: what passes through only clean chains; each clean
 * chain's choice; the frames below it as wrappers.  A function is a
 * wrapper by name only when every call of it that a chain passes through
 * is below a choice: looking through it by name then looks through no
 * call beyond the choices.  Otherwise its calls below a choice are the
 * wrappers, each by its call pinned to the build-id (the function is then
 * only partly wrapped, and no site by name). */
static int choose_wrappers(struct pset *s, const char *pool)
{
	for (size_t i = 0; i < s->ch_n; i++) {
		const struct pchain *c = &s->ch[i];
		if (c->pool != pool)
			continue;
		for (size_t d = 0; d < c->n; d++) {
			size_t n = name_key(s, c, &c->f[d], true), k = call_key(s, c, &c->f[d], true);
			if (k == SIZE_MAX || (c->f[d].function && n == SIZE_MAX))
				return -ENOMEM;
			if (n != SIZE_MAX) {
				s->ks[n].dirty |= !clean(c);
				s->ks[n].fr = &c->f[d];
			}
			s->ks[k].dirty |= !clean(c);
			s->ks[k].fr = &c->f[d];
		}
	}
	for (size_t i = 0; i < s->ch_n; i++) {
		struct pchain *c = &s->ch[i];
		if (c->pool != pool)
			continue;
		c->choice = -1;
		if (!clean(c) || glibc_own(c))
			continue;
		size_t d;
		for (d = 0; d < c->n; d++) {
			const struct pframe *f = &c->f[d];
			if (in_shim(f)) {
				d = c->n;
				break;
			}
			if (in_glibc(f) && (function_ok(f) || by_call_ok(f)))
				continue;            /* looked through: never the choice */
			size_t n = name_key(s, c, f, false), k = call_key(s, c, f, false);
			if ((by_name_ok(f) && !s->ks[n].dirty) || (by_call_ok(f) && !s->ks[k].dirty))
				break;
			if (!function_ok(f) && !by_call_ok(f)) {
				d = c->n;            /* a frame no rule can look through */
				break;
			}
		}
		if (d == c->n)
			continue;
		c->choice = (ssize_t)d;
		for (size_t w = 0; w < d; w++)
			s->ks[call_key(s, c, &c->f[w], false)].below = true;
	}
	/* A name whose calls are not all below a choice. */
	for (size_t i = 0; i < s->ch_n; i++) {
		const struct pchain *c = &s->ch[i];
		if (c->pool != pool)
			continue;
		for (size_t d = 0; d < c->n; d++) {
			if (!function_ok(&c->f[d]) || s->ks[call_key(s, c, &c->f[d], false)].below)
				continue;
			size_t k = wname_key(s, c, &c->f[d], true);
			if (k == SIZE_MAX)
				return -ENOMEM;
			s->ks[k].beyond = true;
		}
	}
	for (size_t i = 0; i < s->ch_n; i++) {
		const struct pchain *c = &s->ch[i];
		if (c->pool != pool || c->choice < 0)
			continue;
		for (size_t w = 0; w < (size_t)c->choice; w++) {
			const struct pframe *f = &c->f[w];
			size_t k = function_ok(f) ? wname_key(s, c, f, true) : SIZE_MAX;
			if (function_ok(f) && k == SIZE_MAX)
				return -ENOMEM;
			if (k == SIZE_MAX || (s->ks[k].beyond && by_call_ok(f))) {
				size_t n = name_key(s, c, f, false);
				if (n != SIZE_MAX)
					s->ks[n].partly = true;
				k = call_key(s, c, f, false);
			}
			s->ks[k].wrapper = true;
			s->ks[k].fr = f;
		}
	}
	return 0;
}

/* Step 2 for one pool: each chain's site under the wrappers, and the sites
 * that only safe chains reach, which together kept enough of what they
 * allocated. */
static void choose_sites(struct pset *s, const char *pool)
{
	for (size_t i = 0; i < s->ch_n; i++) {
		struct pchain *c = &s->ch[i];
		if (c->pool != pool)
			continue;
		c->site = -1;
		for (size_t d = 0; d < c->n && c->site < 0; d++)
			if (!wrapped(s, c, &c->f[d]))
				c->site = (ssize_t)d;
		if (c->site >= 0 && (in_shim(&c->f[c->site]) || in_glibc(&c->f[c->site])))
			c->site = -1;
		if (c->site < 0)
			continue;
		size_t n = name_key(s, c, &c->f[c->site], false), k = call_key(s, c, &c->f[c->site], false);
		/* A chain that is not safe in some role keeps the site out of
		 * that role (and of every role, without roles: dirty_site). */
		uint32_t unsafe = c->c.objects > 0 ? c->c.dirty_roles : UINT32_MAX;
		uint32_t seen = c->c.roles ? c->c.roles : PROLE_UNKNOWN;
		if (n != SIZE_MAX) {
			s->ks[n].dirty_site |= !safe(c);
			s->ks[n].unsafe_roles |= unsafe;
			s->ks[n].seen_roles |= seen;
			add_site_bytes(&s->ks[n], c);
		}
		s->ks[k].dirty_site |= !safe(c);
		s->ks[k].unsafe_roles |= unsafe;
		s->ks[k].seen_roles |= seen;
		add_site_bytes(&s->ks[k], c);
	}
	uint32_t roles = pool_roles(s, pool);
	for (size_t i = 0; i < s->ch_n; i++) {
		struct pchain *c = &s->ch[i];
		if (c->pool != pool || c->site < 0 || !safe_in(c, roles))
			continue;
		const struct pframe *f = &c->f[c->site];
		size_t n = name_key(s, c, f, false), k = call_key(s, c, f, false);
		uint32_t rn = n != SIZE_MAX ? seen_in(&s->ks[n], site_roles(roles, s->ks[n].unsafe_roles)) : 0;
		uint32_t rk = seen_in(&s->ks[k], site_roles(roles, s->ks[k].unsafe_roles));
		if (n != SIZE_MAX && by_name_ok(f) && rn && !s->ks[n].partly &&
		    pcounts_kept_enough(s->ks[n].site_live, s->ks[n].site_early)) {
			s->ks[n].site = true;
			s->ks[n].site_roles = rn;
		} else if (by_call_ok(f) && rk && pcounts_kept_enough(s->ks[k].site_live, s->ks[k].site_early)) {
			s->ks[k].site = true;
			s->ks[k].site_roles = rk;
		}
	}
}

/* The rule text of a function (by_name) or of a call. */
static void put_rule(FILE *f, const struct pframe *fr, bool by_name, bool wrapper)
{
	char *text = NULL;
	const char *obj = object_glob(fr);
	if (by_name && wrapper)
		text = strdup(fr->function);
	else if (by_name && asprintf(&text, "%s:%s", obj, fr->function) < 0)
		text = NULL;
	else if (!by_name && asprintf(&text, "%s%s%s:+0x%" PRIx64, obj ? obj : "*", fr->build_id[0] ? "@" : "",
				      fr->build_id, fr->off) < 0)
		text = NULL;
	ctl_conf_quote(f, text ? text : "");
	free(text);
}

/* The pool's triggers that the parser knows, as it writes them; false when none. */
static bool put_triggers(FILE *f, const char *triggers)
{
	char *copy = strdup(triggers), *save = NULL;
	bool any = false;
	fputs("        protect = [", f);
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
		uint64_t ns;
		if (strcmp(t, "on-wait") == 0 || strcmp(t, "manual") == 0 ||
		    (strncmp(t, "on-call:", 8) == 0 && policy_call_from_name(t + 8) >= 0) ||
		    (strncmp(t, "after:", 6) == 0 && policy_parse_duration(t + 6, &ns) == 0)) {
			fputs(any ? ", " : " ", f);
			ctl_conf_quote(f, t);
			any = true;
		}
	}
	fputs(" ];\n", f);
	free(copy);
	return any;
}

struct coverage {
	uint64_t live, unwritten, written, late, freed;
	uint64_t glibc;              /* unwritten, glibc's own state (glibc_own): never proposed */
	uint64_t early;              /* freed before the trigger by the protected contexts (max_bytes) */
	size_t sites;
};

static void put_coverage(FILE *f, const char *indent, const struct coverage *v)
{
	/* Rounded down: never more than was reached. */
	uint64_t tenths = v->unwritten ? (uint64_t)((unsigned __int128)v->live * 1000 / v->unwritten) : 0;
	fprintf(f, "%s# protected: %" PRIu64 " bytes live in %zu sites; unwritten at learning: %" PRIu64
		   " bytes; coverage %" PRIu64 ".%" PRIu64 "%%\n", indent, v->live, v->sites, v->unwritten,
		tenths / 10, tenths % 10);
	fprintf(f, "%s# left out: %" PRIu64 " bytes written, %" PRIu64 " bytes allocating while serving, %" PRIu64
		   " bytes freed\n", indent, v->written, v->late, v->freed);
	if (v->glibc)
		fprintf(f, "%s# left on the heap: %" PRIu64 " bytes of the C library's and the loader's own state\n"
			   "%s#   (name-service records, link maps, locale, time zone, environ: written by them on\n"
			   "%s#   events a learn load may never cause; not counted above)\n",
			indent, v->glibc, indent, indent);
}

/* Pool memory is never reused: a cap keeps a site that allocates in a way
 * learning did not see from growing it for good.  Twice what was learned,
 * in whole MiB, at least 1 MiB. */
static uint64_t cap_for(uint64_t learned)
{
	const uint64_t unit = (uint64_t)1 << 20;
	uint64_t twice = learned > UINT64_MAX / 4 ? UINT64_MAX / 2 : 2 * learned;
	uint64_t cap = (twice + unit - 1) / unit * unit;
	return cap < unit ? unit : cap;
}

/* The shim applies at most POLICY_OBJECT_NAME_RULES_MAX rules by name to
 * one object, wrappers by name (which fit every object) first: is there
 * room for one more site by name in fr's object?  Counts it when there is
 * (false too without memory: a site pinned by its calls has no limit). */
static bool name_room(struct pset *s, const struct pframe *fr)
{
	size_t o = pset_key(s, K_OBJECT, NULL, fr->object, NULL, 0, true, 0);
	if (o == SIZE_MAX || s->name_wrappers + s->ks[o].chains >= POLICY_OBJECT_NAME_RULES_MAX)
		return false;
	s->ks[o].chains++;
	return true;
}

/* The site function name (its K_NAME key) written instead as each call
 * of it that a chain of pool has as its site, into b; how many. */
static size_t pin_calls(struct pset *s, const char *pool, size_t name, FILE *b, size_t *sites)
{
	size_t n = 0;
	for (size_t i = 0; i < s->ch_n; i++) {
		const struct pchain *c = &s->ch[i];
		if (c->pool != pool || c->site < 0 || !clean(c) || name_key(s, c, &c->f[c->site], false) != name)
			continue;
		size_t k = call_key(s, c, &c->f[c->site], false);
		if (k == SIZE_MAX || s->ks[k].said)
			continue;
		fputs(*sites ? ",\n          " : "\n          ", b);
		put_rule(b, &c->f[c->site], false, false);
		s->ks[k].said = true;
		(*sites)++;
		n++;
	}
	return n;
}

/* The site key chain c's site is, proposed for the roles roles; SIZE_MAX
 * when none. */
static size_t site_key(struct pset *s, const struct pchain *c, uint32_t roles)
{
	if (c->site < 0 || !safe_in(c, roles))
		return SIZE_MAX;
	size_t n = name_key(s, c, &c->f[c->site], false), k = call_key(s, c, &c->f[c->site], false);
	size_t r = n != SIZE_MAX && s->ks[n].site ? n : k != SIZE_MAX && s->ks[k].site ? k : SIZE_MAX;
	return r != SIZE_MAX && s->ks[r].site_roles == roles ? r : SIZE_MAX;
}

/* pool, and the roles its element protects in, as a policy's pool name:
 * the learned pool's own name for the roles learning saw, else with the
 * roles after it ("learned-main"). */
static void group_name(char *out, size_t len, const char *pool, uint32_t roles, uint32_t all)
{
	int n = snprintf(out, len, "%s", pool);
	for (unsigned int d = 0; roles != all && d <= ROLE_DEPTH_MAX && n > 0 && (size_t)n < len; d++)
		if (roles & (1u << d))
			n += snprintf(out + n, len - (size_t)n, "-%s", role_name(d));
}

/* Writes pool's element for the sites proposed for roles (or a comment
 * saying why none); adds to total.  whole: the first element of pool,
 * which counts what the pool learned (written, late, freed) once. */
static bool render_pool(struct pset *s, const char *pool, uint32_t roles, bool whole, size_t ordinal,
			uint64_t min_live, FILE *f, bool first, struct coverage *total)
{
	struct coverage v = { 0 };
	size_t small = 0;
	const char *triggers = "";
	size_t contexts = 0;
	for (size_t i = 0; i < s->ch_n; i++) {
		const struct pchain *c = &s->ch[i];
		if (c->pool != pool)
			continue;
		contexts++;
		triggers = c->triggers;
		if (whole) {
			/* Written: in every role learning saw it in (a role
			 * that did not write it may protect it). */
			bool written = c->c.written && !site_roles(c->c.roles, c->c.dirty_roles);
			bool own = !written && c->site < 0 && glibc_own(c);
			v.freed += c->c.freed_bytes;
			if (written)
				v.written += c->c.live_bytes;
			else if (own)
				v.glibc += c->c.live_bytes;
			else
				v.unwritten += c->c.live_bytes;
			if (!written && !own && c->c.late_objects)
				v.late += c->c.live_bytes;
		}
		size_t r = site_key(s, c, roles);
		if (r == SIZE_MAX)
			continue;
		s->ks[r].live += c->c.live_bytes;
		s->ks[r].early += c->c.early_bytes;
		s->ks[r].chains++;
		v.live += c->c.live_bytes;
		v.early += c->c.early_bytes;
	}
	char *body = NULL, *wrappers = NULL, *notes = NULL;
	size_t bl = 0, wl = 0, nl = 0, n_wrappers = 0;
	FILE *b = open_memstream(&body, &bl), *w = open_memstream(&wrappers, &wl), *m = open_memstream(&notes, &nl);
	if (!b || !w || !m) {
		if (b)
			fclose(b);
		if (w)
			fclose(w);
		if (m)
			fclose(m);
		free(body);
		free(wrappers);
		free(notes);
		return false;
	}
	/* In the order the chains came, frame by frame: the same text for the
	 * same journal. */
	for (size_t i = 0; i < s->ch_n; i++) {
		const struct pchain *c = &s->ch[i];
		if (c->pool != pool)
			continue;
		for (size_t d = 0; d < c->n; d++) {
			const struct pframe *fr = &c->f[d];
			size_t keys[3] = { name_key(s, c, fr, false), call_key(s, c, fr, false), wname_key(s, c, fr, false) };
			for (int q = 0; q < 3; q++) {
				if (keys[q] == SIZE_MAX || s->ks[keys[q]].said)
					continue;
				struct kstat *st = &s->ks[keys[q]];
				bool site = st->site && st->site_roles == roles;
				if (site && st->live < min_live) {
					v.live -= st->live;     /* too small for the room the policy has */
					v.early -= st->early;
					small++;
					st->said = true;
				} else if (site && q == 0 && !name_room(s, st->fr)) {
					size_t calls = pin_calls(s, pool, keys[0], b, &v.sites);
					fputs("        #   site ", m);
					put_rule(m, st->fr, true, false);
					fprintf(m, ": %" PRIu64 " bytes live in %zu contexts, pinned by its %zu calls\n"
						   "        #     (the shim takes at most %d rules by name for one object)\n",
						st->live, st->chains, calls, POLICY_OBJECT_NAME_RULES_MAX);
					st->said = true;
				} else if (site) {
					fputs(v.sites ? ",\n          " : "\n          ", b);
					put_rule(b, st->fr, q == 0, false);
					fputs("        #   site ", m);
					put_rule(m, st->fr, q == 0, false);
					fprintf(m, ": %" PRIu64 " bytes live in %zu contexts", st->live, st->chains);
					if (st->early)
						fprintf(m, " (and %" PRIu64 " freed before the trigger)", st->early);
					fputc('\n', m);
					v.sites++;
					st->said = true;
				}
				if (st->wrapper) {
					fputs(n_wrappers++ ? ",\n          " : "\n          ", w);
					put_rule(w, st->fr, q == 2, true);
					st->said = true;
					st->said_in = ordinal;
				}
			}
		}
	}
	fclose(b);
	fclose(w);
	fclose(m);
	fputs(first ? "\n" : ",\n", f);
	char gname[POOL_GROUP_NAME];
	uint32_t all = pool_roles(s, pool);
	group_name(gname, sizeof(gname), pool, roles, all);
	fputs("      {\n        # pool ", f);
	ctl_conf_quote(f, pool);
	if (roles != all) {
		fputs(", the sites safe in role", f);
		for (unsigned int d = 0; d <= ROLE_DEPTH_MAX; d++)
			if (roles & (1u << d))
				fprintf(f, " %s", role_name(d));
		fputs(" only\n        # (the other roles learning saw write or free them);\n        #", f);
	}
	fprintf(f, "%s%zu contexts learned; a site is the frame nearest the allocator\n"
		   "        # whose allocations were all made before the trigger, never written and\n"
		   "        # never freed after it (freed before it: at most %d times what its\n"
		   "        # contexts kept together); the frames below it are wrappers.\n", roles != all ? " " : ": ",
		contexts, PROPOSE_EARLY_RATIO);
	fputs(notes, f);
	if (small)
		fprintf(f, "        # %zu sites of fewer than %" PRIu64 " bytes left out: the policy must fit in\n"
			   "        # what pmallocd hands out.\n", small, min_live);
	if (whole)
		put_coverage(f, "        ", &v);
	else
		fprintf(f, "        # protected: %" PRIu64 " bytes live in %zu sites (the coverage is the first pool's)\n",
			v.live, v.sites);
	bool ok = v.sites > 0;
	fputs("        name = ", f);
	char name[64];
	if (!ctl_conf_ident(gname, name, sizeof(name)))
		snprintf(name, sizeof(name), "pool%zu", ordinal);   /* two made-up names must differ */
	ctl_conf_quote(f, name);
	fprintf(f, ";\n        sites = [%s ];\n", ok ? body : " \"-\"");
	/* Only the roles learning saw: another role runs unprotected. */
	if (!(roles & PROLE_UNKNOWN)) {
		fputs("        roles = [", f);
		for (unsigned int d = 0, k = 0; d <= ROLE_DEPTH_MAX; d++)
			if (roles & (1u << d))
				fprintf(f, "%s \"%s\"", k++ ? "," : "", role_name(d));
		fputs(" ];\n", f);
	}
	if (n_wrappers)
		fprintf(f, "        wrappers = [%s ];\n", wrappers);
	ok &= put_triggers(f, triggers);
	/* The pool takes what its sites free before the trigger too, and never
	 * reuses it. */
	uint64_t cap = cap_for(v.live + v.early);
	fprintf(f, "        take = \"until-trigger\";\n        max_bytes = %" PRIu64 "%s;\n      }", cap,
		cap > INT32_MAX ? "L" : "");
	free(body);
	free(wrappers);
	free(notes);
	total->live += v.live;
	total->unwritten += v.unwritten;
	total->written += v.written;
	total->late += v.late;
	total->freed += v.freed;
	total->glibc += v.glibc;
	total->early += v.early;
	total->sites += v.sites;
	return ok;
}

size_t pset_leave_out(struct pset *s, const char *site)
{
	/* "function+0xOFF" (the shim's symbol of a site rule), or
	 * "object+0xOFF" (a call site it knows by offset only). */
	const char *plus = strstr(site, "+0x");
	size_t n = plus ? (size_t)(plus - site) : strlen(site), marked = 0;
	uint64_t off = plus ? strtoull(plus + 3, NULL, 16) : 0;
	for (int by_call = 0; by_call < 2 && marked == 0; by_call++)
		for (size_t i = 0; i < s->ch_n; i++) {
			struct pchain *c = &s->ch[i];
			if (c->site < 0)
				continue;
			const struct pframe *f = &c->f[c->site];
			bool hit = by_call ? plus && f->off == off && strlen(base_name(f->object)) == n &&
						     strncmp(base_name(f->object), site, n) == 0
					   : f->function && strlen(f->function) == n && strncmp(f->function, site, n) == 0;
			if (hit && !c->c.written) {
				/* Written in every role it was learned in: audit's
				 * write leaves the site out of each (the roles'
				 * choice reads dirty_roles, not written). */
				c->c.written = true;
				c->c.dirty_roles |= c->c.roles ? c->c.roles : PROLE_UNKNOWN;
				marked++;
			}
		}
	return marked;
}

/* Whether s->ch[i] is the first context of its pool (pools by pointer:
 * one interned name each), so that a walk over the contexts visits each
 * pool once. */
static bool first_of_pool(const struct pset *s, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (s->ch[j].pool == s->ch[i].pool)
			return false;
	return true;
}

size_t pset_render(struct pset *s, uint64_t min_live, FILE *f, FILE *total)
{
	struct coverage all = { 0 };
	/* Each render chooses afresh. */
	if (s->ks_n)                     /* ks is NULL while empty: memset(NULL, 0, 0) is undefined */
		memset(s->ks, 0, s->ks_n * sizeof(s->ks[0]));
	size_t pools = 0, ordinal = 0;
	/* Every pool's choice first: the wrappers by name of all pools count
	 * against each object's rules by name (name_room). */
	for (size_t i = 0; i < s->ch_n; i++) {
		const char *pool = s->ch[i].pool;
		if (!first_of_pool(s, i))
			continue;
		if (choose_wrappers(s, pool) < 0)
			return 0;
		choose_sites(s, pool);
	}
	s->name_wrappers = 0;
	for (size_t i = 0; i < s->k_cap; i++)
		s->name_wrappers += s->k[i].kind == K_WNAME && s->ks[s->k[i].v].wrapper;
	for (size_t i = 0; i < s->ch_n; i++) {
		const char *pool = s->ch[i].pool;
		if (!first_of_pool(s, i))
			continue;
		/* One element per set of roles its sites are proposed for: the
		 * roles learning saw first (under the pool's own name). */
		uint32_t roles = pool_roles(s, pool), groups[256] = { roles };
		size_t n_groups = 1;
		bool seen[256] = { false };
		seen[roles & 0xff] = true;
		for (size_t j = i; j < s->ch_n; j++) {
			const struct pchain *c = &s->ch[j];
			if (c->pool != pool || c->site < 0)
				continue;
			size_t n = name_key(s, c, &c->f[c->site], false), k = call_key(s, c, &c->f[c->site], false);
			size_t r = n != SIZE_MAX && s->ks[n].site ? n : k != SIZE_MAX && s->ks[k].site ? k : SIZE_MAX;
			if (r != SIZE_MAX && !seen[s->ks[r].site_roles & 0xff]) {
				seen[s->ks[r].site_roles & 0xff] = true;
				groups[n_groups++] = s->ks[r].site_roles & 0xff;
			}
		}
		for (size_t g = 0; g < n_groups; g++) {
			/* Rendered aside: a pool with nothing to protect stays a comment. */
			char *text = NULL;
			size_t len = 0;
			FILE *p = open_memstream(&text, &len);
			if (!p)
				break;
			bool ok = render_pool(s, pool, groups[g], g == 0, ++ordinal, min_live, p, pools == 0, &all);
			fclose(p);
			if (ok) {
				fputs(text, f);
				pools++;
			} else {
				/* Not written: the wrappers it took go to the next
				 * element written (the shim looks through every
				 * pool's wrappers; a first element of roles with no
				 * site left the main role's sites without theirs). */
				for (size_t k = 0; k < s->ks_n; k++)
					if (s->ks[k].wrapper && s->ks[k].said && s->ks[k].said_in == ordinal)
						s->ks[k].said = false;
			}
			if (!ok && g == 0 && n_groups == 1) {
				fputs("\n      # pool ", f);
				ctl_conf_quote(f, pool);
				fputs(" left out: no site can be protected without being written\n", f);
			}
			free(text);
		}
	}
	put_coverage(total, "    ", &all);
	return pools;
}
