/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve_inner.h - what the rooms of resolve share: resolve.c (routes
 * decided, the rules armed), resolve_object.c (one object read into
 * ranges), resolve_read.c (when each object is read), resolve_rules.c (the
 * rules: from the image, which apply to an object, which matched) and
 * resolve_table.c (the range tables).  The read-only page of the
 * decision, its fields by their short names (macros: include this header
 * last), and each room's functions.  Included by those five files only.
 */
#ifndef PMALLOC_RESOLVE_INNER_H
#define PMALLOC_RESOLVE_INNER_H

#include "resolve.h"
#include "os.h"
#include "symtab.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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
	bool prefix_star;           /* function is those characters then "*" */
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

/* What decides a site's route, in a page of its own: written at start-up
 * (resolve_init, before the state is armed), then read-only; the table
 * pointers are written again only by publish_table(), which opens the
 * page for the one store (resolve_lock held) and fails hard when it cannot
 * close it.  The rules and the range tables it points to are read-only
 * too, so a write into the shim's data or the heap cannot make a site
 * resolve to nothing (the heap). */
struct resolve_ro {
	const struct shim_state *state;  /* the state being armed, then shim */
	struct rule *rules;              /* in room, or a read-only mapping of their own (freeze_rules) */
	size_t n_rules;
	bool any_specific;               /* a rule other than the match-all "*" (a wrapper is one) */
	bool frozen;                     /* the page is read-only */
	/* Functions the rules name, and, apart, the call sites that offset
	 * rules name (one byte each: a function range may hold several, and
	 * the function table's search needs ranges that do not overlap). */
	struct range_table *_Atomic table;
	struct range_table *_Atomic points;
	/* The rules and their strings, when they fit (most policies: frozen
	 * with this page, no mapping and mprotect of their own); else in a
	 * mapping made read-only apart (freeze_rules). */
	_Alignas(64) unsigned char room[RO_PAGE - 128];
};

/* The rules that can name something in the object at path: by function
 * name (a proposal's sites and wrappers: redis's names 63 in its own
 * object), and how many by offset (resolve_collect_points() finds those itself: a
 * proposal pins hundreds of calls in one object). */
struct applicable {
	struct rule *by_name[POLICY_OBJECT_NAME_RULES_MAX];
	size_t n_name, n_offset;
};

/* Collected ranges of one object, before merging.  Their names are copied
 * into blocks of the collect's own, never freed (nor are the tables that
 * point at them): python3's 42 ranges took 42 strdup calls, some 20,000
 * instructions of its start-up, where this takes one malloc. */
struct collect {
	struct rule *const *apply;   /* the rules that apply to this object */
	size_t n_apply;
	struct object_key obj;
	struct range *r;
	size_t n, cap;
	char *names;                 /* room left for names, names_left bytes */
	size_t names_left;
};
union resolve_ro_page {
	struct resolve_ro s;
	unsigned char page[RO_PAGE];
};
_Static_assert(sizeof(union resolve_ro_page) == RO_PAGE, "the decision has its page to itself");
/* resolve_rules.c's; frozen by resolve_init (resolve.c). */
extern union resolve_ro_page rro;
#define state (rro.s.state)
#define rules (rro.s.rules)
#define n_rules (rro.s.n_rules)
#define any_specific (rro.s.any_specific)
#define table (rro.s.table)
#define points (rro.s.points)

/* resolve_rules.c */
int resolve_rules_load(struct shim_state *st);
const char *resolve_base_name(const char *path);
/* Does rule r fit the object at path?  glibc: policy_object_is_glibc(path),
 * asked once an object by the caller, whatever the number of rules. */
bool resolve_object_fits(const struct rule *r, const char *path, bool glibc);
/* The rules that can name something in the object at path, into *a. */
void resolve_applicable_rules(const char *path, struct applicable *a);
/* The first of list[n] that names function name, or NULL. */
struct rule *resolve_first_rule(struct rule *const *list, size_t n, const char *name);
/* The symbol walk's filter for the names list[n] can match, or NULL. */
const struct symtab_filter *resolve_filter_for(struct symtab_filter *f, struct rule *const *list, size_t n);
/* A rule matched something (status, never a decision). */
void resolve_mark_matched(const struct rule *ru);
bool resolve_rule_matched(size_t i);
bool resolve_all_matched(void);

/* resolve_table.c */
/* TABLE_SPACE reserved for the tables (start-up). */
void resolve_table_reserve(void);
int resolve_collect_add(struct collect *c, uintptr_t start, uintptr_t end, int route, const char *name,
			uintptr_t name_base);
/* Publish c's ranges, with the current table's when keep_old, as a new
 * read-only table in *tab. */
int resolve_merge(struct range_table *_Atomic *tab, struct collect *c, bool keep_old);
/* resolve_merge() in two steps: the new table built, read-only, its code
 * marked in the filter (*ret), then stored in *tab, its page opened for
 * the store unless page_open (the caller opened it). */
int resolve_merge_build(struct range_table *_Atomic *tab, struct collect *c, bool keep_old, struct range_table **ret);
void resolve_store_table(struct range_table *_Atomic *tab, struct range_table *t, bool page_open);
/* The range of t holding a, or NULL.  Lock-free. */
const struct range *resolve_lookup_in(const struct range_table *t, uintptr_t a);

/* resolve_object.c */
/* Held while an object is read and published, and by the filter's
 * writers. */
extern pthread_mutex_t resolve_lock __attribute__((visibility("hidden")));
static inline bool resolve_key_equal(const struct object_key *a, uintptr_t base, const char *name)
{
	return a->base == base && strcmp(a->name, name) == 0;
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
/* The program's path (exe, "" when unknown), for the objects' paths. */
void resolve_objects_init(const char *exe);
/* The objects loaded now, into l (its o from the heap); non-zero when
 * the list is short of memory. */
int resolve_loaded_list(struct loaded_list *l);
bool resolve_is_loaded(const struct loaded_list *l, const struct object_key *k);
/* Forget that the objects l does not list were read; whether any was
 * (resolve_lock held). */
bool resolve_forget_read(const struct loaded_list *l);
bool resolve_already_read(uintptr_t base, const char *name);
/* Remember obj as read (resolve_lock held, or start-up). */
void resolve_mark_read(struct object_key obj);
/* The path of the object the link map names l_name ("" for the program). */
const char *resolve_object_path(const char *l_name, char *buf, size_t len);
/* The call sites that offset rules name in one object (at path), into p. */
void resolve_collect_points(struct collect *p, const char *path, const ElfW(Phdr) *ph, size_t phnum);
/* The ranges of the functions the rules name in one object, from its
 * symbol table t, into c. */
void resolve_collect_functions(struct collect *c, const struct applicable *a, const struct symtab *t,
			       const char *path);
/* Publish what was collected of one object and remember it as read,
 * unless another thread did first (resolve_lock held).  false when it did. */
bool resolve_publish(struct collect *c, struct collect *p);
/* The same, the function table built but left to the caller to store
 * (resolve_store_table): *ret the table, or NULL when there is none to
 * store (no range, no memory, or read already: false then). */
bool resolve_publish_built(struct collect *c, struct range_table **ret);
/* The ranges collected, said (debug), outside the lock. */
void resolve_say_ranges(const struct collect *c, const char *path);
/* An object loaded after start-up, at the first allocation from it: read
 * from memory. */
void resolve_read_loaded(const struct link_map *lm, const char *key_name);

/* resolve_read.c */
/* The object holding code address a, read if it was not. */
void resolve_ensure_read(uintptr_t a);
/* The same for an object loaded at start-up and not read yet; lock-free
 * for the others. */
void resolve_read_if_pending(uintptr_t a);
/* One object loaded at start-up, prepared (resolve_init). */
void resolve_prepare_object(const struct loaded_object *so, uintptr_t self);
/* Whether each rule names a function loaded at start-up (before main). */
void resolve_check_rules(void);
/* The filter as the policy is armed (resolve_init). */
void resolve_mark_filter(const struct shim_state *st);
/* The entries of start-up objects l does not list, done with
 * (resolve_lock held). */
void resolve_forget_pending(const struct loaded_list *l);

#endif
