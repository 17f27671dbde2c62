/*
 * symtab.h - function symbols of the objects loaded in this process, read
 * from their ELF files: .symtab where the file has one (static functions of
 * an unstripped program count), else .dynsym.
 *
 * Start-up time only: it allocates (malloc) and opens
 * files, so callers run it with the shim's re-entrancy guard set and no shim
 * lock held that an allocation could need.
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

/* Walk the function symbols of the ELF file at path, loaded with bias:
 * .symtab, else that of its separate debug file, else .dynsym. */
int symtab_for_each_function(const char *path, uintptr_t bias, symtab_fn fn, void *ctx);

/* A build-id as lower-case hex, NUL-terminated, fits this. */
#define SYMTAB_BUILD_ID_MAX 129
/* The build-id of a loaded object, from its PT_NOTE segments in memory
 * (program headers ph[phnum], load bias bias); false when it has none. */
bool symtab_build_id(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, char *hex);

#endif
