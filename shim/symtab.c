/*
 * symtab.c - reads the function symbols of an ELF file (see symtab.h): the
 * section headers with pread, then .symtab and its string table from a
 * read-only mapping of the file.  A stripped file (only .dynsym) is looked
 * up in separate debug information first, as gdb does: by build-id under
 * /usr/lib/debug/.build-id/, then by .gnu_debuglink beside the file, in its
 * .debug/ folder and under /usr/lib/debug; a debug file counts only when
 * its build-id (or, lacking one, the CRC the link records) is the object's.
 * Also: the build-id of a loaded object, from its notes in memory.
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
#include <stdio.h>
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

#define DEBUG_ROOT "/usr/lib/debug"
#define ALIGN4(x) (((x) + 3) & ~(size_t)3)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An ELF file open and mapped read-only, with its section headers. */
struct elf_file {
	const char *image;
	size_t size;
	ElfW(Shdr) *sh;
	size_t n_sh;
};

static bool within(uint64_t off, uint64_t size, uint64_t file_size)
{
	return off <= file_size && size <= file_size - off;
}

static void elf_close(struct elf_file *f)
{
	if (f->image)
		os_unmap((void *)(uintptr_t)f->image, f->size);
	free(f->sh);
	*f = (struct elf_file){ 0 };
}

/* Open path: its header and section headers checked, the file mapped. */
static int elf_open(const char *path, struct elf_file *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	ElfW(Ehdr) eh;
	struct elf_file f = { 0 };
	int r = fstat(fd, &st) == 0 ? 0 : -errno;
	if (r == 0 && (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(eh)))
		r = -ENOEXEC;
	if (r == 0 && pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		r = -EIO;
	if (r == 0 && (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS_HERE ||
		       eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 ||
		       !within(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(ElfW(Shdr)), (uint64_t)st.st_size)))
		r = -ENOEXEC;
	if (r == 0) {
		f.size = (size_t)st.st_size;
		f.n_sh = eh.e_shnum;
		f.sh = malloc(f.n_sh * sizeof(ElfW(Shdr)));
		if (!f.sh)
			r = -ENOMEM;
	}
	if (r == 0) {
		size_t len = f.n_sh * sizeof(ElfW(Shdr));
		if (pread(fd, f.sh, len, (off_t)eh.e_shoff) != (ssize_t)len)
			r = -EIO;
	}
	if (r == 0) {
		const void *image;
		r = os_map_file(fd, f.size, &image);
		if (r == 0)
			f.image = image;
	}
	close(fd);
	if (r < 0) {
		elf_close(&f);
		return r;
	}
	*ret = f;
	return 0;
}

/* Section i's bytes, or NULL when it has none in the file or lies outside. */
static const char *section_data(const struct elf_file *f, size_t i)
{
	const ElfW(Shdr) *s = &f->sh[i];
	if (s->sh_type == SHT_NOBITS || !within(s->sh_offset, s->sh_size, f->size))
		return NULL;
	return f->image + s->sh_offset;
}

/* The section of type type, the first, or -1. */
static ssize_t find_section(const struct elf_file *f, uint32_t type)
{
	for (size_t i = 0; i < f->n_sh; i++)
		if (f->sh[i].sh_type == type)
			return (ssize_t)i;
	return -1;
}

/* The section named name, or -1 (names from the section-name table). */
static ssize_t find_named_section(const struct elf_file *f, const char *name)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)f->image;
	if (eh->e_shstrndx == SHN_UNDEF || eh->e_shstrndx >= f->n_sh)
		return -1;
	const char *names = section_data(f, eh->e_shstrndx);
	size_t len = f->sh[eh->e_shstrndx].sh_size;
	if (!names || len == 0 || names[len - 1] != '\0')
		return -1;
	for (size_t i = 0; i < f->n_sh; i++)
		if (f->sh[i].sh_name < len && strcmp(names + f->sh[i].sh_name, name) == 0)
			return (ssize_t)i;
	return -1;
}

/* The NT_GNU_BUILD_ID note among the notes at [p, p+len), as lower-case
 * hex in hex[len >= SYMTAB_BUILD_ID_MAX]; false when there is none. */
static bool note_build_id(const char *p, size_t len, char *hex)
{
	size_t off = 0;
	while (len - off >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		memcpy(&nh, p + off, sizeof(nh));
		off += sizeof(nh);
		size_t namesz = ALIGN4(nh.n_namesz), descsz = ALIGN4(nh.n_descsz);
		if (namesz > len - off || descsz > len - off - namesz)
			return false;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz * 2 < SYMTAB_BUILD_ID_MAX) {
			static const char digits[] = "0123456789abcdef";
			const unsigned char *d = (const unsigned char *)p + off + namesz;
			for (size_t i = 0; i < nh.n_descsz; i++) {
				hex[2 * i] = digits[d[i] >> 4];
				hex[2 * i + 1] = digits[d[i] & 15];
			}
			hex[2 * nh.n_descsz] = '\0';
			return true;
		}
		off += namesz + descsz;
	}
	return false;
}

static bool file_build_id(const struct elf_file *f, char *hex)
{
	for (size_t i = 0; i < f->n_sh; i++) {
		const char *d = f->sh[i].sh_type == SHT_NOTE ? section_data(f, i) : NULL;
		if (d && note_build_id(d, f->sh[i].sh_size, hex))
			return true;
	}
	return false;
}

bool symtab_build_id(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, char *hex)
{
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_NOTE &&
		    note_build_id((const char *)(bias + ph[i].p_vaddr), ph[i].p_memsz, hex))
			return true;
	return false;
}

/* The CRC-32 that .gnu_debuglink records (IEEE 802.3, reflected). */
static uint32_t crc32_of(const char *p, size_t len)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < len; i++) {
		c ^= (unsigned char)p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

/* Walk the .symtab of f with bias; -ENOENT when f has none. */
static int walk_symtab(const struct elf_file *f, uint32_t type, uintptr_t bias, symtab_fn fn, void *ctx)
{
	ssize_t i = find_section(f, type);
	if (i < 0)
		return -ENOENT;
	const ElfW(Shdr) *symsh = &f->sh[i];
	if (symsh->sh_entsize != sizeof(ElfW(Sym)) || symsh->sh_link >= f->n_sh)
		return -ENOEXEC;
	const ElfW(Sym) *syms = (const void *)section_data(f, (size_t)i);
	const char *strs = f->sh[symsh->sh_link].sh_type == SHT_STRTAB ? section_data(f, symsh->sh_link) : NULL;
	size_t n = symsh->sh_size / sizeof(ElfW(Sym)), strsize = f->sh[symsh->sh_link].sh_size;
	if (!syms || !strs || strsize == 0 || strs[strsize - 1] != '\0')
		return -ENOEXEC;
	for (size_t k = 0; k < n; k++) {
		const ElfW(Sym) *s = &syms[k];
		int t = ELF64_ST_TYPE(s->st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF || s->st_size == 0 ||
		    s->st_name == 0 || s->st_name >= strsize)
			continue;
		int r = fn(ctx, strs + s->st_name, bias + (uintptr_t)s->st_value, (size_t)s->st_size);
		if (r)
			return r;
	}
	return 0;
}

/* A debug file for obj (at obj_path) that holds a .symtab and is obj's:
 * same build-id, or the CRC the debug link asks for. */
static bool debug_file_open(const char *path, const char *want_id, bool check_crc, uint32_t crc,
			    struct elf_file *ret)
{
	struct elf_file d;
	if (elf_open(path, &d) < 0)
		return false;
	char id[SYMTAB_BUILD_ID_MAX];
	bool ok = find_section(&d, SHT_SYMTAB) >= 0;
	if (ok && want_id)
		ok = file_build_id(&d, id) && strcmp(id, want_id) == 0;
	if (ok && !want_id && check_crc)
		ok = crc32_of(d.image, d.size) == crc;
	if (!ok) {
		elf_close(&d);
		return false;
	}
	*ret = d;
	return true;
}

static bool find_debug_file(const struct elf_file *obj, const char *obj_path, struct elf_file *ret)
{
	char id[SYMTAB_BUILD_ID_MAX], path[4096];
	bool have_id = file_build_id(obj, id);
	if (have_id && strlen(id) > 2) {
		snprintf(path, sizeof(path), DEBUG_ROOT "/.build-id/%.2s/%s.debug", id, id + 2);
		if (debug_file_open(path, id, false, 0, ret))
			return true;
	}
	ssize_t li = find_named_section(obj, ".gnu_debuglink");
	const char *link = li >= 0 ? section_data(obj, (size_t)li) : NULL;
	size_t link_len = li >= 0 ? obj->sh[li].sh_size : 0;
	size_t name_len = link ? strnlen(link, link_len) : link_len;
	if (!link || name_len == 0 || name_len >= 256 || memchr(link, '/', name_len) ||
	    ALIGN4(name_len + 1) + 4 > link_len)
		return false;
	uint32_t crc;
	memcpy(&crc, link + ALIGN4(name_len + 1), sizeof(crc));
	const char *slash = strrchr(obj_path, '/');
	if (!slash)
		return false;
	int dir_len = (int)(slash - obj_path);
	static const char *const forms[] = { "%.*s/%.*s", "%.*s/.debug/%.*s", DEBUG_ROOT "%.*s/%.*s" };
	for (size_t i = 0; i < ARRAY_LEN(forms); i++) {
		int n = snprintf(path, sizeof(path), forms[i], dir_len, obj_path, (int)name_len, link);
		if (n <= 0 || (size_t)n >= sizeof(path) || strcmp(path, obj_path) == 0)
			continue;
		if (debug_file_open(path, have_id ? id : NULL, true, crc, ret))
			return true;
	}
	return false;
}

int symtab_for_each_function(const char *path, uintptr_t bias, symtab_fn fn, void *ctx)
{
	struct elf_file f;
	int r = elf_open(path, &f);
	if (r < 0)
		return r;
	r = walk_symtab(&f, SHT_SYMTAB, bias, fn, ctx);
	if (r == -ENOENT) {
		struct elf_file d;
		if (find_debug_file(&f, path, &d)) {
			r = walk_symtab(&d, SHT_SYMTAB, bias, fn, ctx);
			elf_close(&d);
		}
	}
	if (r == -ENOENT || r == -ENOEXEC)
		r = walk_symtab(&f, SHT_DYNSYM, bias, fn, ctx);
	elf_close(&f);
	return r == -ENOENT ? 0 : r;
}
