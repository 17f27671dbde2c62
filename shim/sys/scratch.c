/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scratch.c - the policy's load in memory of its own.
 *
 * Once, in its constructor, the shim parses a policy file (libconfig's
 * tree, the policy model, the compiled image) or receives an image from
 * pmallocd, arms it, and frees the load before main.  Taken from the
 * program's heap, that work left holes at the heap's bottom that the
 * program's own objects then split and merged at each request: nginx under
 * its proposal, with the policy from a file, had glibc's _int_malloc run
 * 467 instructions a request against 222 alone (callgrind), its request
 * pool carved out of a freed parse every time.  Here the load is one
 * mapping, made for it and unmapped after arming: the program's heap is
 * the one it would have without the shim, less the objects its pools took.
 * Defence in depth besides: none of the shim's working copies (the image
 * before it is armed read-only) lies beside the program's objects, where an
 * overflow of theirs would reach it.
 *
 * Owns the mapping, its bump pointer and the scope's thread flag.  Never
 * serves a thread that did not open the scope, never reuses memory inside
 * it (a free is counted, not recycled: the load is short and frees most of
 * what it made at its end), never unmaps while something it handed out is
 * live: that invariant is checked at the end, and a leak is kept mapped
 * (and said under PMALLOC_DEBUG), never left dangling.  Costs outside a
 * scope: a thread-local flag's test in heap_malloc and kin, a range compare
 * in heap_free and heap_realloc.  A scope that allocates costs an mmap and
 * a munmap; one that does not (no policy file, no daemon), nothing.
 */
#include "scratch.h"
#include "os.h"
#include "stderr.h"

#include <stdatomic.h>
#include <string.h>

/* The reservation: address space, not memory (os_map_lazy: not charged to
 * the commit limit, pages made as they are touched).  A policy file is at
 * most 1 MB (policy_load.c); libconfig's tree of one is some ten times
 * that.  Full, the scratch answers NULL and the heap serves the rest. */
#define SCRATCH_MAX ((size_t)64 << 20)
#define SCRATCH_ALIGN 16u

__thread bool scratch_here __attribute__((tls_model("initial-exec")));
uintptr_t scratch_base;
size_t scratch_len;
static size_t used;             /* bytes handed out, headers included */
static size_t last;             /* offset of the last block's header */
static _Atomic size_t live;     /* blocks handed out and not freed */
static bool open_here;          /* a scope is open (on one thread) */

/* Each block: its size in a header of SCRATCH_ALIGN bytes, then the bytes. */
struct block {
	size_t size;
	size_t pad;
};

void scratch_begin(void)
{
	if (open_here)
		return;
	used = last = 0;
	atomic_store(&live, 0);
	open_here = true;
	scratch_here = true;
}

/* The mapping, made at the scope's first allocation: a process whose load
 * allocates nothing (no policy file, no daemon) makes no system call. */
static bool mapped(void)
{
	static bool failed;
	void *p = NULL;
	if (scratch_base)
		return true;
	if (failed || os_map_lazy(SCRATCH_MAX, &p) < 0) {
		failed = true;
		return false;
	}
	scratch_len = SCRATCH_MAX;
	scratch_base = (uintptr_t)p;
	return true;
}

void scratch_pause(bool paused)
{
	if (open_here)
		scratch_here = !paused;
}

void scratch_end(void)
{
	if (!open_here)
		return;
	scratch_here = false;
	open_here = false;
	size_t n = atomic_load(&live);
	if (!scratch_base)
		return;
	if (n) {
		debug_printf("scratch: %zu allocations of the policy's load outlive it: its %zu KB kept mapped", n,
			     used / 1024);
		return;
	}
	void *p = (void *)scratch_base;
	scratch_len = 0;
	scratch_base = 0;
	(void)os_unmap(p, SCRATCH_MAX);
}

void *scratch_alloc(size_t size)
{
	size_t need = sizeof(struct block) + ((size + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1));
	if (!scratch_here || size > SCRATCH_MAX || !mapped() || need > scratch_len - used)
		return NULL;
	struct block *b = (struct block *)(scratch_base + used);
	b->size = size;
	last = used;
	used += need;
	atomic_fetch_add(&live, 1);
	return b + 1;                  /* fresh pages: zero */
}

void *scratch_realloc(void *p, size_t size)
{
	struct block *b = (struct block *)p - 1;
	size_t off = (uintptr_t)b - scratch_base;
	if (!scratch_here)
		return NULL;
	size_t need = sizeof(*b) + ((size + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1));
	if (off == last && size <= SCRATCH_MAX && need <= scratch_len - off) {
		/* The last block: grown or shrunk where it is.  What it grows
		 * into was never handed out: zero. */
		if (size < b->size)
			memset((char *)p + size, 0, b->size - size);
		b->size = size;
		used = off + need;
		return p;
	}
	void *q = scratch_alloc(size);
	if (q) {
		memcpy(q, p, b->size < size ? b->size : size);
		scratch_free(p);
	}
	return q;
}

size_t scratch_size(const void *p)
{
	return ((const struct block *)p - 1)->size;
}

void scratch_free(void *p)
{
	atomic_fetch_sub(&live, 1);
	(void)p;
}
