/*
 * dynsym.h - a code address by exported symbol, async-signal-safe.
 */
#ifndef PMALLOC_DYNSYM_H
#define PMALLOC_DYNSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
};
/* Found from the object's dynamic section (its link map's l_ld) and load
 * bias; false when it has none.  AS-safe. */
bool dynsym_tables(const void *dynamic, uintptr_t bias, struct dynsym_tables *ret);

#endif
