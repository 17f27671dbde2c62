/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symtab.h - function symbols of the objects loaded in this process: .symtab
 * where the object's file or its separate debug file has one (static
 * functions of an unstripped program count), else .dynsym.
 *
 * In two steps: symtab_open() finds the table and maps it, reading no
 * symbol (a few system calls per object); symtab_walk() reads it from the
 * mapping.  Both allocate (malloc) or open files: callers run them with
 * the shim's re-entrancy guard set, never in a signal handler.
 */
#ifndef PMALLOC_SYMTAB_H
#define PMALLOC_SYMTAB_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Called for each defined function symbol with its run-time address range;
 * a non-zero return stops the walk and is returned. */
typedef int (*symtab_fn)(void *ctx, const char *name, uintptr_t start, size_t size);

/* A symbol table and its string table, located: in a read-only mapping of
 * a file (the object's or its debug file's .symtab) or where the loader
 * mapped the object (.dynsym).  Zeroed: no symbols. */
struct symtab {
	const ElfW(Sym) *syms;
	size_t n_syms;
	const char *strs;           /* strs[strs_len - 1] is NUL */
	size_t strs_len;
	const void *map;            /* the file mapping to release, or NULL */
	size_t map_len;
	const uint32_t *gnu_hash;   /* .dynsym in memory: the loader's DT_GNU_HASH, or NULL */
};

/* Locate the function symbols of the object loaded from path with load
 * bias bias and program headers ph[phnum]: the .symtab of its debug file
 * found by build-id, else its own .symtab, else that of the debug file its
 * .gnu_debuglink names, else (with_loaded) its .dynsym in memory; a file
 * whose build-id is not the loaded object's is not used (the object's path
 * may name another file by now).  Opens and maps files; reads no symbol.
 * 0, or -errno with *ret zeroed.  Callers serialise it: it remembers the
 * debug folders it found missing. */
int symtab_open(const char *path, uintptr_t bias, const ElfW(Phdr) *ph, size_t phnum, bool with_loaded,
		struct symtab *ret);
/* The .dynsym of a loaded object, from its dynamic section (no file). */
int symtab_open_loaded(const ElfW(Dyn) *dyn, uintptr_t bias, struct symtab *ret);
/* A loaded object's dynamic section, from its program headers; NULL when
 * it has none. */
const ElfW(Dyn) *symtab_dynamic(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias);
void symtab_close(struct symtab *t);

/* A filter on the first k (1..4) characters of a name, hashed: it may let
 * through names it was not told of, never the reverse.  The walk's one test
 * for most symbols, before a call of fn. */
struct symtab_filter {
	unsigned k;
	uint32_t mask;              /* of the k bytes, read as a little-endian word */
	uint64_t bits[64];
};
/* Empty, for names that start with k or more characters the rules spell. */
void symtab_filter_clear(struct symtab_filter *f, unsigned k);
/* Let through names starting with prefix (at least f->k characters). */
void symtab_filter_add(struct symtab_filter *f, const char *prefix);

/* Whether one of texts[n] (lens[n] bytes each) occurs anywhere in t's
 * names (a name holding it, or two names' bytes across their NUL: a hint,
 * never a false "no").  n up to SYMTAB_TEXTS_MAX (more: true). */
#define SYMTAB_TEXTS_MAX 64
bool symtab_has_any(const struct symtab *t, const char *const *texts, const size_t *lens, size_t n);

/* Call fn for each defined function of t named name, found through the
 * loader's hash table (a few cache lines, where symtab_walk reads every
 * symbol: libc's 3,000 exported ones, some 50 us of a start-up).  The
 * same functions as symtab_walk passes fn under that name.  0, fn's
 * non-zero return, or -ENOTSUP when t has no hash table (a file's). */
int symtab_lookup(const struct symtab *t, uintptr_t bias, const char *name, symtab_fn fn, void *ctx);

/* Call fn for each defined function of t (whose filter lets its name
 * through, when filter is not NULL), at run-time addresses (bias added). */
int symtab_walk(const struct symtab *t, uintptr_t bias, const struct symtab_filter *filter, symtab_fn fn,
		void *ctx);

/* Open, walk every function, close: for the rare reader (learn mode's
 * flush) that has only the object's path and bias. */
int symtab_for_each_function(const char *path, uintptr_t bias, symtab_fn fn, void *ctx);

/* A build-id as lower-case hex, NUL-terminated, fits this. */
#define SYMTAB_BUILD_ID_MAX 129
/* The build-id of a loaded object, from its PT_NOTE segments in memory
 * (program headers ph[phnum], load bias bias); false when it has none. */
bool symtab_build_id(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, char *hex);

#endif
