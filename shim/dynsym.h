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

#endif
