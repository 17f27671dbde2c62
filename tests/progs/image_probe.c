/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * image_probe.c - looks, from inside a program under the shim, for the
 * policy images in its memory: every anonymous mapping (and the heap) is
 * scanned for bytes that policy_image_validate() accepts.
 *
 *   image_probe list       one line per image found:
 *                          "image ADDR PERMS policy=NAME pools=N"
 *   image_probe write      overwrite the first image's policy name (the
 *                          program should die of SIGSEGV); "written" if not
 *   image_probe mprotect   make the first image's page writable:
 *                          "mprotect=ok" or "mprotect=ERRNO-NAME"
 * Also prints "mseal=yes|no": whether this kernel has mseal(2).
 * Exit 0, or 1 when no image is found.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../common/policy/policy_image.h"

#define SCAN_MAX (64u << 20)     /* larger mappings are reservations, not state */

struct found {
	const struct pimg_header *h;
	char perms[5];
};

static struct found images[16];
static size_t n_images;

static void scan(uintptr_t start, uintptr_t end, const char *perms)
{
	for (uintptr_t a = start; a + sizeof(struct pimg_header) <= end; a += 8) {
		const struct pimg_header *h = (const void *)a;
		if (h->magic != PIMG_MAGIC || h->version != PIMG_VERSION || h->total_len > end - a)
			continue;
		if (policy_image_validate(h, h->total_len) != 0 || n_images == 16)
			continue;
		images[n_images].h = h;
		memcpy(images[n_images].perms, perms, 4);
		n_images++;
	}
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "list";
	char line[4096];
	static struct { uintptr_t start, end; char perms[5]; } maps[4096];
	size_t n_maps = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 2;
	/* Read the list whole first: the scan must not change it. */
	while (fgets(line, sizeof(line), f) && n_maps < 4096) {
		unsigned long s, e, inode;
		char perms[5], path[4096] = "";
		if (sscanf(line, "%lx-%lx %4s %*s %*s %lu %4095s", &s, &e, perms, &inode, path) < 4)
			continue;
		if (perms[0] != 'r' || inode != 0 || (path[0] && strcmp(path, "[heap]") != 0) ||
		    e - s > SCAN_MAX)
			continue;
		maps[n_maps].start = s;
		maps[n_maps].end = e;
		memcpy(maps[n_maps].perms, perms, 5);
		n_maps++;
	}
	fclose(f);
	for (size_t i = 0; i < n_maps; i++)
		scan(maps[i].start, maps[i].end, maps[i].perms);
	printf("mseal=%s\n", syscall(462, 0UL, 0UL, 0UL) == 0 ? "yes" : "no");
	for (size_t i = 0; i < n_images; i++)
		printf("image %p %s policy=%s pools=%u\n", (const void *)images[i].h, images[i].perms,
		       pimg_policy_name(images[i].h), images[i].h->n_pools);
	fflush(stdout);
	if (n_images == 0)
		return 1;
	char *name = (char *)(uintptr_t)pimg_policy_name(images[0].h);
	if (strcmp(action, "write") == 0) {
		name[0] = 'X';
		printf("written\n");
	} else if (strcmp(action, "mprotect") == 0) {
		uintptr_t page = (uintptr_t)name & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
		int r = mprotect((void *)page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE);
		printf("mprotect=%s\n", r == 0 ? "ok" : strerrorname_np(errno));
	}
	return 0;
}
