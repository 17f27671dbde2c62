/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_elfsym.c - the function a fault's offset falls in, read from the
 * module file by pmallocctl itself (libelf): for violation entries the shim
 * wrote with no daemon to name the function (they carry the module's path,
 * the offset into it and its build-id, never a name the shim did not have).
 *
 * Owns that one look-up and a one-module cache (a listing names the same
 * program again and again).  Must never read a file the user could not
 * read anyway (it runs with the user's rights, nothing more), never
 * believe a file the build-id says is another build, and never spend
 * unbounded time: files past CTL_ELF_MAX bytes and tables past
 * CTL_ELF_SYMS symbols are not looked at.  Names are escaped before
 * anyone sees them (the file may be anybody's).
 */
#define _GNU_SOURCE                  /* asprintf */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_escape.h"
#include "ctl_vio.h"

#define CTL_ELF_MAX (512LL * 1024 * 1024)
#define CTL_ELF_SYMS (4u * 1024 * 1024)

static struct {
	char *path;
	dev_t dev;
	ino_t ino;
	uid_t uid;                   /* the file's owner and mode */
	mode_t mode;
	int fd;
	Elf *elf;
} cache = { .fd = -1 };

static void cache_drop(void)
{
	if (cache.elf)
		elf_end(cache.elf);
	if (cache.fd >= 0)
		close(cache.fd);
	free(cache.path);
	cache.path = NULL;
	cache.elf = NULL;
	cache.fd = -1;
}

static int module_open(const char *path, Elf **ret)
{
	struct stat st;
	int fd;

	if (cache.path && strcmp(cache.path, path) == 0 && stat(path, &st) == 0 &&
	    st.st_dev == cache.dev && st.st_ino == cache.ino) {
		*ret = cache.elf;
		return 0;
	}
	cache_drop();
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	if (st.st_size > CTL_ELF_MAX) {
		close(fd);
		return -EFBIG;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		close(fd);
		return -ENOSYS;
	}
	cache.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!cache.elf || elf_kind(cache.elf) != ELF_K_ELF) {
		if (cache.elf)
			elf_end(cache.elf);
		cache.elf = NULL;
		close(fd);
		return -ENOEXEC;
	}
	cache.path = strdup(path);
	if (!cache.path) {
		elf_end(cache.elf);
		cache.elf = NULL;
		close(fd);
		return -ENOMEM;
	}
	cache.fd = fd;
	cache.dev = st.st_dev;
	cache.ino = st.st_ino;
	cache.uid = st.st_uid;
	cache.mode = st.st_mode;
	*ret = cache.elf;
	return 0;
}

/* Whether the file's GNU build-id, in hex, is want. */
static bool build_id_is(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			const unsigned char *id = (const unsigned char *)d->d_buf + desc_off;
			char hex[2 * 64 + 1];

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)d->d_buf + name_off, "GNU", 4) != 0 || nh.n_descsz > 64)
				continue;
			for (size_t i = 0; i < nh.n_descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", id[i]);
			hex[2 * nh.n_descsz] = '\0';
			return strcmp(hex, want) == 0;
		}
	}
	return false;
}

/* The function of table type (SHT_SYMTAB, SHT_DYNSYM) covering offset:
 * the nearest one at or below it whose size reaches it. */
static int lookup(Elf *elf, Elf64_Word type, uint64_t offset, char **ret)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Sym best = { 0 };
		bool found = false;
		size_t n;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize == 0 ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		if (n > CTL_ELF_SYMS)
			return -EFBIG;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			int t;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			t = GELF_ST_TYPE(s.st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
			    s.st_value > offset || (found && s.st_value <= best.st_value))
				continue;
			if (offset - s.st_value >= (s.st_size ? s.st_size : 1))
				continue;
			best = s;
			found = true;
		}
		if (!found)
			continue;
		name = elf_strptr(elf, sh.sh_link, best.st_name);
		if (!name || !*name)
			continue;
		{
			char *shown = NULL;
			int r = ctl_escape(name, strlen(name), 0, &shown);

			if (r < 0)
				return r;
			r = asprintf(ret, "%s+0x%llx", shown, (unsigned long long)(offset - best.st_value));
			free(shown);
			return r < 0 ? -ENOMEM : 0;
		}
	}
	return -ENOENT;
}

int ctl_elf_symbol(const char *path, const char *build_id, uint64_t offset, unsigned int uid, char **ret)
{
	Elf *elf = NULL;
	int r = module_open(path, &elf);

	if (r < 0)
		return r;
	if ((cache.uid != 0 && cache.uid != uid) || (!(cache.mode & S_IROTH) && cache.uid != uid && uid != 0))
		return -EACCES;
	if (build_id && *build_id && !build_id_is(elf, build_id))
		return -ESTALE;
	r = lookup(elf, SHT_SYMTAB, offset, ret);
	if (r == -ENOENT)
		r = lookup(elf, SHT_DYNSYM, offset, ret);
	return r;
}
