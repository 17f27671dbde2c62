/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symtab.c - finds and reads the function symbols of an ELF object (see
 * symtab.h): the section headers and the few small sections it needs
 * (notes, .gnu_debuglink, section names) in two preads (the file's first
 * 4 KiB; the section headers with the 4 KiB before them), then .symtab and
 * its string table as one read-only mapping of just their bytes, kept until
 * the walk.  Separate debug information is looked up as gdb does: by build-id
 * under /usr/lib/debug/.build-id/ (first: the object's own file then need
 * not be opened at all), then by .gnu_debuglink beside the file, in its
 * .debug/ folder and under /usr/lib/debug; a debug file counts only when
 * its build-id (or, lacking one, the CRC the link records) is the object's.
 * An object with neither is read from its .dynsym where the loader mapped
 * it.  Also: the build-id of a loaded object, from its notes in memory.
 *
 * A file is checked to be the loaded object (same build-id) before its
 * tables are used: it is opened when the object first allocates, perhaps
 * long after it was loaded.
 *
 * Cost: locating is a few system calls per object and touches no symbol;
 * the walk is one pass over the table, about 22 instructions per function
 * symbol (its type, its name's place, a load, a multiply and a bit test of
 * the filter) and a call only for the few names the filter lets through:
 * libc's debug file, 10,000 symbols in 370 KB, some 200,000 instructions,
 * much of its time spent waiting for those bytes.
 * A file truncated while mapped (not replaced: package managers rename)
 * would fault the walk, as it would the object's own code.
 *
 * Why by hand and not with libelf: this runs in every process a policy arms,
 * at its first allocations.  libelf brought three more libraries into every preloaded
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
#include "common.h"
#include "dynsym.h"
#include "heap.h"
#include "os.h"

#include <elf.h>
#include <endian.h>
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

/* Bytes read ahead with the file's header, and before its section headers:
 * the small sections a lookup needs (notes near the start; section names
 * and .gnu_debuglink just before the section headers, where linkers and
 * objcopy put them) then cost no read of their own. */
#define AHEAD 4096

/* An ELF file open, with its section headers, and the bytes around them. */
struct elf_file {
	int fd;
	int slot;                   /* its buffers' in elf_bufs, or -1: the heap's */
	size_t size;
	ElfW(Shdr) *sh;
	size_t n_sh;
	size_t shstrndx;
	char *head;                 /* the first head_len bytes */
	size_t head_len;
	char *tail;                 /* tail_len bytes from tail_off, through the section headers */
	uint64_t tail_off;
	size_t tail_len;
};

static bool within(uint64_t off, uint64_t size, uint64_t file_size)
{
	return off <= file_size && size <= file_size - off;
}

/* Buffers for the ELF files open at once (an object's file, and its debug
 * file inside locate()), in .bss: from the heap, the 4 KB head and the
 * section headers' 6 KB freed at each object read were holes at the bottom
 * of a server's heap, which its request buffers then split and merged at
 * every request (scratch.c tells the cost).  A slot is taken by its flag;
 * a file that does not fit, or a third open at once (another thread),
 * has the heap's. */
#define ELF_BUF 16384
static struct {
	atomic_flag taken;
	char bytes[ELF_BUF] __attribute__((aligned(16)));
} elf_bufs[2] = { { .taken = ATOMIC_FLAG_INIT }, { .taken = ATOMIC_FLAG_INIT } };

static int elf_slot_take(void)
{
	for (int i = 0; i < 2; i++)
		if (!atomic_flag_test_and_set(&elf_bufs[i].taken))
			return i;
	return -1;
}

/* n bytes at *at of f's slot, or the heap's when they do not fit. */
static void *elf_buf(const struct elf_file *f, size_t *at, size_t n)
{
	if (f->slot >= 0 && n <= ELF_BUF - *at) {
		void *p = elf_bufs[f->slot].bytes + *at;
		*at = ALIGN_UP(*at + n, 16);
		if (*at > ELF_BUF)
			*at = ELF_BUF;
		return p;
	}
	return heap_malloc(n);
}

static void elf_buf_free(const struct elf_file *f, void *p)
{
	if (f->slot < 0 || (char *)p < elf_bufs[f->slot].bytes || (char *)p >= elf_bufs[f->slot].bytes + ELF_BUF)
		heap_free(p);
}

static void elf_close(struct elf_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	elf_buf_free(f, f->sh);
	elf_buf_free(f, f->head);
	elf_buf_free(f, f->tail);
	if (f->slot >= 0)
		atomic_flag_clear(&elf_bufs[f->slot].taken);
	*f = (struct elf_file){ .fd = -1, .slot = -1 };
}

/* Open path: its header and section headers read and checked, in two reads. */
static int elf_open(const char *path, struct elf_file *ret)
{
	struct elf_file f = { .fd = open(path, O_RDONLY | O_CLOEXEC), .slot = -1 };
	if (f.fd < 0)
		return -errno;
	f.slot = elf_slot_take();
	size_t at = 0;
	struct stat st;
	ElfW(Ehdr) eh;
	int r = fstat(f.fd, &st) == 0 ? 0 : -errno;
	if (r == 0 && (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(eh)))
		r = -ENOEXEC;
	if (r == 0) {
		f.size = (size_t)st.st_size;
		f.head_len = f.size < AHEAD ? f.size : AHEAD;
		f.head = elf_buf(&f, &at, f.head_len);
		r = !f.head ? -ENOMEM : os_pread(f.fd, f.head, f.head_len, 0) != (ssize_t)f.head_len ? -EIO : 0;
	}
	if (r == 0) {
		memcpy(&eh, f.head, sizeof(eh));
		if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS_HERE ||
		    eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 ||
		    !within(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(ElfW(Shdr)), (uint64_t)st.st_size))
			r = -ENOEXEC;
	}
	if (r == 0) {
		size_t len = (size_t)eh.e_shnum * sizeof(ElfW(Shdr));
		f.n_sh = eh.e_shnum;
		f.shstrndx = eh.e_shstrndx;
		f.tail_off = eh.e_shoff > AHEAD ? eh.e_shoff - AHEAD : 0;
		f.tail_len = (size_t)(eh.e_shoff - f.tail_off) + len;
		f.tail = elf_buf(&f, &at, f.tail_len);
		f.sh = elf_buf(&f, &at, len);
		if (!f.tail || !f.sh)
			r = -ENOMEM;
		else if (os_pread(f.fd, f.tail, f.tail_len, f.tail_off) != (ssize_t)f.tail_len)
			r = -EIO;
		else
			memcpy(f.sh, f.tail + (eh.e_shoff - f.tail_off), len);
	}
	if (r < 0) {
		elf_close(&f);
		return r;
	}
	*ret = f;
	return 0;
}

/* Section i's bytes into a fresh buffer (NUL-terminated past its size), or
 * NULL when it has none in the file, lies outside it or is over max bytes.
 * From the bytes read with the headers when it lies there. */
static char *section_read(const struct elf_file *f, size_t i, size_t max)
{
	const ElfW(Shdr) *s = &f->sh[i];
	if (s->sh_type == SHT_NOBITS || s->sh_size > max || !within(s->sh_offset, s->sh_size, f->size))
		return NULL;
	char *p = heap_malloc(s->sh_size + 1);
	if (!p)
		return NULL;
	if (within(s->sh_offset, s->sh_size, f->head_len)) {
		memcpy(p, f->head + s->sh_offset, s->sh_size);
	} else if (s->sh_offset >= f->tail_off && within(s->sh_offset - f->tail_off, s->sh_size, f->tail_len)) {
		memcpy(p, f->tail + (s->sh_offset - f->tail_off), s->sh_size);
	} else if (os_pread(f->fd, p, s->sh_size, s->sh_offset) != (ssize_t)s->sh_size) {
		heap_free(p);
		return NULL;
	}
	p[s->sh_size] = '\0';
	return p;
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
	if (f->shstrndx == SHN_UNDEF || f->shstrndx >= f->n_sh)
		return -1;
	size_t len = f->sh[f->shstrndx].sh_size;
	char *names = section_read(f, f->shstrndx, 1 << 20);
	ssize_t found = -1;
	for (size_t i = 0; names && found < 0 && i < f->n_sh; i++)
		if (f->sh[i].sh_name < len && strcmp(names + f->sh[i].sh_name, name) == 0)
			found = (ssize_t)i;
	heap_free(names);
	return found;
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
	bool found = false;
	for (size_t i = 0; !found && i < f->n_sh; i++) {
		if (f->sh[i].sh_type != SHT_NOTE)
			continue;
		char *d = section_read(f, i, 1 << 16);
		found = d && note_build_id(d, f->sh[i].sh_size, hex);
		heap_free(d);
	}
	return found;
}

bool symtab_build_id(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias, char *hex)
{
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_NOTE &&
		    note_build_id((const char *)(bias + ph[i].p_vaddr), ph[i].p_memsz, hex))
			return true;
	return false;
}

/* The CRC-32 that .gnu_debuglink records (IEEE 802.3, reflected), of the
 * whole file f; false when it cannot be read. */
static bool file_crc32(const struct elf_file *f, uint32_t *ret)
{
	const void *image;
	if (os_map_file(f->fd, 0, f->size, &image) < 0)
		return false;
	const unsigned char *p = image;
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < f->size; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	os_unmap((void *)(uintptr_t)image, f->size);
	*ret = ~c;
	return true;
}

/* Map the symbol table of type type of f and its string table: one
 * read-only mapping of the bytes from the first to the last of the two.
 * -ENOENT when f has no such table. */
static int map_table(const struct elf_file *f, uint32_t type, struct symtab *ret)
{
	ssize_t i = find_section(f, type);
	if (i < 0)
		return -ENOENT;
	const ElfW(Shdr) *ss = &f->sh[i];
	if (ss->sh_entsize != sizeof(ElfW(Sym)) || ss->sh_link >= f->n_sh)
		return -ENOEXEC;
	const ElfW(Shdr) *st = &f->sh[ss->sh_link];
	if (st->sh_type != SHT_STRTAB || st->sh_size == 0 || ss->sh_offset % _Alignof(ElfW(Sym)) != 0 ||
	    !within(ss->sh_offset, ss->sh_size, f->size) || !within(st->sh_offset, st->sh_size, f->size))
		return -ENOEXEC;
	uint64_t lo = (ss->sh_offset < st->sh_offset ? ss->sh_offset : st->sh_offset) & ~(uint64_t)(os_page_size - 1);
	uint64_t end_sym = ss->sh_offset + ss->sh_size, end_str = st->sh_offset + st->sh_size;
	size_t len = (size_t)((end_sym > end_str ? end_sym : end_str) - lo);
	const void *map;
	int r = os_map_file(f->fd, lo, len, &map);
	if (r < 0)
		return r;
	const char *base = map;
	struct symtab t = {
		.syms = (const void *)(base + (ss->sh_offset - lo)), .n_syms = ss->sh_size / sizeof(ElfW(Sym)),
		.strs = base + (st->sh_offset - lo), .strs_len = st->sh_size, .map = map, .map_len = len,
	};
	if (t.strs[t.strs_len - 1] != '\0') {
		symtab_close(&t);
		return -ENOEXEC;
	}
	*ret = t;
	return 0;
}

/* The .symtab of the debug file at path, when it is the object's: same
 * build-id (want_id), or lacking one the CRC the debug link asks for. */
static bool debug_file_table(const char *path, const char *want_id, bool check_crc, uint32_t crc,
			     struct symtab *ret)
{
	struct elf_file d;
	if (elf_open(path, &d) < 0)
		return false;
	char id[SYMTAB_BUILD_ID_MAX];
	uint32_t got;
	bool ok = find_section(&d, SHT_SYMTAB) >= 0;
	if (ok && want_id)
		ok = file_build_id(&d, id) && strcmp(id, want_id) == 0;
	if (ok && !want_id && check_crc)
		ok = file_crc32(&d, &got) && got == crc;
	ok = ok && map_table(&d, SHT_SYMTAB, ret) == 0;
	elf_close(&d);
	return ok;
}

static bool by_build_id(const char *id, struct symtab *ret)
{
	char path[4096];
	if (strlen(id) <= 2)
		return false;
	snprintf(path, sizeof(path), DEBUG_ROOT "/.build-id/%.2s/%s.debug", id, id + 2);
	return debug_file_table(path, id, false, 0, ret);
}

/* Folders found missing while looking for debug links, so that the next
 * object in the same folder does not look again (a process's libraries
 * share a few folders, and a failed open costs microseconds).  Only
 * symtab_open() uses it, whose callers serialise it. */
#define ABSENT_MAX 16
static char absent[ABSENT_MAX][256];
static size_t n_absent;

/* Whether the folder of path may hold it: false when it is known missing,
 * or found missing now (then remembered). */
static bool folder_may_exist(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	if (!slash || len >= sizeof(absent[0]))
		return true;
	for (size_t i = 0; i < n_absent; i++)
		if (strncmp(absent[i], path, len) == 0 && absent[i][len] == '\0')
			return false;
	char dir[sizeof(absent[0])];
	memcpy(dir, path, len);
	dir[len] = '\0';
	if (access(dir, F_OK) == 0 || errno != ENOENT)
		return true;
	if (n_absent < ABSENT_MAX)
		memcpy(absent[n_absent++], dir, len + 1);
	return false;
}

/* The debug file obj's .gnu_debuglink names, beside it, in its .debug/
 * folder or under /usr/lib/debug (those two folders, when remember_absent,
 * looked at once per process). */
static bool by_debug_link(const struct elf_file *obj, const char *obj_path, const char *id, bool remember_absent,
			  struct symtab *ret)
{
	ssize_t li = find_named_section(obj, ".gnu_debuglink");
	char *link = li >= 0 ? section_read(obj, (size_t)li, 4096) : NULL;
	size_t link_len = li >= 0 ? obj->sh[li].sh_size : 0;
	size_t name_len = link ? strnlen(link, link_len) : 0;
	const char *slash = strrchr(obj_path, '/');
	bool found = false;
	if (link && name_len > 0 && name_len < 256 && !memchr(link, '/', name_len) &&
	    ALIGN4(name_len + 1) + 4 <= link_len && slash) {
		uint32_t crc;
		memcpy(&crc, link + ALIGN4(name_len + 1), sizeof(crc));
		int dir_len = (int)(slash - obj_path);
		static const char *const forms[] = { "%.*s/%.*s", "%.*s/.debug/%.*s", DEBUG_ROOT "%.*s/%.*s" };
		char path[4096];
		for (size_t i = 0; !found && i < ARRAY_LEN(forms); i++) {
			int n = snprintf(path, sizeof(path), forms[i], dir_len, obj_path, (int)name_len, link);
			if (n > 0 && (size_t)n < sizeof(path) && strcmp(path, obj_path) != 0 &&
			    (i == 0 || !remember_absent || folder_may_exist(path)))
				found = debug_file_table(path, id, true, crc, ret);
		}
	}
	heap_free(link);
	return found;
}

/* The .symtab of path or of its debug file (id: the object's build-id, or
 * NULL to read it from the file); with_dynsym, the file's .dynsym lacking
 * both.  -ENOENT when there is none of these.  start_up: symtab_open(). */
static int locate(const char *path, const char *id, bool with_dynsym, bool start_up, struct symtab *ret)
{
	if (id && by_build_id(id, ret))
		return 0;
	struct elf_file f;
	int r = elf_open(path, &f);
	if (r < 0)
		return r;
	char file_id[SYMTAB_BUILD_ID_MAX];
	bool have_file_id = file_build_id(&f, file_id);
	/* Opened long after the object was loaded: the file at its path may no
	 * longer be it (an upgrade renamed another into place; a chroot). */
	if (id && (!have_file_id || strcmp(file_id, id) != 0)) {
		elf_close(&f);
		return -ESTALE;
	}
	r = map_table(&f, SHT_SYMTAB, ret);
	if (r < 0 && !id && have_file_id) {
		id = file_id;
		if (by_build_id(id, ret))
			r = 0;
	}
	if (r < 0 && by_debug_link(&f, path, id, start_up, ret))
		r = 0;
	if (r < 0 && with_dynsym)
		r = map_table(&f, SHT_DYNSYM, ret);
	elf_close(&f);
	return r;
}

const ElfW(Dyn) *symtab_dynamic(const ElfW(Phdr) *ph, size_t phnum, uintptr_t bias)
{
	const ElfW(Dyn) *dyn = NULL;
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(bias + ph[i].p_vaddr);
	return dyn;
}

int symtab_open(const char *path, uintptr_t bias, const ElfW(Phdr) *ph, size_t phnum, bool with_loaded,
		struct symtab *ret)
{
	*ret = (struct symtab){ 0 };
	char id[SYMTAB_BUILD_ID_MAX];
	const ElfW(Dyn) *dyn = symtab_dynamic(ph, phnum, bias);
	int r = locate(path, symtab_build_id(ph, phnum, bias, id) ? id : NULL, !dyn, true, ret);
	if (r < 0 && dyn && with_loaded)
		r = symtab_open_loaded(dyn, bias, ret);
	return r;
}

int symtab_open_loaded(const ElfW(Dyn) *dyn, uintptr_t bias, struct symtab *ret)
{
	*ret = (struct symtab){ 0 };
	struct dynsym_tables d;
	if (!dynsym_tables(dyn, bias, &d) || d.strs[d.strs_len - 1] != '\0')
		return -ENOENT;
	*ret = (struct symtab){ .syms = d.syms, .n_syms = d.n_syms, .strs = d.strs, .strs_len = d.strs_len,
				.gnu_hash = d.gnu_hash };
	return 0;
}

void symtab_close(struct symtab *t)
{
	if (t->map)
		os_unmap((void *)(uintptr_t)t->map, t->map_len);
	*t = (struct symtab){ 0 };
}

/* The bytes of symbol names from the least to the most common (counted over
 * the tables of libc, libm, python3, redis and nginx); a byte not listed is
 * rarer still. */
static const char byte_rank[] = "JQZ97VK-5XWYH3q0jBz86UD4M1FNALO2RETGvwCSkPb.Ixhyugfmpdloicasnrte_";

/* The place in text[len] of its rarest byte (byte_rank). */
static size_t rarest(const char *text, size_t len)
{
	size_t pick = 0, best = sizeof(byte_rank);
	for (size_t i = 0; i < len; i++) {
		const char *r = strchr(byte_rank, text[i]);
		size_t rank = r && text[i] ? (size_t)(r - byte_rank) + 1 : 0;
		if (rank < best) {
			best = rank;
			pick = i;
		}
	}
	return pick;
}

bool symtab_has_any(const struct symtab *t, const char *const *texts, const size_t *lens, size_t n)
{
	/* memchr (vectorised, 32 bytes a step) for a text's rarest byte, and
	 * a compare at each of its few occurrences: over libc's debug names,
	 * with no match for two rules, 55,000 instructions where memmem took
	 * 306,000.  Texts whose rarest byte is the same share one pass over
	 * the names (python3's two rules over libc's: half the instructions). */
	size_t pick[SYMTAB_TEXTS_MAX];
	bool done[SYMTAB_TEXTS_MAX] = { false };
	if (n > SYMTAB_TEXTS_MAX)
		return true;            /* never a false "no" */
	for (size_t i = 0; i < n; i++) {
		if (lens[i] == 0)
			return true;
		pick[i] = rarest(texts[i], lens[i]);
		done[i] = lens[i] > t->strs_len;
	}
	const char *strs = t->strs, *strs_end = t->strs + t->strs_len;
	for (size_t i = 0; i < n; i++) {
		if (done[i])
			continue;
		char b = texts[i][pick[i]];
		const char *p = strs, *end = strs_end;
		while (p < end && (p = memchr(p, b, (size_t)(end - p))) != NULL) {
			for (size_t j = i; j < n; j++) {
				if (done[j] || texts[j][pick[j]] != b || (size_t)(p - strs) < pick[j] ||
				    (size_t)(strs_end - (p - pick[j])) < lens[j])
					continue;
				if (memcmp(p - pick[j], texts[j], lens[j]) == 0)
					return true;
			}
			p++;
		}
		for (size_t j = i; j < n; j++)
			if (texts[j][pick[j]] == b)
				done[j] = true;
	}
	return false;
}

/* The filter's slot for the first k characters of a name, packed in v. */
static unsigned filter_slot(uint32_t v)
{
	return (v * 0x9E3779B1u) >> 20;     /* 12 bits */
}

void symtab_filter_clear(struct symtab_filter *f, unsigned k)
{
	f->k = k < 1 ? 1 : k > 4 ? 4 : k;
	f->mask = f->k == 4 ? 0xffffffffu : (UINT32_C(1) << (8 * f->k)) - 1;
	memset(f->bits, 0, sizeof(f->bits));
}

void symtab_filter_add(struct symtab_filter *f, const char *prefix)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < f->k; i++)
		v |= (uint32_t)(unsigned char)prefix[i] << (8 * i);
	unsigned slot = filter_slot(v & f->mask);
	f->bits[slot / 64] |= UINT64_C(1) << (slot % 64);
}

/* Whether the filter lets the name at strs[off] through (off < len): its
 * first k bytes.  A name shorter than k brings its NUL and the next
 * name's first bytes: at worst a name let through for nothing, as any
 * hash may. */
static inline bool filter_passes(const struct symtab_filter *f, const unsigned char *strs, size_t off, size_t len)
{
	uint32_t v = 0;
	if (likely(off + 4 <= len)) {
		memcpy(&v, strs + off, 4);
		v = le32toh(v);
	} else {
		for (size_t i = off; i < len; i++)
			v |= (uint32_t)strs[i] << (8 * (i - off));
	}
	unsigned slot = filter_slot(v & f->mask);
	return f->bits[slot / 64] >> (slot % 64) & 1;
}

/* What symtab_walk passes to fn: a defined function with a name and a size. */
static bool is_function(const ElfW(Sym) *s, size_t name_end)
{
	return ((1u << ELF64_ST_TYPE(s->st_info)) & (1u << STT_FUNC | 1u << STT_GNU_IFUNC)) &&
	       (size_t)s->st_name - 1 < name_end - 1 &&  /* not 0 (no name), nor at or past the end */
	       s->st_shndx != SHN_UNDEF && s->st_size != 0;  /* not an import */
}

/* The loader's hash of a name (DT_GNU_HASH: Bernstein's, h * 33 + c). */
static uint32_t gnu_hash_of(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

int symtab_lookup(const struct symtab *t, uintptr_t bias, const char *name, symtab_fn fn, void *ctx)
{
	const uint32_t *gnu = t->gnu_hash;
	if (!gnu)
		return -ENOTSUP;
	uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2], shift = gnu[3];
	if (nbuckets == 0 || t->strs_len < 2)
		return 0;
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(const void *)(gnu + 4);
	const uint32_t *buckets = (const uint32_t *)(const void *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	uint32_t h = gnu_hash_of(name);
	/* The Bloom filter first: a name the object lacks costs one word. */
	if (bloom_size) {
		ElfW(Addr) word = bloom[(h / bits) % bloom_size];
		ElfW(Addr) mask = (ElfW(Addr))1 << (h % bits) | (ElfW(Addr))1 << ((h >> shift) % bits);
		if ((word & mask) != mask)
			return 0;
	}
	const size_t name_end = t->strs_len - 1;
	for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i < t->n_syms; i++) {
		uint32_t hi = chain[i - symoffset];
		const ElfW(Sym) *s = &t->syms[i];
		if ((hi | 1) == (h | 1) && is_function(s, name_end) && strcmp(t->strs + s->st_name, name) == 0) {
			int r = fn(ctx, t->strs + s->st_name, bias + (uintptr_t)s->st_value, (size_t)s->st_size);
			if (r)
				return r;
		}
		if (hi & 1)
			break;               /* the chain's last */
	}
	return 0;
}

int symtab_walk(const struct symtab *t, uintptr_t bias, const struct symtab_filter *filter, symtab_fn fn,
		void *ctx)
{
	/* Per symbol: its type, its name's place, then the filter's bit; the
	 * rest only for the few the filter lets through. */
	if (t->strs_len < 2)
		return 0;
	const size_t strs_len = t->strs_len, name_end = strs_len - 1;   /* names start before the last NUL */
	const unsigned char *strs = (const unsigned char *)t->strs;
	for (const ElfW(Sym) *s = t->syms, *end = s + t->n_syms; s < end; s++) {
		if (!is_function(s, name_end))     /* an import's name is never read */
			continue;
		if (filter && !filter_passes(filter, strs, s->st_name, strs_len))
			continue;
		int r = fn(ctx, (const char *)strs + s->st_name, bias + (uintptr_t)s->st_value, (size_t)s->st_size);
		if (r)
			return r;
	}
	return 0;
}

int symtab_for_each_function(const char *path, uintptr_t bias, symtab_fn fn, void *ctx)
{
	struct symtab t;
	int r = locate(path, NULL, true, false, &t);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	r = symtab_walk(&t, bias, NULL, fn, ctx);
	symtab_close(&t);
	return r;
}
