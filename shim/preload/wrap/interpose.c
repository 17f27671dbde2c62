/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interpose.c - the exported malloc family, thin: pass to the heap (the
 * program's own allocator, heap.c) unless a policy is armed and the caller
 * is a named site, and keep the heap's hands off pool pointers.
 *
 * Costs (x86-64 instructions, callgrind; make bench measures the churn).
 * malloc, free, calloc and realloc are each an endbr64 and one jump
 * through the read-only entry table (heap.h), 2 instructions, to:
 * - no policy, or a policy none of whose rules resolves here (until a
 *   dlopen): the heap's own functions; free and realloc checked for pool
 *   pointers once the first span is made (free_checked, realloc_checked:
 *   6 more, a range compare);
 * - a policy whose rules resolve: the filter's entries (6 more for malloc
 *   and calloc, the read-only filter of the code the policy names looked
 *   at first; 10 for realloc, and the range compare);
 * - after a dlopen, or with a pool that takes every site: the table's
 *   entries (malloc from a site seen before that goes to the heap 16 more:
 *   the site table probed, the writable heap route checked against the
 *   filter), as before the filter's;
 * - every pool closed, no reload window open: a heap route in code the
 *   policy names taken inline (route_heap_is_truth: a load and a call,
 *   10 more);
 *   30 s later, quiet (trigger.c asks): the heap's own entries again, as
 *   with no policy, until a reload's signal (interpose_quiet).
 * No lock, no syscall, no symbol look-up on these paths: decisions are
 * made once per call site in resolve.c, and which entries are in force
 * once per arming, dlopen, quiet or reload (interpose_armed, the dlopen
 * stub, interpose_quiet).
 *
 * The heap's table works from the first instruction of the process (it
 * finds the allocator on its first call, heap.c).  errno is left as the
 * heap or the pool leaves it.
 */
#define _GNU_SOURCE
#include "interpose.h"
#include "stderr.h"
#include "resolve.h"
#include "armed.h"
#include "arena.h"
#include "fault.h"
#include "fill.h"
#include "heap.h"
#include "learn.h"
#include "site.h"
#include "route.h"
#include "reload.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>


#define CALLER() ((uintptr_t)__builtin_return_address(0))
/* Where the program's call pushed CALLER(): the interposer's CFA less a
 * word (resolve.c reads a wrapper's caller off the stack from there).
 * Evaluated in the function the program called, or the one its entry
 * stub jumped to; 0 where not known. */
#define SLOT() ((uintptr_t)__builtin_dwarf_cfa() - sizeof(void *))

/* Where an allocation from return address ra goes, when a policy is armed:
 * a pool object, or NULL for "the heap".  The common case, a site that was
 * seen before and goes to the heap, is one table probe (after one TLS load). */
static inline void *route_as(size_t size, size_t align, uintptr_t ra, uintptr_t slot, bool move)
{
	struct site_hit h;
	/* The shim's own allocations (reading symbols, say) go to the heap and
	 * take no slot: their pages of the table stay untouched.  So do those
	 * made while a violation is handled (fault.c: a sanitizer's first
	 * report allocates), without a look at the table, which may be what
	 * the fault is about. */
	if (unlikely(shim_is_busy()))
		return NULL;
	if (unlikely(!site_lookup_home(ra, &h)))
		h = site_lookup_slow(ra);
	if (likely(h.route == SITE_ROUTE_HEAP) && (likely(!site_maybe_policy(ra)) || route_heap_is_truth()))
		return NULL;
	return route_slow(size, align, ra, slot, h, move);
}

static inline void *route(size_t size, size_t align, uintptr_t ra, uintptr_t slot)
{
	return route_as(size, align, ra, slot, false);
}

/* malloc from a site that is not known to go to the heap (first seen, a
 * wrapper, or a pool's); apart, so that malloc's fast paths stay short. */
static __attribute__((noinline)) void *malloc_routed(size_t size, uintptr_t ra, uintptr_t slot)
{
	void *p = route(size, PM_ALIGN, ra, slot);
	return p ? p : heap_next.malloc(size);
}

/* free() of pool object p: checked and counted (for learning too). */
static void note_free(void *p, const char *api)
{
	pool_note_free(p, api);
	learn_note_free(p);
}

/* free once the arena is reserved: 6 instructions past the entry's jump
 * (the range compare of arena_contains, a jump to the heap's free). */
void free_checked(void *p)
{
	if (unlikely(arena_contains(p))) {
		/* Pool memory is permanent by design: counted, never reused. */
		note_free(p, "free");
		return;
	}
	heap_next.free(p);
}

static void *realloc_from(void *old, size_t size, uintptr_t ra, uintptr_t slot);
static void *realloc_heap(void *old, size_t size, uintptr_t ra, uintptr_t slot);

/* The routing entries, in force while a policy routes (heap_set_routed).
 * malloc from a site seen before that goes to the heap: 16 instructions
 * past the entry's jump (site_is_heap: the return address hashed, its
 * slot's one word, address and route, compared, 9; then that writable
 * word's heap route checked against the read-only filter of the policy's
 * code, site_maybe_policy: a shift, a truncation, a byte compared, 4; the
 * jump to the heap's malloc).  Everything else: malloc_routed. */
static inline void *malloc_at(size_t size, uintptr_t ra, uintptr_t slot)
{
	struct site *t = site_armed;
	if (likely(site_is_heap(t, ra)) && (likely(!site_maybe_policy(ra)) || route_heap_is_truth()))
		return heap_next.malloc(size);
	return malloc_routed(size, ra, slot);
}

static inline void *calloc_at(size_t n, size_t size, uintptr_t ra, uintptr_t slot)
{
	size_t total;
	if (unlikely(__builtin_mul_overflow(n, size, &total))) {
		errno = ENOMEM;
		return NULL;
	}
	/* Pool memory is never reused inside a span and spans are committed
	 * fresh, so it is already zero (checked by the unit tests). */
	void *p = route(total, PM_ALIGN, ra, slot);
	return p ? p : heap_next.calloc(n, size);
}

/* Heap objects stay on the heap (but realloc_heap's moves); realloc(NULL)
 * is a malloc to route. */
static inline void *realloc_at(void *old, size_t size, uintptr_t ra, uintptr_t slot)
{
	if (likely(!arena_contains(old)) && likely(old != NULL))
		return realloc_heap(old, size, ra, slot);
	return realloc_from(old, size, ra, slot);
}

/* realloc once the arena is reserved and no policy routes: the range
 * compare (realloc(NULL) is not in the arena), 6 instructions past the
 * entry's jump. */
static void *realloc_checked(void *old, size_t size)
{
	if (likely(!arena_contains(old)))
		return heap_next.realloc(old, size);
	return realloc_from(old, size, 0, 0);
}

/* The exported malloc, free, calloc and realloc are one jump through the
 * read-only entry table (heap.h): the heap's own functions while nothing
 * routes and no pool memory exists (2 instructions more than the
 * allocator's own: the endbr64 and the jump), the checked free and
 * realloc once the arena is reserved, the routing entries while a policy
 * routes.  On x86-64 each is two instructions of assembly, so that the
 * entry reached by the jump finds the program's return address where a
 * call left it, whatever the optimisation (a C tail call is not one at
 * -O1); elsewhere (or built with -DPMALLOC_C_ENTRIES), C that passes the
 * return address on, and dlopen is not interposed: a policy always routes. */
#define ENTRY_STR_(x) #x
#define ENTRY_STR(x) ENTRY_STR_(x)
#if defined(__x86_64__) && !defined(PMALLOC_C_ENTRIES)
#define INTERPOSE_ASM_ENTRIES 1
#ifdef __CET__
#define ENTRY_ENDBR "endbr64\n"
#else
#define ENTRY_ENDBR ""
#endif
#define ENTRY_STUB(name, off)                                                                     \
	".globl " #name "\n.type " #name ", @function\n.p2align 4\n" #name ":\n" ENTRY_ENDBR        \
	"jmp *heap_page+" ENTRY_STR(off) "(%rip)\n.size " #name ", .-" #name "\n"
__asm__(".text\n" ENTRY_STUB(malloc, HEAP_ENTRY_MALLOC) ENTRY_STUB(free, HEAP_ENTRY_FREE)
	ENTRY_STUB(calloc, HEAP_ENTRY_CALLOC) ENTRY_STUB(realloc, HEAP_ENTRY_REALLOC));

/* The table's entries (also where the filter's send what they do not
 * take: hidden and kept for the assembly's jumps). */
__attribute__((used, visibility("hidden"))) void *malloc_entry(size_t size);
__attribute__((used, visibility("hidden"))) void *calloc_entry(size_t n, size_t size);
__attribute__((used, visibility("hidden"))) void *realloc_entry(void *old, size_t size);

void *malloc_entry(size_t size)
{
	return malloc_at(size, CALLER(), SLOT());
}

void *calloc_entry(size_t n, size_t size)
{
	return calloc_at(n, size, CALLER(), SLOT());
}

void *realloc_entry(void *old, size_t size)
{
	return realloc_at(old, size, CALLER(), SLOT());
}

/* The filter's entries, in force while the policy's rules resolve and the
 * filter marks every call site a rule may name: the read-only filter of
 * the code the policy names (site.h) first, so that a call from code no
 * rule can name goes to the heap without a look at the site table.  The
 * code of each object loaded when the policy was armed is marked whole
 * until its symbols are read (resolve.c); an object a dlopen brings puts
 * the table's entries back in (its code is not in the filter until it is
 * read, at its first allocation, from the table's path); a pool that
 * takes every site ("*") keeps the table's entries.
 *
 * In assembly too: the filter's index is bits 8..23
 * of the return address, one load from the stack where the call left it
 * (C loads, shifts and truncates: 3 instructions more).  malloc and
 * calloc 6 instructions (endbr64, the index, the filter's address, the
 * byte compared, the branch, the jump to the heap); realloc 10 (and the
 * range compare of arena_contains).  What the filter sends on is the
 * table's entry, reached by a jump: the return address stays the
 * program's. */
static_assert(SITE_POLICY_SHIFT == 8 && SITE_POLICY_GRANULES == 1u << 16, "the index is the return address's bytes 1 and 2");
static_assert(offsetof(struct unit_map, base) == 0 && offsetof(struct unit_map, size) == 8, "arena_contains in assembly");
static_assert(offsetof(struct heap_ops, malloc) == 0 && offsetof(struct heap_ops, calloc) == 16 &&
		      offsetof(struct heap_ops, realloc) == 24, "the heap's entries in assembly");
#define FILTER_ENTRY(name, slow, heap_off)                                                         \
	".globl " #name "\n.hidden " #name "\n.type " #name ", @function\n.p2align 4\n" #name ":\n"    \
	ENTRY_ENDBR "movzwl 1(%rsp), %eax\nlea site_policy(%rip), %rdx\ncmpb $0, (%rdx,%rax)\n"          \
	"jne " #slow "\n" "jmp *heap_page+" #heap_off "(%rip)\n.size " #name ", .-" #name "\n"
__asm__(".text\n" FILTER_ENTRY(malloc_filter_entry, malloc_entry, 0)
	FILTER_ENTRY(calloc_filter_entry, calloc_entry, 16)
	".globl realloc_filter_entry\n.hidden realloc_filter_entry\n.type realloc_filter_entry, @function\n"
	".p2align 4\nrealloc_filter_entry:\n" ENTRY_ENDBR
	"movzwl 1(%rsp), %eax\nlea site_policy(%rip), %rdx\ncmpb $0, (%rdx,%rax)\njne realloc_entry\n"
	"mov %rdi, %rax\nsub units_ro(%rip), %rax\ncmp units_ro+8(%rip), %rax\njb realloc_entry\n"
	"jmp *heap_page+24(%rip)\n.size realloc_filter_entry, .-realloc_filter_entry\n");
void *malloc_filter_entry(size_t size) __attribute__((visibility("hidden")));
void *calloc_filter_entry(size_t n, size_t size) __attribute__((visibility("hidden")));
void *realloc_filter_entry(void *old, size_t size) __attribute__((visibility("hidden")));

/* free needs no routing: the heap's own until the first span is made,
 * the checked one from then on (heap_set_checked). */
static const struct heap_entries routing_entries = {
	.malloc = malloc_entry, .calloc = calloc_entry, .realloc = realloc_entry,
};
static const struct heap_entries filter_entries = {
	.malloc = malloc_filter_entry, .calloc = calloc_filter_entry, .realloc = realloc_filter_entry,
};
#else
#define INTERPOSE_ASM_ENTRIES 0
/* The routing functions are called here with the return address; the
 * table's routing entries are never jumped through. */
static const struct heap_entries routing_entries = { .realloc = realloc_checked };

PMALLOC_EXPORT void *malloc(size_t size)
{
	if (likely(!heap_page.routed))
		return heap_page.entry.malloc(size);
	return malloc_at(size, CALLER(), SLOT());
}

PMALLOC_EXPORT void free(void *p)
{
	heap_page.entry.free(p);
}

PMALLOC_EXPORT void *calloc(size_t n, size_t size)
{
	if (likely(!heap_page.routed))
		return heap_page.entry.calloc(n, size);
	return calloc_at(n, size, CALLER(), SLOT());
}

PMALLOC_EXPORT void *realloc(void *old, size_t size)
{
	if (likely(!heap_page.routed))
		return heap_page.entry.realloc(old, size);
	return realloc_at(old, size, CALLER(), SLOT());
}
#endif

/* p, a pool object of size bytes just routed from ra, made safe for the
 * shim to copy into: the caller holds a fill (fill.c) until its copy is
 * done, so no protect can come in between.  One may have come before the
 * fill: then p is read-only already, and is given back for another object
 * (from the pool, or the heap), taken now that none can.  NULL when the
 * heap has nothing. */
static cold void *pool_fillable(void *p, size_t size, uintptr_t ra, const char *api)
{
	fill_begin();
	if (likely(!pool_is_protected(p)))
		return p;
	note_free(p, api);
	p = route(size, PM_ALIGN, ra, 0);
	return p ? p : heap_next.malloc(size);
}

static cold void *realloc_from(void *old, size_t size, uintptr_t ra, uintptr_t slot)
{
	if (!old) {
		void *p = heap_page.routed ? route(size, PM_ALIGN, ra, slot) : NULL;
		return p ? p : heap_next.malloc(size);
	}
	if (likely(!arena_contains(old)))
		return heap_next.realloc(old, size);   /* heap objects stay on the heap */
	if (size == 0) {
		note_free(old, "realloc");
		return NULL;
	}
	size_t have = pool_usable_size(old, "realloc");
	if (size <= have && !pool_is_protected(old))
		return old;
	void *p = heap_page.routed ? route(size, PM_ALIGN, ra, slot) : NULL;
	bool fill = p != NULL;
	p = fill ? pool_fillable(p, size, ra, "realloc") : heap_next.malloc(size);
	if (p) {
		memcpy(p, old, have < size ? have : size);
		note_free(old, "realloc");
	}
	if (fill)
		fill_end();
	return p;
}

/* realloc of heap block old from ra: a site of a pool that takes until its
 * trigger (take = "until-trigger", enforce) moves it into the pool while
 * the pool takes: learning saw the block grow in the pool (where its first
 * allocation went), so a proposal naming the realloc's site (and not the
 * first allocation's, freed by the move as learning counts it) still
 * protects what grew.  Every other heap block stays on the heap.  Cost:
 * a site seen before that goes to the heap, the table probe of malloc's
 * fast path; a move, an allocation, a copy and a free. */
static cold void *realloc_heap(void *old, size_t size, uintptr_t ra, uintptr_t slot)
{
	struct site *t = site_armed;
	if (size == 0 || site_is_heap(t, ra))
		return heap_next.realloc(old, size);
	void *p = route_as(size, PM_ALIGN, ra, slot, true);
	if (!p)
		return heap_next.realloc(old, size);
	p = pool_fillable(p, size, ra, "realloc");
	if (p) {
		size_t have = heap_next.usable_size(old);
		memcpy(p, old, have < size ? have : size);
		heap_next.free(old);
	}
	fill_end();
	return p;
}

PMALLOC_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_from(old, total, CALLER(), SLOT());
}

static void *aligned_from(size_t align, size_t size, uintptr_t ra, uintptr_t slot)
{
	void *p = heap_page.routed ? route(size, align, ra, slot) : NULL;
	return p ? p : heap_next.memalign(align, size);
}

static bool power_of_two(size_t a)
{
	return a && !(a & (a - 1));
}

static __attribute__((noinline)) int posix_memalign_from(void **ret, size_t align, size_t size, uintptr_t ra,
							   uintptr_t slot)
{
	if (!power_of_two(align) || align % sizeof(void *))
		return EINVAL;
	int e = errno;
	void *p = aligned_from(align, size, ra, slot);
	if (!p) {
		int r = errno;
		errno = e;
		return r ? r : ENOMEM;
	}
	errno = e;
	*ret = p;
	return 0;
}

PMALLOC_EXPORT int posix_memalign(void **ret, size_t align, size_t size)
{
	/* Not routing (no policy, or quiet): the heap's own posix_memalign, a
	 * tail call with no frame of ours, where memalign through
	 * posix_memalign_from cost its frame and its errno's save and restore
	 * (nginx's every request makes two: 24 instructions over glibc's). */
	int (*own)(void **, size_t, size_t) = heap_page.real.posix_memalign;
	if (likely(!heap_page.routed) && own)
		return own(ret, align, size);
	return posix_memalign_from(ret, align, size, CALLER(), SLOT());
}

PMALLOC_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned_from(align, size, CALLER(), SLOT());
}

PMALLOC_EXPORT void *memalign(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned_from(align, size, CALLER(), SLOT());
}

PMALLOC_EXPORT void *valloc(size_t size)
{
	return aligned_from((size_t)getpagesize(), size, CALLER(), SLOT());
}

PMALLOC_EXPORT void *pvalloc(size_t size)
{
	size_t ps = (size_t)getpagesize();
	size_t total = ALIGN_UP(size ? size : 1, ps);
	if (total < size) {
		errno = ENOMEM;
		return NULL;
	}
	return aligned_from(ps, total, CALLER(), SLOT());
}

/* 6 instructions: NULL is not in the arena, and goes to the heap's own,
 * which answers 0 for it (glibc, jemalloc, tcmalloc and mimalloc alike):
 * redis asks 9 times a request, and a test of its own here cost it 18
 * instructions a request. */
PMALLOC_EXPORT size_t malloc_usable_size(void *p)
{
	if (arena_contains(p))
		return pool_usable_size(p, "malloc_usable_size");
	return heap_next.usable_size(p);
}

/* strdup and strndup copy into what they route: into a pool object, under
 * a fill (pool_fillable), so that a protect from another thread cannot
 * make the shim's own copy fault. */
PMALLOC_EXPORT char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	void *p = heap_page.routed ? route(n, PM_ALIGN, CALLER(), SLOT()) : NULL;
	if (likely(!p)) {
		p = heap_next.malloc(n);
		return p ? memcpy(p, s, n) : NULL;
	}
	p = pool_fillable(p, n, CALLER(), "strdup");
	if (p)
		memcpy(p, s, n);
	fill_end();
	return p;
}

PMALLOC_EXPORT char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *p = heap_page.routed ? route(n + 1, PM_ALIGN, CALLER(), SLOT()) : NULL;
	bool fill = p != NULL;
	p = fill ? pool_fillable(p, n + 1, CALLER(), "strndup") : heap_next.malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	if (fill)
		fill_end();
	return p;
}

/* SIGSEGV stays the shim's: the program's handler is recorded as the one
 * to chain to for every fault that is not a write to pool memory, by
 * whichever of libc's entry points it is installed (issue 27: signal in
 * every spelling, bsd_signal, sysv_signal, __sysv_signal, ssignal, sigset,
 * sigignore, sigaction, __sigaction; sighold is sigmask.c's).  A raw
 * rt_sigaction is found at the next protect (fault_recheck). */
PMALLOC_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
sighandler_t bsd_signal(int sig, sighandler_t handler);

static bool shim_handles(int sig)
{
	return sig == SIGSEGV || sig == SIGTRAP || learn_stop_signal(sig) || reload_signal(sig);
}

PMALLOC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (reload_signal(sig) || learn_stop_signal(sig)) {
		/* A reload opens a window (reload.c); learn mode notes the
		 * shutdown (learn_stop.c). */
		struct sigaction copy;
		if (act) {
			copy = *act;
			fault_filter_mask(&copy.sa_mask);
			act = &copy;
		}
		int r = reload_signal(sig) ? reload_sigaction(sig, act, old) : learn_stop_sigaction(sig, act, old);
		if (r < 0) {
			errno = -r;
			return -1;
		}
		return 0;
	}
	return fault_set_program_action(sig, act, old);
}

PMALLOC_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

/* A handler installed with flags and a mask, as libc's signal functions
 * would; the old handler, or SIG_ERR. */
static sighandler_t install_as(int sig, sighandler_t handler, int flags, bool self_masked)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (self_masked && sigaddset(&sa.sa_mask, sig) < 0)
		return SIG_ERR;
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

typedef sighandler_t (*signal_fn)(int, sighandler_t);

/* BSD semantics, as glibc's signal(). */
PMALLOC_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	if (!shim_handles(sig)) {
		signal_fn fn = REAL(bsd_signal, signal_fn);
		return fn ? fn(sig, handler) : SIG_ERR;
	}
	return install_as(sig, handler, SA_RESTART, true);
}

PMALLOC_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	return bsd_signal(sig, handler);
}

PMALLOC_EXPORT sighandler_t ssignal(int sig, sighandler_t handler)
{
	return bsd_signal(sig, handler);
}

/* System V semantics: what signal() is under -std=c99 (__sysv_signal):
 * the handler runs once, unmasked. */
PMALLOC_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
	if (!shim_handles(sig)) {
		signal_fn fn = REAL(__sysv_signal, signal_fn);
		return fn ? fn(sig, handler) : SIG_ERR;
	}
	return install_as(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

PMALLOC_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return __sysv_signal(sig, handler);
}

/* sigset(SIG_HOLD) of a fault signal blocks nothing (a blocked fault
 * signal kills without any handler); the disposition is the program's. */
PMALLOC_EXPORT sighandler_t sigset(int sig, sighandler_t disp)
{
	if (!shim_handles(sig)) {
		signal_fn fn = REAL(sigset, signal_fn);
		return fn ? fn(sig, disp) : SIG_ERR;
	}
	struct sigaction old;
	if (disp == SIG_HOLD) {
		if (sigaction(sig, NULL, &old) < 0)
			return SIG_ERR;
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		fault_filter_mask(&set);
		return os_sigmask(SIG_BLOCK, &set, NULL) < 0 ? SIG_ERR : old.sa_handler;
	}
	sighandler_t was = install_as(sig, disp, 0, false);
	if (was != SIG_ERR) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		(void)os_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	return was;
}

PMALLOC_EXPORT int sigignore(int sig)
{
	if (!shim_handles(sig)) {
		typedef int (*ignore_fn)(int);
		ignore_fn fn = REAL(sigignore, ignore_fn);
		if (!fn) {
			errno = ENOSYS;
			return -1;
		}
		return fn(sig);
	}
	return install_as(sig, SIG_IGN, 0, false) == SIG_ERR ? -1 : 0;
}

/* dlclose: an object may go, and another come to its addresses; what was
 * decided for return addresses there must be decided again.  (dlopen is not
 * interposed: glibc resolves a relative name against its *caller's*
 * RUNPATH, which a wrapper would change; new objects are found at their
 * first allocation instead.) */
PMALLOC_EXPORT int dlclose(void *handle)
{
	typedef int (*fn_t)(void *);
	fn_t fn = REAL(dlclose, fn_t);
	if (!fn)
		fatal("dlclose", "glibc's dlclose not found");
	int r = fn(handle);
	if (shim && !shim_is_busy()) {
		int e = errno;
		int busy = shim_busy_enter();
		resolve_forget_unloaded();
		shim_busy_leave(busy);
		errno = e;
	}
	return r;
}

/* Whether allocations are routed: the routing entries in the heap's table
 * (heap_set_routed) or not.  A policy none of whose rules resolves among
 * the objects loaded cannot route anything: its process runs the idle
 * entries, as one with no policy, until a dlopen (interposed below) may
 * bring in an object a rule names; the routing entries are then put in,
 * and the new object is found at its first allocation as ever (resolve.c).
 * Only where dlopen is interposed (x86-64): elsewhere a policy always
 * routes.  mode_lock orders the deciders (start-up, dlopen). */
static pthread_mutex_t mode_lock = PTHREAD_MUTEX_INITIALIZER;
static bool dlopen_seen;
static const struct heap_entries *mode_entries;
/* Quiet: the heap's own entries in, mode_entries kept for a reload. */
static bool quiet_now;

/* free and realloc once pool memory may exist (the arena's reserve hook,
 * at the first span). */
static const struct heap_entries checked_entries = { .free = free_checked, .realloc = realloc_checked };

/* The checked free and realloc stay out until the first span (its
 * reserve hook): put in at arming with the routing entries, they saved
 * the first span's two mprotects (5 us of start-up) but cost a process
 * whose sites never allocate 6 instructions a free for its whole life
 * (the churn bench's "sites unused": 1.043 -> 1.057 x glibc). */
static void route_by(const struct heap_entries *e)
{
	if (shim && site_armed && mode_entries != e) {
		mode_entries = e;
		if (!quiet_now)         /* quiet: every pool closed, nothing to route */
			heap_set_routed(e);
	}
}

/* Once every pool is closed (take = "until-trigger") every allocation
 * goes to the heap; routing is kept a while for the late sites it counts
 * and says (take.c), then trigger.c asks for quiet: malloc costs what the
 * idle shim's does (the routing entries' test of each call site, and a
 * wrapper's heap word, were 250 instructions of an nginx request), and
 * late allocations are no longer counted.  A reload window's return to
 * the main thread asks for the routing entries again (its allocations go
 * to a new generation), and its end for quiet after the same while. */
void interpose_quiet(bool quiet)
{
	pthread_mutex_lock(&mode_lock);
	if (quiet != quiet_now && mode_entries) {
		heap_set_routed(quiet ? NULL : mode_entries);
		quiet_now = quiet;
		debug_printf("%s", quiet ? "every pool closed a while: allocations go to the heap unrouted"
				       : "allocations routed again (a reload)");
	}
	pthread_mutex_unlock(&mode_lock);
}

/* The child of a fork made while another thread decided: the lock free
 * again (what it decided is in the heap's table, whole or not yet). */
static void mode_lock_child(void)
{
	if (pthread_mutex_trylock(&mode_lock) != 0)
		pthread_mutex_init(&mode_lock, NULL);
	else
		pthread_mutex_unlock(&mode_lock);
}

void interpose_armed(void)
{
	static _Atomic bool once;
	if (!atomic_exchange(&once, true))
		pthread_atfork(NULL, NULL, mode_lock_child);
	pthread_mutex_lock(&mode_lock);
	if (!INTERPOSE_ASM_ENTRIES || dlopen_seen || (resolve_may_route() && shim && shim->match_all >= 0)) {
		route_by(&routing_entries);
	} else if (resolve_may_route()) {
#if INTERPOSE_ASM_ENTRIES
		route_by(&filter_entries);
#endif
	} else {
		debug_printf("no rule of the policy resolves among the objects loaded: allocations not routed until a dlopen");
	}
	pthread_mutex_unlock(&mode_lock);
}

#if INTERPOSE_ASM_ENTRIES
/* dlopen: the routing entries put in (when not yet), then glibc's dlopen
 * by a jump, never a call: glibc takes the object to load relative to its
 * caller (the caller's RUNPATH, $ORIGIN, namespace), which must stay the
 * program's.  The stub keeps the two arguments across the note. */
__attribute__((used, visibility("hidden"))) void *interpose_dlopen_note(void);
void *interpose_dlopen_note(void)
{
	int e = errno;
	pthread_mutex_lock(&mode_lock);
	dlopen_seen = true;
	route_by(&routing_entries);
	pthread_mutex_unlock(&mode_lock);
	typedef void *(*fn_t)(const char *, int);
	fn_t fn = REAL(dlopen, fn_t);
	if (!fn)
		fatal("dlopen", "glibc's dlopen not found");
	errno = e;
	return (void *)fn;
}

__asm__(".text\n.globl dlopen\n.type dlopen, @function\n.p2align 4\ndlopen:\n" ENTRY_ENDBR
	"push %rdi\npush %rsi\nsub $8, %rsp\ncall interpose_dlopen_note\nadd $8, %rsp\n"
	"pop %rsi\npop %rdi\njmp *%rax\n.size dlopen, .-dlopen\n");
#endif

void interpose_arena_reserved(void)
{
	heap_set_checked(&checked_entries);
}
