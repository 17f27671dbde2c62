/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * warm_memory - touch N MiB of fresh memory, in transparent huge pages where
 * the kernel offers them, and exit: the benchmark runs it right before each
 * measured first-touch run, so that the next process gets 2 MiB blocks the
 * guest used a moment ago.
 *
 * Why: a VM that gives the guest's free memory back to its host (free page
 * reporting, in blocks of 2 MiB and more) makes a block taken back cost the
 * host's faults when it is touched again: 5 ms per 2 MiB here, against
 * 0.25 ms for a block used a moment ago.  Transparent huge pages come from
 * such blocks, 4 KiB pages from smaller ones the host never takes: without
 * this, pmalloc's alloc+write time was the host's luck (37 to 203 ns per
 * object within one run, the same page faults and huge pages each time).
 *
 *   warm_memory N
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE ((size_t)2 << 20)

int main(int argc, char **argv)
{
	if (argc != 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: %s MiB\n", argv[0]);
		return 2;
	}
	size_t len = (size_t)atol(argv[1]) << 20;
	char *res = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return 1;
	char *p = (char *)(((uintptr_t)res + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	madvise(p, len, MADV_HUGEPAGE);          /* a hint: 4 KiB pages do as well */
	for (size_t off = 0; off < len; off += 4096)
		((volatile char *)p)[off] = 1;
	return 0;
}
