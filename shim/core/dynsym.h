/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dynsym.h - a code address by the object that holds it and by exported
 * symbol, async-signal-safe.
 */
#ifndef PMALLOC_DYNSYM_H
#define PMALLOC_DYNSYM_H

#include <dlfcn.h>             /* struct dl_find_object: includers define _GNU_SOURCE */
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ro.h"

struct fmt;

/* The program's path, read at start-up (kept in a read-only page of
 * dynsym.c's): the program has no name in the link map, and argv[0] may be
 * retitled.  Until it is set (and in libpmalloc.so), program_invocation_name. */
#define DYNSYM_PATH_MAX 256
/* Set once, at start-up: path copied into a page then made read-only; 0
 * or -errno when it could not be (the caller says so, unprotected). */
int dynsym_set_program(const char *path) __attribute__((warn_unused_result));
const char *dynsym_program(void);
/* The path (raw) of the object holding addr, its link map in *ret_lm and
 * its _dl_find_object() result in *dlfo; NULL when no object holds it. */
const char *dynsym_object(uintptr_t addr, const struct link_map **ret_lm, struct dl_find_object *dlfo);
/* "module+0xoffset" of addr into f (the object's base name, escaped or as
 * it is), "0x..." when no object holds it. */
void dynsym_location(struct fmt *f, uintptr_t addr, bool escaped);

/* "symbol+0xoff" of the exported function (.dynsym) holding addr into buf
 * (NUL-terminated, cut to size); false when none does. */
bool dynsym_name(uintptr_t addr, char *buf, size_t size);

/* A loaded object's .dynsym and its string table, where the loader mapped
 * them. */
struct dynsym_tables {
	const void *syms;          /* Elf*_Sym[n_syms] */
	uint32_t n_syms;           /* at most 1,000,000 */
	const char *strs;
	size_t strs_len;
	const uint32_t *gnu_hash;  /* DT_GNU_HASH, or NULL */
};
/* Found from the object's dynamic section (its link map's l_ld) and load
 * bias; false when it has none.  AS-safe. */
bool dynsym_tables(const void *dynamic, uintptr_t bias, struct dynsym_tables *ret);

/* This file's read-only page, for the one list (ro.h). */
extern const struct ro_span dynsym_ro_span;

#endif
