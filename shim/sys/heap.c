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
 * The exported entry points (heap_page.entry) are written here too, from
 * what the layer above asks (heap_set_checked, heap_set_routed), under
 * one mutex held only for those stores and the page's two mprotects;
 * asked again what it holds, the table is left alone (no mprotect).
 * Never allocates on its own behalf; no other lock.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "stderr.h"
#include "os.h"
#include "guard.h"
#include "ro.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
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
static void entries_store(void);
static void *boot_memalign(size_t align, size_t size);
static size_t boot_usable_size(void *p);

union heap_page heap_page __attribute__((aligned(RO_PAGE))) = { .ops = {
	.malloc = boot_malloc, .free = boot_free, .calloc = boot_calloc,
	.realloc = boot_realloc, .memalign = boot_memalign, .usable_size = boot_usable_size,
}, .entry = {
	.malloc = boot_malloc, .free = boot_free, .calloc = boot_calloc, .realloc = boot_realloc,
} };
static_assert(sizeof(union heap_page) == RO_PAGE, "the table has its page to itself");
static_assert(offsetof(union heap_page, entry.malloc) == HEAP_ENTRY_MALLOC &&
		      offsetof(union heap_page, entry.free) == HEAP_ENTRY_FREE &&
		      offsetof(union heap_page, entry.calloc) == HEAP_ENTRY_CALLOC &&
		      offsetof(union heap_page, entry.realloc) == HEAP_ENTRY_REALLOC,
	      "the entry stubs' offsets");

enum { HEAP_UNKNOWN, HEAP_FINDING, HEAP_FOUND };
static _Atomic int heap_state;
/* What the layer above asked the entries to be (heap_set_checked,
 * heap_set_routed; NULL: the heap's own), written into the table under
 * entry_lock: the table is opened for one writer's stores at a time. */
/* What heap_set_checked and heap_set_routed asked for: in the table's
 * page (code pointers), written under entry_lock with the page open. */
#define want_checked (heap_page.want_checked)
#define want_routed (heap_page.want_routed)
#define want_is_routed (heap_page.want_is_routed)
static pthread_mutex_t entry_lock = PTHREAD_MUTEX_INITIALIZER;

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
		/* glibc's dlopen, not the shim's (interpose.c). */
		void *(*open_fn)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
		void *libc = open_fn ? open_fn("libc.so.6", RTLD_LAZY | RTLD_NOLOAD) : NULL;
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
	/* The entries, then the page closed and the state found, under
	 * entry_lock: heap_set_checked and heap_set_routed write them again
	 * from then on. */
	pthread_mutex_lock(&entry_lock);
	entries_store();
	/* Checked: a table left writable would let one write send the heap's
	 * calls (or pool pointers' frees) anywhere. */
	/* RO_PAGE is a whole number of the kernel's pages on every kernel
	 * built for (4 KiB and 64 KiB alike); one that is not (ro_fits) is
	 * ro.c's to report, listed by ro_register("heap table") at start-up. */
	if (ro_fits(&heap_page, sizeof(heap_page), os_page_size) &&
	    os_protect_ro(&heap_page, sizeof(heap_page)) < 0)
		fatal("malloc", "cannot make the heap's table read-only");
	atomic_store(&heap_state, HEAP_FOUND);
	pthread_mutex_unlock(&entry_lock);
}

/* The entries from the heap's table and what was asked (entry_lock held);
 * consumers before producers, as above. */
static void entries_store(void)
{
	const struct heap_ops *o = &heap_page.ops;
	struct heap_entries e = {
		.malloc = want_routed.malloc ? want_routed.malloc : o->malloc,
		.free = want_routed.free ? want_routed.free : want_checked.free ? want_checked.free : o->free,
		.calloc = want_routed.calloc ? want_routed.calloc : o->calloc,
		.realloc = want_routed.realloc ? want_routed.realloc
			   : want_checked.realloc ? want_checked.realloc : o->realloc,
	};
	struct heap_entries *t = &heap_page.entry;
	atomic_store_explicit((void *_Atomic *)&t->realloc, (void *)e.realloc, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->free, (void *)e.free, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->calloc, (void *)e.calloc, memory_order_release);
	atomic_store_explicit((void *_Atomic *)&t->malloc, (void *)e.malloc, memory_order_release);
	atomic_store_explicit((_Atomic bool *)&heap_page.routed, want_is_routed, memory_order_release);
}

/* Whether what is asked is what the table was last asked (entry_lock
 * held): nothing to store, nor a page to open. */
static bool entries_asked(const struct heap_entries *checked, const struct heap_entries *routed)
{
	if (checked && (want_checked.free != checked->free || want_checked.realloc != checked->realloc))
		return false;
	if (routed == &want_routed)
		return true;
	if (want_is_routed != (routed != NULL))
		return false;
	return !routed || (want_routed.malloc == routed->malloc && want_routed.free == routed->free &&
			   want_routed.calloc == routed->calloc && want_routed.realloc == routed->realloc);
}

/* What was asked, written now when the table is (else find() writes it).
 * Asked again as it is, nothing is written: no mprotect pair. */
static void entries_set(const struct heap_entries *checked, const struct heap_entries *routed)
{
	pthread_mutex_lock(&entry_lock);
	/* Once found, the page is read-only: opened for the stores (the
	 * state does not change while entry_lock is held: find() sets it
	 * under the lock). */
	bool found_now = atomic_load(&heap_state) == HEAP_FOUND;
	if (found_now && entries_asked(checked, routed)) {
		pthread_mutex_unlock(&entry_lock);
		return;
	}
	bool page = found_now && ro_fits(&heap_page, sizeof(heap_page), os_page_size);
	if (page && os_protect_rw(&heap_page, sizeof(heap_page)) < 0)
		fatal("malloc", "cannot open the heap's table");
	if (checked) {
		want_checked.free = checked->free;
		want_checked.realloc = checked->realloc;
	}
	if (routed != &want_routed) {
		struct heap_entries r = routed ? *routed : (struct heap_entries){ 0 };
		want_routed = r;
		want_is_routed = routed != NULL;
	}
	if (found_now)
		entries_store();
	if (page && os_protect_ro(&heap_page, sizeof(heap_page)) < 0)
		fatal("malloc", "cannot make the heap's table read-only again");
	pthread_mutex_unlock(&entry_lock);
}

void heap_set_checked(const struct heap_entries *e)
{
	entries_set(e, &want_routed);
}

void heap_set_routed(const struct heap_entries *e)
{
	entries_set(NULL, e);
}


/* The child of a fork made while another thread wrote the entries: the
 * lock made free again, and the page read-only (it may have been open).
 * Nothing taken before the fork: its prepare handler could wait on a
 * thread that waits for a pool's lock the fork's other handlers hold. */
static void entry_lock_child(void)
{
	if (pthread_mutex_trylock(&entry_lock) != 0) {
		pthread_mutex_init(&entry_lock, NULL);
		pthread_mutex_lock(&entry_lock);
		if (ro_fits(&heap_page, sizeof(heap_page), os_page_size) &&
		    atomic_load(&heap_state) == HEAP_FOUND && os_protect_ro(&heap_page, sizeof(heap_page)) < 0)
			fatal("malloc", "cannot make the heap's table read-only again");
	}
	pthread_mutex_unlock(&entry_lock);
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
	static _Atomic bool once;
	if (!atomic_exchange(&once, true))
		pthread_atfork(NULL, NULL, entry_lock_child);
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

void *heap_realloc_from_scratch(void *p, size_t size)
{
	void *q = scratch_realloc(p, size);
	if (q)
		return q;
	q = heap_next.malloc(size);
	if (q) {
		size_t had = scratch_size(p);
		memcpy(q, p, had < size ? had : size);
		scratch_free(p);
	}
	return q;
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
