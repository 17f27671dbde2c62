/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_buildid.c - the GNU build-id of an executable file as it is on disk
 * now, so that propose can tell learned entries of this build from those of
 * another (an upgrade between learning and proposing moves every offset).
 *
 * Owns reading ELF notes from a file.  Reads at most the program headers and
 * the note segments they name, each bounded; must never trust a size in the
 * file beyond the file's own length.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_buildid.h"

#define NOTE_MAX (64 * 1024)         /* a note segment larger than this is not read */
#define PHNUM_MAX 256

/* The build-id in the notes of buf (n bytes) as lower-case hex in hex
 * (2 * 64 + 1 bytes at least); true when found. */
static bool notes_build_id(const unsigned char *buf, size_t n, char *hex, size_t hexlen)
{
	size_t off = 0;

	while (n - off >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		memcpy(&nh, buf + off, sizeof(nh));
		size_t name = (nh.n_namesz + 3) & ~(size_t)3, desc = (nh.n_descsz + 3) & ~(size_t)3;
		off += sizeof(nh);
		if (name > n - off || desc > n - off - name)
			return false;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(buf + off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz * 2 + 1 <= hexlen) {
			for (size_t i = 0; i < nh.n_descsz; i++) {
				static const char digits[] = "0123456789abcdef";
				hex[2 * i] = digits[buf[off + name + i] >> 4];
				hex[2 * i + 1] = digits[buf[off + name + i] & 15];
			}
			hex[2 * nh.n_descsz] = '\0';
			return true;
		}
		off += name + desc;
	}
	return false;
}

int ctl_file_build_id(const char *path, char *hex, size_t hexlen)
{
	ElfW(Ehdr) eh;
	struct stat st;
	int r = -ENOEXEC, fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (hexlen)
		hex[0] = '\0';
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum > PHNUM_MAX ||
	    eh.e_phoff > (uint64_t)st.st_size)
		goto out;
	r = 0;                               /* an ELF file: no build-id is an answer too */
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			break;
		if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > NOTE_MAX ||
		    ph.p_offset > (uint64_t)st.st_size || ph.p_filesz > (uint64_t)st.st_size - ph.p_offset)
			continue;
		unsigned char *buf = malloc(ph.p_filesz);
		if (!buf) {
			r = -ENOMEM;
			break;
		}
		bool found = pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz &&
			     notes_build_id(buf, ph.p_filesz, hex, hexlen);
		free(buf);
		if (found)
			break;
	}
out:
	close(fd);
	return r;
}
