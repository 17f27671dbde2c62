/*
 * symtab.c - reads function symbols from ELF files with libelf (see
 * symtab.h).  Allocates; never called from an allocator's fast path or a
 * signal handler.
 */
#define _GNU_SOURCE
#include "symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

static int walk_section(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uintptr_t bias,
			symtab_fn fn, void *ctx)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || sh->sh_entsize == 0)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		int type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_size == 0)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		int r = fn(ctx, name, bias + (uintptr_t)sym.st_value, (size_t)sym.st_size);
		if (r)
			return r;
	}
	return 0;
}

int symtab_for_each_function(const char *path, uintptr_t bias, symtab_fn fn, void *ctx)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = -ENOEXEC;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
		GElf_Shdr sh, symtab_sh, dynsym_sh;
		while ((scn = elf_nextscn(elf, scn))) {
			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type == SHT_SYMTAB) {
				symtab = scn;
				symtab_sh = sh;
			} else if (sh.sh_type == SHT_DYNSYM) {
				dynsym = scn;
				dynsym_sh = sh;
			}
		}
		if (symtab)
			r = walk_section(elf, symtab, &symtab_sh, bias, fn, ctx);
		else if (dynsym)
			r = walk_section(elf, dynsym, &dynsym_sh, bias, fn, ctx);
		else
			r = 0;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return r;
}
