/*
 * resolve.c - from "the function whose code called malloc" to a pool: the
 * policy's site and wrapper rules, read from its image (policy_image.h, in
 * the read-only state), turned into address ranges, and the decision for
 * each return address, made once and cached in site.c.
 *
 * The objects loaded at start-up are read from their files (.symtab where
 * present, so static functions count; .dynsym otherwise) before the
 * program's main runs.  Objects loaded later by dlopen are read from memory
 * (.dynsym, exported functions only) at the first allocation made from
 * them: by then the program may be chrooted or under a seccomp filter, and
 * an allocator must not open files behind its back.
 *
 * Range tables are built aside and published with one atomic store, then
 * never written again (they are mprotect'ed read-only) nor freed, so
 * lookups take no lock.  Runs with shim_busy set: its own allocations go to
 * libc.  Never called from a signal handler.
 */
#define _GNU_SOURCE
#include "shim.h"
#include "os.h"
#include "site.h"
#include "symtab.h"
#include "journal.h"
#include "rules_msg.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#define OBJECTS_MAX 4096

struct rule {
	int route;                  /* pool index, or SITE_ROUTE_WRAPPER */
	int pool;                   /* the pool whose rule it is (a wrapper's too) */
	const char *object;         /* glob or NULL */
	const char *function;       /* glob; the text "+0xOFFSET" of an offset site */
	const char *build_id;       /* offset sites: the build-id the object must have, or NULL */
	uint64_t offset;            /* offset sites */
	bool by_offset;
	size_t prefix_len;          /* function's leading characters that are not a glob's */
	bool literal;               /* function has no glob characters */
	bool matched;
};

/* A loaded object, as both dl_iterate_phdr and a link map name it: load
 * bias and l_name ("" for the program).  Two objects loaded at once never
 * share both; an object loaded where an unloaded one was is a new key only
 * once the old one is forgotten (resolve_forget_unloaded). */
struct object_key {
	uintptr_t base;
	const char *name;         /* interned copy */
};

struct range {
	uintptr_t start, end;
	int route;
	const char *name;
	uintptr_t name_base;        /* what the site's "name+0xOFF" counts from */
	struct object_key obj;
};

struct range_table {
	size_t n, map_len;
	struct range r[];
};

static const struct shim_state *state;   /* the state being armed, then shim */
static struct rule *rules;
static size_t n_rules;
static bool any_specific;        /* a rule other than the match-all "*" (a wrapper is one) */
/* Functions the rules name, and, apart, the call sites that offset rules
 * name (one byte each: a function range may hold several, and the
 * function table's search needs ranges that do not overlap). */
static struct range_table *_Atomic table;
static struct range_table *_Atomic points;
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static struct object_key scanned[OBJECTS_MAX];   /* objects already read */
static size_t n_scanned;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool object_matches(const struct rule *r, const char *path)
{
	return !r->object || fnmatch(r->object, path, 0) == 0 ||
	       fnmatch(r->object, base_name(path), 0) == 0;
}

/* Collected ranges of one object, before merging. */
struct collect {
	const struct rule **rules;   /* the rules that apply to this object */
	size_t n_rules;
	bool first[256];             /* a name starting so may match one of them */
	struct object_key obj;
	struct range *r;
	size_t n, cap;
};

static int collect_add(struct collect *c, uintptr_t start, uintptr_t end, int route, const char *name,
		       uintptr_t name_base)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct range *nr = realloc(c->r, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		c->r = nr;
		c->cap = cap;
	}
	struct range *r = &c->r[c->n];
	*r = (struct range){ start, end, route, NULL, name_base, c->obj };
	r->name = strdup(name);
	if (!r->name)
		return -ENOMEM;
	c->n++;
	return 0;
}

static int collect_symbol(void *ctx, const char *name, uintptr_t start, size_t size)
{
	struct collect *c = ctx;
	/* Tens of thousands of symbols (libc's debug file has 10,000 functions),
	 * a few rules: one load rejects nearly all. */
	if (!c->first[(unsigned char)name[0]])
		return 0;
	for (size_t i = 0; i < c->n_rules; i++) {
		const struct rule *ru = c->rules[i];
		/* Thousands of symbols an object, a few rules: the first
		 * character, then the literal prefix, reject nearly all
		 * before strcmp or fnmatch is asked. */
		if (ru->prefix_len && (name[0] != ru->function[0] ||
				       (ru->prefix_len > 1 && name[1] != ru->function[1])))
			continue;
		if (ru->literal ? strcmp(ru->function, name) != 0
				: strncmp(ru->function, name, ru->prefix_len) != 0 ||
				  fnmatch(ru->function, name, 0) != 0)
			continue;
		int r = collect_add(c, start, start + size, ru->route, name, start);
		if (r < 0)
			return r;
		((struct rule *)(uintptr_t)ru)->matched = true;
		break;      /* first rule wins: wrappers are listed before sites */
	}
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Tables come from one reservation made at start-up: no mmap while the
 * program runs (after a dlclose, a fresh mapping would also take the place
 * of the object just unloaded), and nothing is ever unmapped. */
#define TABLE_SPACE ((size_t)16 << 20)
static char *table_base;
static size_t table_used;

static int table_space(size_t len, void **ret)
{
	if (table_base && table_used + len <= TABLE_SPACE) {
		int r = os_commit(table_base + table_used, len);
		if (r < 0)
			return r;
		*ret = table_base + table_used;
		table_used += len;
		return 0;
	}
	return os_map(len, ret);
}

/* Publish c's ranges, with the current table's when keep_old, as a new
 * read-only table in *tab. */
static int merge(struct range_table *_Atomic *tab, struct collect *c, bool keep_old)
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
	os_protect_ro(mem, len);
	atomic_store(tab, t);
	/* The old table stays mapped: a lookup may still be reading it. */
	return 0;
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

/* .dynsym of a loaded object, from memory: DT_SYMTAB/DT_STRTAB (relocated
 * by ld.so on this architecture), with the symbol count from DT_HASH or,
 * lacking it, the last chain of DT_GNU_HASH. */
static int walk_loaded_dynsym(const ElfW(Dyn) *dyn, uintptr_t bias, symtab_fn fn, void *ctx)
{
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *hash = NULL, *gnu = NULL;
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const void *)d->d_un.d_ptr; break;
		case DT_STRTAB: strtab = (const void *)d->d_un.d_ptr; break;
		case DT_HASH: hash = (const void *)d->d_un.d_ptr; break;
		case DT_GNU_HASH: gnu = (const void *)d->d_un.d_ptr; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	size_t count = 0;
	if (hash) {
		count = hash[1];
	} else if (gnu) {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
		const uint32_t *buckets = gnu + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t last = 0;
		for (uint32_t i = 0; i < nbuckets; i++)
			if (buckets[i] > last)
				last = buckets[i];
		if (last >= symoffset) {
			while (!(chain[last - symoffset] & 1))
				last++;
			count = last + 1;
		}
	}
	for (size_t i = 0; i < count; i++) {
		const ElfW(Sym) *s = &symtab[i];
		int type = ELF64_ST_TYPE(s->st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF || !s->st_size)
			continue;
		int r = fn(ctx, strtab + s->st_name, bias + s->st_value, s->st_size);
		if (r)
			return r;
	}
	return 0;
}

/* The call sites that offset rules name in one object, into p.  A rule
 * pinned to a build-id the object does not have routes nothing there, and
 * says so (once: each object is scanned once). */
static void collect_points(struct collect *p, const struct rule *const *applicable, size_t n,
			   const char *path, const ElfW(Phdr) *ph, size_t phnum)
{
	char id[SYMTAB_BUILD_ID_MAX];
	int have_id = -1;            /* read when a rule first asks */
	for (size_t i = 0; i < n; i++) {
		const struct rule *ru = applicable[i];
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
		if (ra == 0 || collect_add(p, ra - 1, ra, ru->route, base_name(path), p->obj.base) < 0)
			continue;
		((struct rule *)(uintptr_t)ru)->matched = true;
	}
}

/* Read the function symbols of one object (key: its load bias and l_name),
 * from its file or from memory, and publish the ranges the rules select. */
static void scan_object(uintptr_t base, const char *key_name, const char *path, const ElfW(Dyn) *dyn,
			const ElfW(Phdr) *ph, size_t phnum, bool from_file)
{
	const struct rule *applicable[64], *by_offset[64];
	struct collect c = { .rules = applicable }, p = { 0 };
	size_t n_offset = 0;
	c.obj.base = base;
	c.obj.name = strdup(key_name);
	if (!c.obj.name)
		return;
	p.obj = c.obj;
	for (size_t i = 0; i < n_rules; i++) {
		if (!object_matches(&rules[i], path))
			continue;
		if (rules[i].by_offset) {
			if (n_offset < ARRAY_SIZE(by_offset))
				by_offset[n_offset++] = &rules[i];
		} else if (c.n_rules < ARRAY_SIZE(applicable)) {
			c.rules[c.n_rules++] = &rules[i];
			if (rules[i].prefix_len)
				c.first[(unsigned char)rules[i].function[0]] = true;
			else
				memset(c.first, 1, sizeof(c.first));   /* a glob first: any name */
		}
	}
	if (n_offset)
		collect_points(&p, by_offset, n_offset, path, ph, phnum);
	if (c.n_rules) {
		int r = from_file ? symtab_for_each_function(path, base, collect_symbol, &c)
				  : walk_loaded_dynsym(dyn, base, collect_symbol, &c);
		if (r < 0)
			debug_printf("cannot read symbols of %s: %s", path, strerror(-r));
	}
	pthread_mutex_lock(&resolve_lock);
	bool fresh = !already_scanned(base, key_name);
	if (fresh) {
		if (n_scanned < OBJECTS_MAX)
			scanned[n_scanned++] = c.obj;
		if (p.n)
			merge(&points, &p, true);
		fresh = c.n && merge(&table, &c, true) == 0;
	}
	pthread_mutex_unlock(&resolve_lock);
	/* Said outside the lock: nothing that may call out runs under it. */
	if (fresh && pm_debug)
		for (size_t i = 0; i < c.n; i++)
			debug_printf("site %s [%#lx, %#lx) in %s -> %s", c.r[i].name,
				     (unsigned long)c.r[i].start, (unsigned long)c.r[i].end, path,
				     c.r[i].route == SITE_ROUTE_WRAPPER ? "wrapper"
				     : state->pools[c.r[i].route].pool->name);
	free(c.r);
	free(p.r);
}

static const char *object_path(const struct link_map *lm, char *buf, size_t len)
{
	if (lm->l_name && lm->l_name[0])
		return lm->l_name;
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static const struct range *lookup_in(const struct range_table *t, uintptr_t a)
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

/* The rule's range for code address a: a call site an offset rule names,
 * else the function a name rule names. */
static const struct range *lookup(uintptr_t a)
{
	const struct range *r = lookup_in(atomic_load_explicit(&points, memory_order_acquire), a);
	return r ? r : lookup_in(atomic_load_explicit(&table, memory_order_acquire), a);
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

/* An object loaded after start-up: read it from memory, once. */
static void ensure_scanned(uintptr_t a)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)a, &dlfo) != 0 || !dlfo.dlfo_link_map)
		return;
	const struct link_map *lm = dlfo.dlfo_link_map;
	const char *key_name = lm->l_name ? lm->l_name : "";
	pthread_mutex_lock(&resolve_lock);
	bool done = already_scanned(lm->l_addr, key_name);
	pthread_mutex_unlock(&resolve_lock);
	if (done)
		return;
	char buf[4096];
	const char *path = object_path(lm, buf, sizeof(buf));
	/* Its program headers (for its build-id): they stay mapped while the
	 * object is loaded, and dlclose cannot run under the shim's guard. */
	struct phdr_query q = { lm->l_addr, key_name, NULL, 0 };
	dl_iterate_phdr(find_phdrs, &q);
	size_t unmatched = resolve_unmatched();
	scan_object(lm->l_addr, key_name, path ? path : "?", lm->l_ld, q.ph, q.phnum, false);
	/* pmallocd shows which rules matched: tell it when a dlopen'ed
	 * object resolves one that nothing matched before. */
	if (resolve_unmatched() < unmatched)
		rules_msg_send(RULES_MSG_RULES);
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
	const struct range *r = lookup(ip - 1);
	if (r && r->route == SITE_ROUTE_WRAPPER)
		return _URC_NO_REASON;      /* a wrapper calling a wrapper: keep going */
	w->caller = ip;
	return _URC_END_OF_STACK;
}

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

static int add_rule(struct rule ru)
{
	struct rule *nr = realloc(rules, (n_rules + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	rules = nr;
	ru.prefix_len = strcspn(ru.function, "*?[\\");
	ru.literal = ru.function[ru.prefix_len] == '\0';
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
	char *object = strndup(w, (size_t)((at ? at : colon) - w));
	char *build_id = at ? strndup(at + 1, (size_t)(colon - at - 1)) : NULL;
	if (!object || (at && !build_id)) {
		free(object);
		free(build_id);
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

static int visit_startup(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	const char *key_name = info->dlpi_name ? info->dlpi_name : "", *path = key_name;
	char buf[4096];
	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
		if (n <= 0)
			return 0;
		buf[n] = '\0';
		path = buf;
	}
	if (strncmp(base_name(path), "linux-vdso", 10) == 0 || strncmp(base_name(path), "linux-gate", 10) == 0)
		return 0;
	scan_object(info->dlpi_addr, key_name, path, NULL, info->dlpi_phdr, info->dlpi_phnum, true);
	return 0;
}

struct loaded {
	struct object_key *keys;
	size_t n, cap;
};

static int visit_loaded(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct loaded *l = ctx;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct object_key *k = realloc(l->keys, cap * sizeof(*k));
		if (!k)
			return 1;
		l->keys = k;
		l->cap = cap;
	}
	l->keys[l->n++] = (struct object_key){ info->dlpi_addr, info->dlpi_name ? info->dlpi_name : "" };
	return 0;
}

static bool is_loaded(const struct loaded *l, const struct object_key *k)
{
	for (size_t i = 0; i < l->n; i++)
		if (key_equal(k, l->keys[i].base, l->keys[i].name))
			return true;
	return false;
}

void resolve_forget_unloaded(void)
{
	if (!state || !any_specific)
		return;
	struct loaded l = { 0 };
	if (dl_iterate_phdr(visit_loaded, &l) != 0) {
		free(l.keys);
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
	struct range_table *_Atomic *tabs[] = { &table, &points };
	for (size_t k = 0; changed && k < ARRAY_SIZE(tabs); k++) {
		struct range_table *old = atomic_load(tabs[k]);
		if (!old)
			continue;
		struct collect c = { 0 };
		c.r = malloc(old->n * sizeof(struct range) + 1);
		for (size_t i = 0; c.r && i < old->n; i++)
			if (is_loaded(&l, &old->r[i].obj))
				c.r[c.n++] = old->r[i];
		if (c.r)
			merge(tabs[k], &c, false);
		free(c.r);
	}
	pthread_mutex_unlock(&resolve_lock);
	free(l.keys);
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

int resolve_init(struct shim_state *st)
{
	state = st;
	pthread_atfork(resolve_lock_take, resolve_lock_drop, resolve_lock_drop);
	void *space;
	if (os_reserve(TABLE_SPACE, &space) == 0)
		table_base = space;
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
	if (!any_specific)
		return 0;            /* "*" alone needs no symbols */
	dl_iterate_phdr(visit_startup, NULL);
	for (size_t i = 0; i < n_rules; i++)
		if (!rules[i].matched) {
			const char *kind = rules[i].route == SITE_ROUTE_WRAPPER ? "wrapper" : "site";
			char text[600];
			snprintf(text, sizeof(text), "%s%s%s", rules[i].object ? rules[i].object : "",
				 rules[i].object ? ":" : "", rules[i].function);
			debug_printf("%s rule \"%s\" matches no function loaded at start-up", kind, text);
			/* Not only under PMALLOC_DEBUG: a typo must not protect nothing silently. */
			journal_unmatched(pimg_policy_name(img),
					  rules[i].route >= 0 ? pimg_pool_name(img, (size_t)rules[i].route) : "",
					  kind, text);
		}
	return 0;
}

size_t resolve_n_rules(void)
{
	return n_rules;
}

size_t resolve_unmatched(void)
{
	size_t n = 0;
	for (size_t i = 0; i < n_rules; i++)
		n += !rules[i].matched;
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
		.matched = r->matched,
		.object = r->object,
		.function = r->function,
		.build_id = r->build_id,
	};
	return true;
}
