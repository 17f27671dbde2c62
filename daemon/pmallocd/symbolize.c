/*
 * symbolize.c - symbol names for module offsets, with libdwfl.
 *
 * Owns: the module cache (SYM_CACHE entries, least recently used goes),
 * opening module files named in reports, build-id checks.
 * Never: fetches anything from the network (no debuginfod: separate debug
 * files only from /usr/lib/debug/.build-id), follows a path that is not
 * absolute, opens anything but a regular file of bounded size, parses a
 * file the reporting user does not own (unless root owns it), or hands
 * libdwfl anything but an ELF file (it would try to decompress it).
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "wire.h"

_Static_assert(SYM_CACHE > PMW_MODULES, "one report's modules never evict each other");

struct sym_module {
	char *path;
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
	*ret = s;
	return 0;
}

static void module_clear(struct sym_module *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->path);
	memset(m, 0, sizeof(*m));
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < SYM_CACHE; i++)
		module_clear(&s->cache[i]);
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
 * a device opened (some act on open) by swapping the path meanwhile. */
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

int symbolizer_open(struct symbolizer *s, const char *path, const uint8_t *build_id,
		    size_t build_id_len, uid_t uid, struct sym_module **ret)
{
	struct sym_module *m = NULL, *victim = NULL;
	struct stat st = { 0 };
	char magic[4];
	int fd, r;

	if (path[0] != '/')
		return -EINVAL;
	fd = open_regular(path, &st);
	if (fd < 0)
		return fd;
	if (st.st_size > SYM_FILE_MAX) {
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
		if (!victim || !c->dwfl || (victim->dwfl && c->last_use < victim->last_use))
			victim = c;
	}
	if (m)
		close(fd);
	else {
		module_clear(victim);
		r = module_load(victim, path, fd, &st);
		if (r < 0)
			return r;
		m = victim;
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
