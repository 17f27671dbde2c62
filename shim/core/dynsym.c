/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dynsym.c - where a code address is: the object that holds it and
 * "module+0xoff" (dynsym_object, dynsym_location), and "symbol+0xoff"
 * from the dynamic symbol table (.dynsym) of that object, for the
 * violation record (pmallocd resolves the rest from symbol files).
 *
 * Async-signal-safe: runs in the fault handler.  No allocation, no lock,
 * no system call (but the one mprotect of dynsym_set_program, at
 * start-up), no file: _dl_find_object() (AS-safe in glibc) names the
 * object, and its dynamic section, symbol and string tables are read where
 * the loader mapped them.  Only exported functions are found (.dynsym);
 * static functions and stripped programs without exports give nothing, as
 * the caller then says only module+offset.  Cost: a linear walk of the
 * object's symbols, once per report.
 */
#define _GNU_SOURCE
#include "dynsym.h"
#include "fmt.h"
#include "os.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#define DYNSYM_MAX 1000000u

/* The ELF types of this process's word size (spelled out: cppcheck cannot
 * read link.h's ElfW()). */
#if UINTPTR_MAX == 0xffffffffffffffffu
typedef Elf64_Dyn dyn_t;
typedef Elf64_Sym sym_t;
typedef Elf64_Addr addr_t;
#else
typedef Elf32_Dyn dyn_t;
typedef Elf32_Sym sym_t;
typedef Elf32_Addr addr_t;
#endif          /* bound on a walk a corrupt table could make endless */

/* The program's path for reports, copied once at start-up into a page of
 * its own made read-only then: a pointer to it in writable data, forged,
 * would make the fault handler fault before its report is written. */
static union {
	char path[DYNSYM_PATH_MAX];
	unsigned char page[RO_PAGE];
} program __attribute__((aligned(RO_PAGE)));
const struct ro_span dynsym_ro_span = { &program, sizeof(program) };   /* ro.h: init.c lists it */

int dynsym_set_program(const char *path)
{
	size_t n = path ? strnlen(path, DYNSYM_PATH_MAX - 1) : 0;
	memcpy(program.path, path ? path : "", n);
	program.path[n] = '\0';
	return os_protect_ro(&program, sizeof(program));
}

const char *dynsym_program(void)
{
	return program.path[0] ? program.path : program_invocation_name;
}

const char *dynsym_object(uintptr_t addr, const struct link_map **ret_lm, struct dl_find_object *dlfo)
{
	if (_dl_find_object((void *)addr, dlfo) != 0 || !dlfo->dlfo_link_map)
		return NULL;
	*ret_lm = dlfo->dlfo_link_map;
	const char *name = (*ret_lm)->l_name;
	return name && *name ? name : dynsym_program();
}

void dynsym_location(struct fmt *f, uintptr_t addr, bool escaped)
{
	struct dl_find_object dlfo;
	const struct link_map *lm;
	const char *name = dynsym_object(addr, &lm, &dlfo), *slash = name ? strrchr(name, '/') : NULL;
	if (!name) {
		fmt_hex(f, addr);
		return;
	}
	if (escaped)
		fmt_escaped(f, slash ? slash + 1 : name);
	else
		fmt_str(f, slash ? slash + 1 : name);
	fmt_str(f, "+");
	fmt_hex(f, addr - lm->l_addr);
}

/* A d_ptr of the dynamic section: glibc relocates most in place, but not
 * every object's (the vDSO's stay relative). */
static uintptr_t dyn_ptr(uintptr_t bias, addr_t p)
{
	return p < bias ? bias + p : p;
}

/* The number of symbols, from DT_HASH (nchain) or DT_GNU_HASH (the
 * highest symbol index any bucket chain reaches, plus one), at most
 * DYNSYM_MAX; 0 without either. */
static uint32_t dynsym_count(const uint32_t *hash, const uint32_t *gnu)
{
	uint32_t n = 0;
	if (hash) {
		n = hash[1];
	} else if (gnu) {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
		const uint32_t *buckets = gnu + 4 + bloom * (sizeof(addr_t) / 4);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t last = 0;
		for (uint32_t i = 0; i < nbuckets; i++)
			if (buckets[i] > last)
				last = buckets[i];
		if (last < symoffset)
			return symoffset < DYNSYM_MAX ? symoffset : DYNSYM_MAX;
		for (uint32_t k = 0; k < DYNSYM_MAX && !(chain[last - symoffset] & 1); k++)
			last++;
		n = last + 1;
	}
	return n < DYNSYM_MAX ? n : DYNSYM_MAX;
}

bool dynsym_tables(const void *dynamic, uintptr_t bias, struct dynsym_tables *ret)
{
	const void *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *hash = NULL, *gnu = NULL;
	size_t strsz = 0;
	for (const dyn_t *d = dynamic; d && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const void *)dyn_ptr(bias, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_ptr(bias, d->d_un.d_ptr); break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_HASH: hash = (const uint32_t *)dyn_ptr(bias, d->d_un.d_ptr); break;
		case DT_GNU_HASH: gnu = (const uint32_t *)dyn_ptr(bias, d->d_un.d_ptr); break;
		default: break;
		}
	}
	if (!symtab || !strtab || strsz == 0)
		return false;
	*ret = (struct dynsym_tables){ symtab, dynsym_count(hash, gnu), strtab, strsz, gnu };
	return true;
}

bool dynsym_name(uintptr_t addr, char *buf, size_t size)
{
	struct dl_find_object dlfo;
	struct dynsym_tables t;
	if (size == 0 || _dl_find_object((void *)addr, &dlfo) != 0 || !dlfo.dlfo_link_map ||
	    !dynsym_tables(dlfo.dlfo_link_map->l_ld, dlfo.dlfo_link_map->l_addr, &t))
		return false;
	const struct link_map *lm = dlfo.dlfo_link_map;
	const sym_t *symtab = t.syms;
	const sym_t *best = NULL;
	for (uint32_t i = 1; i < t.n_syms; i++) {
		const sym_t *s = &symtab[i];
		if ((s->st_info & 0xf) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
		    s->st_name >= t.strs_len)
			continue;
		uintptr_t start = lm->l_addr + s->st_value;
		if (addr >= start && addr - start < (s->st_size ? s->st_size : 1) &&
		    (!best || s->st_value > best->st_value))
			best = s;
	}
	if (!best)
		return false;
	struct fmt f;
	fmt_init(&f, buf, size);
	const char *name = t.strs + best->st_name;
	fmt_str(&f, name);
	fmt_str(&f, "+");
	fmt_hex(&f, addr - (lm->l_addr + best->st_value));
	fmt_cstr(&f);
	return true;
}
