/*
 * symtab.c - reads the function symbols of an ELF file (see symtab.h): the
 * section headers with pread, then .symtab (or .dynsym) and its string
 * table from a read-only mapping of the file.
 *
 * Why by hand and not with libelf: this runs in every process a policy arms,
 * before main.  libelf brought three more libraries into every preloaded
 * process (libelf, libz, libzstd: their loading and relocation cost each
 * process, armed or not) and a call per symbol; reading the two tables
 * directly is a loop over an array.
 *
 * The file is not trusted: every offset, size and name index is checked
 * against the file's size before use, and a string table whose last byte is
 * not NUL is refused, so every name read from it is terminated.
 * Allocates; never called from an allocator's fast path or a signal handler.
 */
#define _GNU_SOURCE
#include "symtab.h"
#include "os.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symbols are read at the process's own word size only. */
#if UINTPTR_MAX > 0xffffffffu
#define ELFCLASS_HERE ELFCLASS64
#else
#define ELFCLASS_HERE ELFCLASS32
#endif

static bool within(uint64_t off, uint64_t size, uint64_t file_size)
{
	return off <= file_size && size <= file_size - off;
}

/* The section headers of the file at fd; *ret freed by the caller. */
static int read_sections(int fd, uint64_t file_size, ElfW(Shdr) **ret, size_t *ret_n)
{
	ElfW(Ehdr) eh;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -ENOEXEC;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS_HERE ||
	    eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0)
		return -ENOEXEC;
	size_t len = (size_t)eh.e_shnum * sizeof(ElfW(Shdr));
	if (!within(eh.e_shoff, len, file_size))
		return -ENOEXEC;
	ElfW(Shdr) *sh = malloc(len);
	if (!sh)
		return -ENOMEM;
	if (pread(fd, sh, len, (off_t)eh.e_shoff) != (ssize_t)len) {
		free(sh);
		return -EIO;
	}
	*ret = sh;
	*ret_n = eh.e_shnum;
	return 0;
}

/* The symbol table to read: .symtab when present (static functions count),
 * else .dynsym; its string table checked.  -ENOENT when there is neither. */
static int pick_table(const ElfW(Shdr) *sh, size_t n, uint64_t file_size, const ElfW(Shdr) **ret_sym,
		      const ElfW(Shdr) **ret_str)
{
	const ElfW(Shdr) *sym = NULL;
	for (size_t i = 0; i < n; i++) {
		if (sh[i].sh_type == SHT_SYMTAB) {
			sym = &sh[i];
			break;
		}
		if (sh[i].sh_type == SHT_DYNSYM)
			sym = &sh[i];
	}
	if (!sym)
		return -ENOENT;
	if (sym->sh_entsize != sizeof(ElfW(Sym)) || sym->sh_link >= n ||
	    !within(sym->sh_offset, sym->sh_size, file_size))
		return -ENOEXEC;
	const ElfW(Shdr) *str = &sh[sym->sh_link];
	if (str->sh_type != SHT_STRTAB || str->sh_size == 0 ||
	    !within(str->sh_offset, str->sh_size, file_size))
		return -ENOEXEC;
	*ret_sym = sym;
	*ret_str = str;
	return 0;
}

static int walk(const char *image, const ElfW(Shdr) *symsh, const ElfW(Shdr) *strsh, uintptr_t bias,
		symtab_fn fn, void *ctx)
{
	const ElfW(Sym) *syms = (const ElfW(Sym) *)(const void *)(image + symsh->sh_offset);
	const char *strs = image + strsh->sh_offset;
	size_t n = symsh->sh_size / sizeof(ElfW(Sym)), strsize = strsh->sh_size;
	if (strs[strsize - 1] != '\0')
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		const ElfW(Sym) *s = &syms[i];
		int type = ELF64_ST_TYPE(s->st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF ||
		    s->st_size == 0 || s->st_name == 0 || s->st_name >= strsize)
			continue;
		int r = fn(ctx, strs + s->st_name, bias + (uintptr_t)s->st_value, (size_t)s->st_size);
		if (r)
			return r;
	}
	return 0;
}

int symtab_for_each_function(const char *path, uintptr_t bias, symtab_fn fn, void *ctx)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) == 0 ? 0 : -errno;
	if (r == 0 && (!S_ISREG(st.st_mode) || st.st_size <= 0))
		r = -ENOEXEC;
	ElfW(Shdr) *sh = NULL;
	size_t n = 0;
	if (r == 0)
		r = read_sections(fd, (uint64_t)st.st_size, &sh, &n);
	const ElfW(Shdr) *symsh = NULL, *strsh = NULL;
	if (r == 0)
		r = pick_table(sh, n, (uint64_t)st.st_size, &symsh, &strsh);
	const void *image = NULL;
	if (r == 0)
		r = os_map_file(fd, (size_t)st.st_size, &image);
	close(fd);
	if (r == 0) {
		r = walk(image, symsh, strsh, bias, fn, ctx);
		os_unmap((void *)(uintptr_t)image, (size_t)st.st_size);
	}
	free(sh);
	return r == -ENOENT ? 0 : r;
}
