/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * heap.c - which allocator the heap is: the next definition of malloc after
 * the shim's, i.e. what the program would call without us (glibc's, or
 * jemalloc, tcmalloc, mimalloc ... when the program links one).  Every heap
 * route of interpose.c goes through heap_next, so the program keeps its
 * allocator, and each pointer goes back to the allocator that made it.
 *
 * All six entry points are taken from the one object that defines the next
 * malloc (an allocator lacking memalign gets it from its aligned_alloc or
 * posix_memalign), never mixed with another object's.  When the program's
 * executable defines malloc itself, it precedes the shim: that allocator is
 * the heap (the shim's own strdup and the like must use it too).
 *
 * Bootstrap: the table starts with trampolines that find the allocator on
 * the first call (dlsym).  dlsym may allocate, and another thread may
 * allocate meanwhile: those allocations come from glibc's __libc_malloc and
 * are recorded (pointer and size) in a small table; when the next allocator
 * is not glibc, free/realloc/malloc_usable_size look a pointer up there
 * first (one load while the table is empty), so glibc's pointers go back to
 * glibc.  The finder never waits for another thread: a thread that finds
 * the search under way takes the bootstrap path.
 *
 * Once found, the table is written and its page made read-only.  Its
 * entries are the allocator's own functions (a heap call costs one
 * indirect jump, as the direct call to __libc_malloc did) unless a
 * bootstrap pointer may be outstanding when the search ends: then free,
 * realloc and malloc_usable_size are the checked ones above, for the life
 * of the process.  Whether one may be is decided once, with no wait: the
 * finder publishes the allocator (ops_ready), then reads boot_entered (the
 * threads in a bootstrap allocation) and boot_live; a thread counts itself
 * in boot_entered before it reads ops_ready, and once it is set takes the
 * allocator's own functions rather than glibc's.  Either the finder sees
 * the thread, or the thread sees the allocator (both sequentially
 * consistent).  Normally nothing allocates during the search (0 pointers):
 * redis's heap, jemalloc, then serves its free and malloc_usable_size
 * without the check (some 15 instructions and a jump each: 7.6 million of
 * redis's 222 million serving 40,000 requests, callgrind).
 * Never allocates on its own behalf; no lock.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "os.h"
#include "guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static void *boot_malloc(size_t size);
static void boot_free(void *p);
static void *boot_calloc(size_t n, size_t size);
static void *boot_realloc(void *p, size_t size);
static void *boot_memalign(size_t align, size_t size);
static size_t boot_usable_size(void *p);

union heap_page heap_page __attribute__((aligned(HEAP_PAGE))) = { .ops = {
	.malloc = boot_malloc, .free = boot_free, .calloc = boot_calloc,
	.realloc = boot_realloc, .memalign = boot_memalign, .usable_size = boot_usable_size,
}, .free_entry = boot_free };
static_assert(sizeof(union heap_page) == HEAP_PAGE, "the table has its page to itself");

enum { HEAP_UNKNOWN, HEAP_FINDING, HEAP_FOUND };
static _Atomic int heap_state;
static _Atomic bool arena_reserved;      /* free() must check for pool pointers */
static _Atomic bool free_entry_checked;  /* free_entry is the checked free (written once) */
/* The checked free (heap_set_free), read only to write it into the
 * read-only table, in the same call or the search that ends just after. */
static void (*_Atomic checked_free_fn)(void *p);
static void free_entry_check(void);

/* The allocator's own functions, behind the checked entry points; written
 * once, before the table, in its page (heap.h). */
#define real (heap_page.real)

/* glibc's pointers handed out while the allocator was being found. */
#define BOOT_MAX 256
static void *_Atomic boot_ptr[BOOT_MAX];
static size_t boot_size[BOOT_MAX];
static _Atomic unsigned int boot_used;   /* slots taken, never given back */
static _Atomic unsigned int boot_live;   /* pointers not freed yet */
static _Atomic unsigned int boot_entered;  /* threads in a bootstrap allocation */
/* The allocator found, its own functions (never the checked ones), for the
 * bootstrap paths between ops_ready and the table: no glibc pointer is
 * made once ops_ready is set. */
#define found (heap_page.found)
static _Atomic bool ops_ready;

static void *boot_record(void *p, size_t size)
{
	if (!p)
		return NULL;
	unsigned int i = atomic_fetch_add(&boot_used, 1);
	if (i >= BOOT_MAX) {
		/* Untracked, it could reach the wrong free(): refuse it. */
		__libc_free(p);
		errno = ENOMEM;
		return NULL;
	}
	boot_size[i] = size;
	atomic_fetch_add(&boot_live, 1);
	atomic_store_explicit(&boot_ptr[i], p, memory_order_release);
	return p;
}

/* Is p one of glibc's bootstrap pointers?  Its slot, or -1. */
static int boot_find(const void *p)
{
	if (likely(atomic_load_explicit(&boot_live, memory_order_relaxed) == 0) || !p)
		return -1;
	unsigned int n = atomic_load(&boot_used);
	for (unsigned int i = 0; i < n && i < BOOT_MAX; i++)
		if (atomic_load_explicit(&boot_ptr[i], memory_order_acquire) == p)
			return (int)i;
	return -1;
}

/* Take p out of the table; true when it was there (glibc's). */
static bool boot_take(void *p, size_t *ret_size)
{
	int i = boot_find(p);
	void *expect = p;
	if (i < 0 || !atomic_compare_exchange_strong(&boot_ptr[i], &expect, NULL))
		return false;
	atomic_fetch_sub(&boot_live, 1);
	if (ret_size)
		*ret_size = boot_size[i];
	return true;
}

/* The checked entry points, used when the next allocator is not the one
 * behind __libc_free: a bootstrap pointer goes back to glibc. */
static void checked_free(void *p)
{
	if (unlikely(boot_take(p, NULL))) {
		__libc_free(p);
		return;
	}
	real.free(p);
}

static void *checked_realloc(void *p, size_t size)
{
	size_t have;
	int i = boot_find(p);
	if (likely(i < 0))
		return real.realloc(p, size);
	/* Moved to the program's allocator; the glibc copy is freed. */
	have = boot_size[i];
	void *q = heap_next.malloc(size);
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	if (boot_take(p, NULL))
		__libc_free(p);
	return q;
}

static size_t checked_usable_size(void *p)
{
	int i = boot_find(p);
	if (unlikely(i >= 0))
		return boot_size[i];   /* what was asked: all of it is usable */
	return real.usable_size ? real.usable_size(p) : 0;
}

static void *via_aligned_alloc(size_t align, size_t size)
{
	size_t total = ALIGN_UP(size ? size : 1, align);
	if (total < size) {
		errno = ENOMEM;
		return NULL;
	}
	return real.aligned_alloc(align, total);
}

static void *via_posix_memalign(size_t align, size_t size)
{
	void *p = NULL;
	if (align < sizeof(void *))
		align = sizeof(void *);
	int r = real.posix_memalign(&p, align, size);
	if (r) {
		errno = r;
		return NULL;
	}
	return p;
}

static size_t no_usable_size(void *p)
{
	(void)p;
	return 0;
}

/* The object that fn is in (_dl_find_object: no symbol search, unlike
 * dladdr), or NULL. */
static struct link_map *object_of(void *fn)
{
	struct dl_find_object dlfo;
	if (!fn || _dl_find_object(fn, &dlfo) != 0)
		return NULL;
	return dlfo.dlfo_link_map;
}

/* name, as defined by the object obj; NULL when obj lacks it (the look-up
 * found another object's). */
static void *symbol_of(void *handle, const struct link_map *obj, const char *name)
{
	void *fn = dlsym(handle, name);
	return fn && object_of(fn) == obj ? fn : NULL;
}

/* The table for the allocator whose malloc is m, looked up in handle
 * (RTLD_NEXT, or a handle of m's object); false when that object lacks one
 * of malloc, free, calloc, realloc or every aligned form. */
static bool ops_for(void *handle, void *m, struct heap_ops *ops)
{
	const struct link_map *obj = object_of(m);
	if (!obj)
		return false;
	ops->malloc = (void *(*)(size_t))m;
	ops->free = (void (*)(void *))symbol_of(handle, obj, "free");
	ops->calloc = (void *(*)(size_t, size_t))symbol_of(handle, obj, "calloc");
	ops->realloc = (void *(*)(void *, size_t))symbol_of(handle, obj, "realloc");
	ops->memalign = (void *(*)(size_t, size_t))symbol_of(handle, obj, "memalign");
	ops->usable_size = (size_t (*)(void *))symbol_of(handle, obj, "malloc_usable_size");
	real.aligned_alloc = (void *(*)(size_t, size_t))symbol_of(handle, obj, "aligned_alloc");
	real.posix_memalign = (int (*)(void **, size_t, size_t))symbol_of(handle, obj, "posix_memalign");
	if (!ops->memalign && real.aligned_alloc)
		ops->memalign = via_aligned_alloc;
	else if (!ops->memalign && real.posix_memalign)
		ops->memalign = via_posix_memalign;
	if (!ops->usable_size)
		ops->usable_size = no_usable_size;
	real.name = obj->l_name && obj->l_name[0] ? obj->l_name : "the program";
	return ops->free && ops->calloc && ops->realloc && ops->memalign;
}

static void find(void)
{
	struct heap_ops ops;
	int busy = shim_busy_enter();
	/* Normally the shim's malloc is the program's, and the next one is the
	 * heap.  A program whose executable defines malloc (an allocator
	 * linked in statically) comes before us: its allocator is the heap. */
	void *first = dlsym(RTLD_DEFAULT, "malloc");
	bool before_us = first && object_of(first) != object_of((void *)heap_init);
	if (!(before_us && ops_for(RTLD_DEFAULT, first, &ops)) &&
	    !ops_for(RTLD_NEXT, dlsym(RTLD_NEXT, "malloc"), &ops)) {
		/* No next allocator (or an incomplete one): glibc's, whole. */
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
		memset(&ops, 0, sizeof(ops));
		if (!libc || !ops_for(libc, (void *)__libc_malloc, &ops)) {
			ops = (struct heap_ops){ __libc_malloc, __libc_free, __libc_calloc, __libc_realloc,
						 __libc_memalign, no_usable_size };
			real.name = "glibc";
		}
	}
	shim_busy_leave(busy);
	/* The allocator to the bootstrap paths first, then who may hold a
	 * glibc pointer (see the top of this file). */
	found = ops;
	atomic_store(&ops_ready, true);
	bool outstanding = atomic_load(&boot_entered) != 0 || atomic_load(&boot_live) != 0;
	real.free = ops.free;
	real.realloc = ops.realloc;
	real.usable_size = ops.usable_size;
	if (ops.free != __libc_free && outstanding) {
		/* Glibc's bootstrap pointers must not reach this allocator. */
		ops.free = checked_free;
		ops.realloc = checked_realloc;
		ops.usable_size = checked_usable_size;
	}
	/* Consumers first: a thread that sees the new malloc already sees the
	 * free that takes its pointers. */
	struct heap_ops *t = &heap_page.ops;
	atomic_store_explicit((void *_Atomic *)&t->usable_size, (void *)ops.usable_size, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->realloc, (void *)ops.realloc, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->free, (void *)ops.free, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->memalign, (void *)ops.memalign, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->calloc, (void *)ops.calloc, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->malloc, (void *)ops.malloc, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&heap_page.free_entry,
			      (void *)(atomic_load(&arena_reserved) ? atomic_load(&checked_free_fn) : ops.free),
			      memory_order_release);
	/* Checked: a table left writable would let one write send the heap's
	 * calls (or pool pointers' frees) anywhere. */
	if (os_page_size == HEAP_PAGE && os_protect_ro(&heap_page, HEAP_PAGE) < 0)
		fatal("malloc", "cannot make the heap's table read-only");
	atomic_store(&heap_state, HEAP_FOUND);
	/* The arena reserved meanwhile (by another thread): see heap_set_free. */
	if (atomic_load(&arena_reserved))
		free_entry_check();
}

/* Point free_entry at the checked free, once (the page is writable only
 * meanwhile, and only by the one thread that does it). */
static void free_entry_check(void)
{
	if (atomic_exchange(&free_entry_checked, true))
		return;
	bool page = os_page_size == HEAP_PAGE;
	if (page && os_protect_rw(&heap_page, HEAP_PAGE) < 0)
		fatal("malloc", "cannot open the heap's table for free()'s pool check");
	atomic_store_explicit((void *_Atomic *)&heap_page.free_entry, (void *)atomic_load(&checked_free_fn),
			      memory_order_release);
	if (page && os_protect_ro(&heap_page, HEAP_PAGE) < 0)
		fatal("malloc", "cannot make the heap's table read-only again");
	/* Read by nothing from here on (free_entry_checked is set): no
	 * writable code pointer is left behind. */
	atomic_store(&checked_free_fn, NULL);
}

/* The flag first, then the state: either find() sees the flag when it
 * writes the table or re-checks it after HEAP_FOUND, or this sees
 * HEAP_FOUND and rewrites the entry itself (both sequentially consistent). */
void heap_set_free(void (*fn)(void *p))
{
	atomic_store(&checked_free_fn, fn);
	atomic_store(&arena_reserved, true);
	if (atomic_load(&heap_state) == HEAP_FOUND)
		free_entry_check();
}

/* true when heap_next holds the allocator (found now or before); false
 * while the search is under way (in this thread: dlsym allocating; or in
 * another), when the caller takes the bootstrap path. */
static bool heap_found(void)
{
	int s = atomic_load_explicit(&heap_state, memory_order_acquire);
	if (likely(s == HEAP_FOUND))
		return true;
	if (s == HEAP_UNKNOWN && atomic_compare_exchange_strong(&heap_state, &s, HEAP_FINDING)) {
		find();
		return true;
	}
	return false;
}

void heap_init(void)
{
	heap_found();
}

unsigned int heap_bootstrap_count(void)
{
	unsigned int n = atomic_load(&boot_used);
	return n < BOOT_MAX ? n : BOOT_MAX;
}

const char *heap_name(void)
{
	heap_found();
	return real.name ? real.name : "glibc";
}

/* A bootstrap allocation: counted in boot_entered while it may make a
 * glibc pointer, and none is made once the allocator is known. */
static void *boot_malloc(size_t size)
{
	if (heap_found())
		return heap_next.malloc(size);
	atomic_fetch_add(&boot_entered, 1);
	void *p = atomic_load(&ops_ready) ? found.malloc(size) : boot_record(__libc_malloc(size), size);
	atomic_fetch_sub(&boot_entered, 1);
	return p;
}

static void *boot_calloc(size_t n, size_t size)
{
	if (heap_found())
		return heap_next.calloc(n, size);
	atomic_fetch_add(&boot_entered, 1);
	void *p = atomic_load(&ops_ready) ? found.calloc(n, size)
					  : boot_record(__libc_calloc(n, size), n * size);   /* calloc checked n * size */
	atomic_fetch_sub(&boot_entered, 1);
	return p;
}

static void *boot_memalign(size_t align, size_t size)
{
	if (heap_found())
		return heap_next.memalign(align, size);
	atomic_fetch_add(&boot_entered, 1);
	void *p = atomic_load(&ops_ready) ? found.memalign(align, size)
					  : boot_record(__libc_memalign(align, size), size);
	atomic_fetch_sub(&boot_entered, 1);
	return p;
}

/* While the search is under way every live pointer is glibc's, but those
 * the allocator made once it was known (ops_ready, before the table). */
static void boot_free(void *p)
{
	if (heap_found()) {
		heap_next.free(p);
		return;
	}
	if (!boot_take(p, NULL) && atomic_load(&ops_ready))
		found.free(p);
	else
		__libc_free(p);
}

static void *boot_realloc(void *p, size_t size)
{
	if (heap_found())
		return heap_next.realloc(p, size);
	if (!p)
		return boot_malloc(size);
	int i = boot_find(p);
	if (i < 0)   /* the allocator's (ops_ready), or glibc's from no bootstrap: none in practice */
		return atomic_load(&ops_ready) ? found.realloc(p, size) : __libc_realloc(p, size);
	/* A new pointer (glibc's, or the allocator's once known); p stays
	 * valid when none can be had. */
	size_t have = boot_size[i];
	void *q = boot_malloc(size);
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	boot_free(p);
	return q;
}

static size_t boot_usable_size(void *p)
{
	if (heap_found())
		return heap_next.usable_size(p);
	int i = boot_find(p);
	if (i >= 0)
		return boot_size[i];
	return atomic_load(&ops_ready) ? found.usable_size(p) : 0;
}

char *heap_strdup(const char *s)
{
	return heap_strndup(s, SIZE_MAX);
}

char *heap_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = heap_malloc(len + 1);
	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}
