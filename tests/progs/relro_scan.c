/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relro_scan - the writable code pointers a library adds to a process:
 * reads /proc/PID/maps and /proc/PID/mem of a running process and prints,
 * for every 8-byte word of the library's writable mappings (its rw-p
 * segments and the anonymous .bss mapped right after them) that points
 * into an executable mapping of the process, one line "OFFSET TARGET"
 * (OFFSET from the library's load address, hex; TARGET the mapping the
 * word points into).  Pages the library made read-only itself are r--p
 * and not read.
 *
 *   relro_scan PID LIBNAME
 *
 * Exits 0 (lines printed, maybe none), 2 when it cannot read the process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct map {
	uintptr_t lo, hi;
	char perms[8];
	char path[256];
};
static struct map maps[4096];
static size_t n_maps;

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: relro_scan PID LIBNAME\n");
		return 2;
	}
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	FILE *m = fopen(path, "re");
	if (!m) {
		perror("relro_scan: maps");
		return 2;
	}
	while (n_maps < 4096 && fgets(line, sizeof(line), m)) {
		struct map *mp = &maps[n_maps];
		unsigned long lo, hi;
		mp->path[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, mp->perms, mp->path) < 3)
			continue;
		mp->lo = lo;
		mp->hi = hi;
		n_maps++;
	}
	fclose(m);
	snprintf(path, sizeof(path), "/proc/%s/mem", argv[1]);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("relro_scan: mem");
		return 2;
	}
	uintptr_t base = 0;
	for (size_t i = 0; i < n_maps; i++)
		if (strstr(maps[i].path, argv[2]) && (!base || maps[i].lo < base))
			base = maps[i].lo;
	if (!base) {
		fprintf(stderr, "relro_scan: %s is not mapped in %s\n", argv[2], argv[1]);
		return 2;
	}
	for (size_t i = 0; i < n_maps; i++) {
		const struct map *mp = &maps[i];
		bool ours = strstr(mp->path, argv[2]) != NULL;
		/* The .bss tail: anonymous, right after one of the library's. */
		bool bss = !mp->path[0] && i > 0 && maps[i - 1].hi == mp->lo && strstr(maps[i - 1].path, argv[2]);
		if (strcmp(mp->perms, "rw-p") != 0 || !(ours || bss))
			continue;
		for (uintptr_t a = mp->lo; a < mp->hi; a += 4096) {
			uint64_t page[512];
			if (pread(fd, page, sizeof(page), (off_t)a) != (ssize_t)sizeof(page))
				continue;
			for (size_t w = 0; w < 512; w++)
				for (size_t k = 0; k < n_maps; k++)
					if (maps[k].perms[2] == 'x' && page[w] >= maps[k].lo && page[w] < maps[k].hi) {
						printf("%" PRIxPTR " %s\n", a + w * 8 - base,
						       maps[k].path[0] ? maps[k].path : "[anonymous]");
						break;
					}
		}
	}
	close(fd);
	return 0;
}
