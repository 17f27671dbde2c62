/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbolize.c - symbol names for module offsets, with libdwfl.
 *
 * Owns: the module cache (SYM_CACHE entries and SYM_CACHE_BYTES, at most
 * SYM_OWNER_BYTES of them for the files of one owner but root; least
 * recently used goes), opening module files named in reports with the
 * reporter's file-system ids, the size checks on what libdwfl would read,
 * build-id checks.
 * Never: fetches anything from the network (no debuginfod: separate debug
 * files only from /usr/lib/debug/.build-id), follows a path that is not
 * absolute, opens a file with root's rights for a process of another uid
 * (the reporter must be able to read it: a report names any path it
 * likes), opens anything but a regular file of bounded size, parses a
 * file the reporting user does not own (unless root owns it), hands
 * libdwfl anything but an ELF file (it would try to decompress it) or one
 * whose symbol tables, notes or compressed symbols are over
 * SYM_TABLES_MAX (libdwfl reads them whole and walks every symbol per
 * look-up: a sparse file claiming a 1 GiB .symtab cost seconds and a GiB).
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include <byteswap.h>
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <grp.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "wire.h"

_Static_assert(SYM_CACHE > PMW_MODULES, "one report's modules never evict each other");
_Static_assert(SYM_OWNER_BYTES <= SYM_CACHE_BYTES && SYM_TABLES_MAX + SYM_MODULE_BASE <= SYM_OWNER_BYTES,
	       "a module within the limits always fits an empty cache");

struct sym_module {
	char *path;
	uid_t owner;                     /* the file's */
	uint64_t cost;                   /* its tables and SYM_MODULE_BASE */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	uint8_t build_id[64];
	size_t build_id_len;
	uint64_t last_use;
};

struct symbolizer {
	struct sym_module cache[SYM_CACHE];
	uint64_t clock;
	uint64_t pin_from;               /* last_use from here on: this report's, kept */
	uint64_t bytes;                  /* the cached modules' costs */
	bool groups_dropped;             /* no supplementary groups: users' files may be opened */
};

static int find_elf_none(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			 char **file_name, Elf **elfp)
{
	(void)mod; (void)userdata; (void)modname; (void)base; (void)file_name; (void)elfp;
	return -1;
}

/* Separate debug info by build-id, local files only. */
static int find_debuginfo_local(Dwfl_Module *mod, void **userdata, const char *modname,
				Dwarf_Addr base, const char *file_name, const char *debuglink_file,
				GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	char path[256];
	size_t off;
	int n, fd;

	(void)userdata; (void)modname; (void)base; (void)file_name; (void)debuglink_file;
	(void)debuglink_crc;
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n < 2 || n > 64)
		return -1;
	off = (size_t)snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", bits[0]);
	for (int i = 1; i < n && off + 3 < sizeof(path); i++)
		off += (size_t)snprintf(path + off, sizeof(path) - off, "%02x", bits[i]);
	if (off + sizeof(".debug") > sizeof(path))
		return -1;
	memcpy(path + off, ".debug", sizeof(".debug"));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	*debuginfo_file_name = strdup(path);
	return fd;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf_none,
	.find_debuginfo = find_debuginfo_local,
	.section_address = dwfl_offline_section_address,
};

int symbolizer_new(struct symbolizer **ret)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	/* Root's groups would let a reporter's file-system ids read what
	 * only root's groups may: without dropping them (no CAP_SETGID),
	 * users' module files are not opened at all. */
	s->groups_dropped = getgroups(0, NULL) == 0 || setgroups(0, NULL) == 0;
	(void)elf_version(EV_CURRENT);
	*ret = s;
	return 0;
}

static void module_clear(struct symbolizer *s, struct sym_module *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->path);
	s->bytes -= m->cost;
	memset(m, 0, sizeof(*m));
}

void symbolizer_begin(struct symbolizer *s)
{
	s->pin_from = s->clock + 1;
}

uint64_t symbolizer_bytes(const struct symbolizer *s)
{
	return s->bytes;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < SYM_CACHE; i++)
		module_clear(s, &s->cache[i]);
	free(s);
}

static bool same_file(const struct sym_module *m, const struct stat *st)
{
	return m->dwfl && m->dev == st->st_dev && m->ino == st->st_ino && m->size == st->st_size &&
	       m->mtime.tv_sec == st->st_mtim.tv_sec && m->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Load the file behind fd into slot m; fd is consumed. */
static int module_load(struct sym_module *m, const char *path, int fd, const struct stat *st)
{
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	int n;

	m->dwfl = dwfl_begin(&callbacks);
	if (!m->dwfl) {
		close(fd);
		return -ENOMEM;
	}
	dwfl_report_begin(m->dwfl);
	/* Base 0: module addresses are the file's own virtual addresses. */
	m->mod = dwfl_report_elf(m->dwfl, path, path, fd, 0, false);
	if (!m->mod) {
		close(fd);                        /* not consumed on failure */
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return -ENOEXEC;
	}
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!dwfl_module_getelf(m->mod, &bias)) {
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return -ENOEXEC;
	}
	n = dwfl_module_build_id(m->mod, &bits, &vaddr);
	if (n > 0 && (size_t)n <= sizeof(m->build_id)) {
		memcpy(m->build_id, bits, (size_t)n);
		m->build_id_len = (size_t)n;
	}
	m->path = strdup(path);
	if (!m->path) {
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return -ENOMEM;
	}
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	m->size = st->st_size;
	m->mtime = st->st_mtim;
	return 0;
}

/* Open path for reading only if it is a regular file: its type is checked
 * on an O_PATH descriptor, which is then reopened, so a client cannot have
 * a device opened (some act on open) by swapping the path meanwhile.  The
 * caller's file-system ids decide whether it may. */
static int open_regular(const char *path, struct stat *ret_st)
{
	char proc[64];
	struct stat st;
	int pfd, fd, r;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0) {
		r = -errno;
		close(pfd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	r = fd < 0 ? -errno : 0;
	close(pfd);
	if (r < 0)
		return r;
	*ret_st = st;
	return fd;
}

/* open_regular() as a process of uid and gid would: with those as the
 * thread's file-system ids (which also takes CAP_DAC_READ_SEARCH from it
 * meanwhile), root's again afterwards.  Root's own reports are opened as
 * root. */
static int open_as(const struct symbolizer *s, const char *path, uid_t uid, gid_t gid,
		   struct stat *ret_st)
{
	int fd;

	if (uid == 0)
		return open_regular(path, ret_st);
	if (!s->groups_dropped)
		return -EPERM;
	(void)setfsgid(gid);
	(void)setfsuid(uid);
	/* setfsuid() tells the previous id only: a second call says whether
	 * the first took (it needs CAP_SETUID). */
	if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid)
		fd = -EPERM;
	else
		fd = open_regular(path, ret_st);
	(void)setfsuid(0);
	(void)setfsgid(0);
	if ((uid_t)setfsuid((uid_t)-1) != 0 || (gid_t)setfsgid((gid_t)-1) != 0) {
		/* Cannot happen (root's ids are its own): fail closed. */
		if (fd >= 0)
			close(fd);
		return -EPERM;
	}
	return fd;
}

#define SYM_SECTIONS_MAX 65536           /* sections of a module file */
#define SYM_SEGMENTS_MAX 4096            /* program headers */

static uint64_t elf_word(const void *p, size_t size, bool swap)
{
	uint16_t h;
	uint32_t w;
	uint64_t x;

	switch (size) {
	case 2: memcpy(&h, p, 2); return swap ? bswap_16(h) : h;
	case 4: memcpy(&w, p, 4); return swap ? bswap_32(w) : w;
	default: memcpy(&x, p, 8); return swap ? bswap_64(x) : x;
	}
}

/* The section and program header counts of the ELF file behind fd, read
 * by hand before libelf sees it: elf_begin() allocates and initialises a
 * descriptor per section up front, so a sparse file claiming millions of
 * sections would cost hundreds of MiB before any other check.  -EFBIG
 * over the limits, -ENOEXEC when not a readable ELF header. */
static int check_counts(int fd)
{
	unsigned char id[EI_NIDENT], eh[sizeof(Elf64_Ehdr)], sh0[sizeof(Elf64_Shdr)];
	bool is64, swap;
	uint64_t shoff, shnum, phnum;
	size_t ehsize;

	if (pread(fd, id, sizeof(id), 0) != (ssize_t)sizeof(id))
		return -ENOEXEC;
	if ((id[EI_CLASS] != ELFCLASS32 && id[EI_CLASS] != ELFCLASS64) ||
	    (id[EI_DATA] != ELFDATA2LSB && id[EI_DATA] != ELFDATA2MSB))
		return -ENOEXEC;
	is64 = id[EI_CLASS] == ELFCLASS64;
	swap = (id[EI_DATA] == ELFDATA2LSB) != (__BYTE_ORDER == __LITTLE_ENDIAN);
	ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (pread(fd, eh, ehsize, 0) != (ssize_t)ehsize)
		return -ENOEXEC;
	if (is64) {
		shoff = elf_word(eh + offsetof(Elf64_Ehdr, e_shoff), 8, swap);
		shnum = elf_word(eh + offsetof(Elf64_Ehdr, e_shnum), 2, swap);
		phnum = elf_word(eh + offsetof(Elf64_Ehdr, e_phnum), 2, swap);
	} else {
		shoff = elf_word(eh + offsetof(Elf32_Ehdr, e_shoff), 4, swap);
		shnum = elf_word(eh + offsetof(Elf32_Ehdr, e_shnum), 2, swap);
		phnum = elf_word(eh + offsetof(Elf32_Ehdr, e_phnum), 2, swap);
	}
	/* Extended numbering: the counts are in section 0. */
	if (shoff != 0 && (shnum == 0 || phnum == PN_XNUM)) {
		size_t shsize = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);

		if (pread(fd, sh0, shsize, (off_t)shoff) != (ssize_t)shsize)
			return -ENOEXEC;
		if (shnum == 0)
			shnum = is64 ? elf_word(sh0 + offsetof(Elf64_Shdr, sh_size), 8, swap)
				     : elf_word(sh0 + offsetof(Elf32_Shdr, sh_size), 4, swap);
		if (phnum == PN_XNUM)
			phnum = is64 ? elf_word(sh0 + offsetof(Elf64_Shdr, sh_info), 4, swap)
				     : elf_word(sh0 + offsetof(Elf32_Shdr, sh_info), 4, swap);
	}
	return shnum > SYM_SECTIONS_MAX || phnum > SYM_SEGMENTS_MAX ? -EFBIG : 0;
}

/* What libdwfl would read of the ELF file behind fd to name symbols, in
 * bytes (see SYM_TABLES_MAX): -EFBIG when over it, when its section table
 * is implausible, or when it has compressed symbols (.gnu_debugdata, xz:
 * no bound on what it inflates to) and is not root's; -ENOEXEC when
 * libelf cannot read it.  Only the headers are read (ELF_C_READ reads
 * lazily, section headers with pread). */
static int tables_size(int fd, const struct stat *st, uint64_t *ret)
{
	size_t shnum, shstrndx;
	uint64_t sum = 0;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int r = check_counts(fd);

	if (r < 0)
		return r;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getshdrnum(elf, &shnum) < 0 ||
	    elf_getshdrstrndx(elf, &shstrndx) < 0) {
		r = -ENOEXEC;
		goto out;
	}
	if (shnum > SYM_SECTIONS_MAX || eh.e_phnum > SYM_SEGMENTS_MAX) {
		r = -EFBIG;
		goto out;
	}
	/* Names are read from the section name table: bounded first. */
	{
		GElf_Shdr sh;
		Elf_Scn *names = elf_getscn(elf, shstrndx);

		if (shnum > 0 && (!names || !gelf_getshdr(names, &sh) || sh.sh_size > SYM_TABLES_MAX)) {
			r = -EFBIG;
			goto out;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, link;
		const char *name;

		if (!gelf_getshdr(scn, &sh)) {
			r = -ENOEXEC;
			goto out;
		}
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		switch (sh.sh_type) {
		case SHT_SYMTAB:
		case SHT_DYNSYM: {
			Elf_Scn *l = elf_getscn(elf, sh.sh_link);

			sum += sh.sh_size;
			if (l && gelf_getshdr(l, &link) && link.sh_type != SHT_NOBITS)
				sum += link.sh_size;
			break;
		}
		case SHT_SYMTAB_SHNDX:
		case SHT_NOTE:
			sum += sh.sh_size;
			break;
		default:
			if (name && (strcmp(name, ".gnu_debuglink") == 0 || strcmp(name, ".gnu_debugaltlink") == 0))
				sum += sh.sh_size;
			else if (name && strcmp(name, ".gnu_debugdata") == 0 && st->st_uid != 0)
				r = -EFBIG;
			break;
		}
		if ((sh.sh_flags & SHF_COMPRESSED) &&
		    (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_STRTAB))
			r = -EFBIG;
		if (r < 0 || sum > SYM_TABLES_MAX) {
			r = -EFBIG;
			goto out;
		}
	}
	*ret = sum;
out:
	elf_end(elf);
	return r;
}

/* Room for cost bytes of owner's: the least recently used modules go
 * (those of owner first when its share is full), never this report's.
 * false when that is not enough. */
static bool make_room(struct symbolizer *s, uid_t owner, uint64_t cost)
{
	for (;;) {
		uint64_t owned = 0;
		struct sym_module *v = NULL, *vo = NULL;

		for (size_t i = 0; i < SYM_CACHE; i++) {
			struct sym_module *c = &s->cache[i];

			if (!c->dwfl)
				continue;
			if (c->owner == owner)
				owned += c->cost;
			if (c->last_use >= s->pin_from)
				continue;
			if (!v || c->last_use < v->last_use)
				v = c;
			if (c->owner == owner && (!vo || c->last_use < vo->last_use))
				vo = c;
		}
		if (owner != 0 && owned + cost > SYM_OWNER_BYTES) {
			if (!vo)
				return false;
			module_clear(s, vo);
			continue;
		}
		if (s->bytes + cost > SYM_CACHE_BYTES) {
			if (!v)
				return false;
			module_clear(s, v);
			continue;
		}
		return true;
	}
}

int symbolizer_open(struct symbolizer *s, const char *path, const uint8_t *build_id,
		    size_t build_id_len, uid_t uid, gid_t gid, struct sym_module **ret)
{
	struct sym_module *m = NULL, *victim = NULL;
	struct stat st = { 0 };
	uint64_t tables = 0;
	char magic[4];
	int fd, r;

	if (path[0] != '/')
		return -EINVAL;
	fd = open_as(s, path, uid, gid, &st);
	if (fd < 0)
		return fd;
	if (st.st_size > (st.st_uid == 0 ? SYM_FILE_MAX : SYM_USER_FILE_MAX)) {
		close(fd);
		return -EFBIG;
	}
	if (st.st_uid != 0 && st.st_uid != uid) {
		close(fd);
		return -EACCES;
	}
	/* ELF only: libdwfl would otherwise try to decompress the file. */
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "\177ELF", sizeof(magic)) != 0) {
		close(fd);
		return -ENOEXEC;
	}

	for (size_t i = 0; i < SYM_CACHE; i++) {
		struct sym_module *c = &s->cache[i];

		if (same_file(c, &st)) {
			m = c;
			break;
		}
		if (c->last_use >= s->pin_from && c->dwfl)
			continue;
		if (!victim || !c->dwfl || (victim->dwfl && c->last_use < victim->last_use))
			victim = c;
	}
	if (m)
		close(fd);
	else {
		r = tables_size(fd, &st, &tables);
		if (r >= 0 && !victim)
			r = -ENOBUFS;
		if (r >= 0) {
			module_clear(s, victim);
			if (!make_room(s, st.st_uid, tables + SYM_MODULE_BASE))
				r = -ENOBUFS;
		}
		if (r < 0) {
			close(fd);
			return r;
		}
		r = module_load(victim, path, fd, &st);
		if (r < 0)
			return r;
		m = victim;
		m->owner = st.st_uid;
		m->cost = tables + SYM_MODULE_BASE;
		s->bytes += m->cost;
	}
	m->last_use = ++s->clock;

	if (build_id_len > 0 &&
	    (m->build_id_len != build_id_len || memcmp(m->build_id, build_id, build_id_len) != 0))
		return -ESTALE;
	*ret = m;
	return 0;
}

int sym_module_lookup(struct sym_module *mod, uint64_t offset, char *buf, size_t size)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name;

	const char *at;
	char raw[1024];
	int len;

	name = dwfl_module_addrinfo(mod->mod, (GElf_Addr)offset, &off, &sym, NULL, NULL, NULL);
	if (!name || !*name)
		return -ENOENT;
	/* .dynsym names carry their version ("__libc_start_main@@GLIBC_2.34"). */
	at = strchr(name, '@');
	len = at ? (int)(at - name) : (int)strlen(name);
	if (off)
		snprintf(raw, sizeof(raw), "%.*s+0x%" PRIx64, len, name, (uint64_t)off);
	else
		snprintf(raw, sizeof(raw), "%.*s", len, name);
	/* Names come from files users own: escaped once, here. */
	text_escape(buf, size, raw);
	return 0;
}

const uint8_t *sym_module_build_id(const struct sym_module *mod, size_t *ret_len)
{
	*ret_len = mod->build_id_len;
	return mod->build_id_len ? mod->build_id : NULL;
}
