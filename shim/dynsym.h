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

/* The number of symbols in a loaded object's .dynsym, from DT_HASH (nchain)
 * or DT_GNU_HASH (the highest symbol index any bucket chain reaches, plus
 * one), at most 1,000,000; 0 without either.  AS-safe. */
uint32_t dynsym_count(const uint32_t *hash, const uint32_t *gnu);

#endif
