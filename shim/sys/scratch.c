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
 * in heap_free and heap_realloc.  A scope whose load fits in 16 KB costs no
 * system call; a larger one an mmap and a munmap.
 */
#include "scratch.h"
#include "os.h"
#include "stderr.h"

#include <stdatomic.h>
#include <string.h>

/* The first bytes of a load come from the shim's .bss (a python3 policy's
 * load is 5 KB, pmallocd's image for /bin/true less): no mapping, no
 * system call.  A larger load (nginx's proposal from a file: 411 KB)
 * goes on in the reservation, address space, not memory (os_map_lazy:
 * not charged to the commit limit, pages made as they are touched).  A
 * policy file is at most 1 MB (policy_load.c); libconfig's tree of one is
 * some ten times that.  Full, the scratch answers NULL and the heap serves
 * the rest.  The .bss part serves one scope in a process's life (its
 * bytes are zero only once). */
#define SCRATCH_MAX ((size_t)64 << 20)
#define SCRATCH_ALIGN 16u

__thread bool scratch_here __attribute__((tls_model("initial-exec")));
__thread bool scratch_scope __attribute__((tls_model("initial-exec")));
char scratch_first[SCRATCH_FIRST] __attribute__((aligned(SCRATCH_ALIGN)));
uintptr_t scratch_base;
size_t scratch_len;
static uintptr_t cur;           /* the region blocks are cut from: scratch_first or the mapping */
static size_t cur_len;
static size_t used;             /* bytes of it handed out, headers included */
static size_t last;             /* offset of its last block's header */
static size_t total;            /* bytes handed out in the scope */
static _Atomic size_t live;     /* blocks handed out and not freed */
static bool open_here;          /* a scope is open (on one thread) */
static bool first_spent;        /* scratch_first served a scope already */

/* Each block: its size in a header of SCRATCH_ALIGN bytes, then the bytes. */
struct block {
	size_t size;
	size_t pad;
};

/* What a block of size bytes takes, its header included (size is at most
 * SCRATCH_MAX: no overflow). */
static size_t block_need(size_t size)
{
	return sizeof(struct block) + ALIGN_UP(size, SCRATCH_ALIGN);
}

void scratch_begin(void)
{
	if (open_here)
		return;
	cur = first_spent ? 0 : (uintptr_t)scratch_first;
	cur_len = first_spent ? 0 : SCRATCH_FIRST;
	used = last = total = 0;
	atomic_store(&live, 0);
	open_here = true;
	scratch_here = true;
	scratch_scope = true;
}

/* need bytes in the current region, or else in the mapping, made at the
 * first block that does not fit in the .bss part: a load of a few KB (or
 * none: no policy file, no daemon) makes no system call. */
static bool room(size_t need)
{
	static bool failed;
	void *p = NULL;
	if (need <= cur_len - used)
		return true;
	if (scratch_base || failed || need > SCRATCH_MAX)
		return false;
	if (os_map_lazy(SCRATCH_MAX, &p) < 0) {
		failed = true;
		return false;
	}
	scratch_len = SCRATCH_MAX;
	scratch_base = (uintptr_t)p;
	cur = scratch_base;
	cur_len = SCRATCH_MAX;
	used = last = 0;
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
	scratch_scope = false;
	open_here = false;
	first_spent = first_spent || total;        /* a block was cut: its bytes no longer zero */
	size_t n = atomic_load(&live);
	if (total)
		debug_printf("the policy's load: %zu KB in the shim's own memory%s", total / 1024,
			     scratch_base ? " (a mapping of its own)" : "");
	if (!scratch_base)
		return;
	if (n) {
		debug_printf("scratch: %zu allocations of the policy's load outlive it: its mapping kept", n);
		return;
	}
	void *p = (void *)scratch_base;
	scratch_len = 0;
	scratch_base = 0;
	(void)os_unmap(p, SCRATCH_MAX);
}

void *scratch_alloc(size_t size)
{
	if (!scratch_here || size > SCRATCH_MAX)
		return NULL;
	size_t need = block_need(size);
	if (!room(need))
		return NULL;
	struct block *b = (struct block *)(cur + used);
	b->size = size;
	last = used;
	used += need;
	total += need;
	atomic_fetch_add(&live, 1);
	return b + 1;                  /* never handed out before: zero */
}

void *scratch_realloc(void *p, size_t size)
{
	struct block *b = (struct block *)p - 1;
	size_t off = (uintptr_t)b - cur;
	if (!scratch_here || size > SCRATCH_MAX)
		return NULL;
	size_t need = block_need(size);
	if (off == last && off < cur_len && need <= cur_len - off) {
		/* The last block: grown or shrunk where it is.  What it grows
		 * into was never handed out: zero. */
		if (size < b->size)
			memset((char *)p + size, 0, b->size - size);
		b->size = size;
		total = total - (used - off) + need;
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
	uintptr_t a = (uintptr_t)p;
	size_t room = a - (uintptr_t)scratch_first < SCRATCH_FIRST ? (uintptr_t)scratch_first + SCRATCH_FIRST - a
		      : scratch_base + scratch_len - a;
	size_t size = ((const struct block *)p - 1)->size;
	return size < room ? size : room;
}

void scratch_free(void *p)
{
	atomic_fetch_sub(&live, 1);
	(void)p;
}
