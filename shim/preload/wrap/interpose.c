/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interpose.c - the exported malloc family, thin: pass to the heap (the
 * program's own allocator, heap.c) unless a policy is armed and the caller
 * is a named site, and keep the heap's hands off pool pointers.
 *
 * Costs (x86-64 instructions, callgrind; make bench measures the churn):
 * no policy, malloc 5 (a test of site_armed, then the heap's malloc by one
 * indirect jump, as through a PLT), free 2 (one jump through the read-only
 * table: the heap's free until pool memory exists, then free_checked, 6
 * more: one range compare), realloc 8 (the range compare and a NULL test);
 * armed policy, malloc from a site that goes to the heap 20 (site_is_heap:
 * its return address hashed, its slot's one word compared; then that
 * writable word's heap route checked against the read-only filter of the
 * policy's code, site_maybe_policy: a shift and a byte), realloc of a heap
 * block the same probe more (realloc_heap).  No lock, no syscall,
 * no symbol look-up on these paths: decisions are made once per call site
 * in resolve.c.
 *
 * The heap's table works from the first instruction of the process (it
 * finds the allocator on its first call, heap.c).  errno is left as the
 * heap or the pool leaves it.
 */
#define _GNU_SOURCE
#include "interpose.h"
#include "resolve.h"
#include "shim.h"
#include "arena.h"
#include "fault.h"
#include "fill.h"
#include "heap.h"
#include "learn.h"
#include "site.h"
#include "rules_msg.h"
#include "take.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>


#define CALLER() ((uintptr_t)__builtin_return_address(0))

/* The rare part of routing: a site seen for the first time, an allocation
 * wrapper (whose caller decides), a site that goes to a pool, or the shim
 * allocating for itself.  NULL means "the heap". */
static cold void *route_slow(size_t size, size_t align, uintptr_t ra, struct site_hit h, bool move)
{
	const struct shim_state *st = shim;
	if (shim_is_busy())
		return NULL;
	/* Every pool closed (take = "until-trigger", each one's trigger
	 * fired; enforce or audit): every allocation goes to the heap, so a
	 * heap route is the truth whatever its word says, and an allocation
	 * through a wrapper is resolved to its caller (an unwind, some 9,000
	 * instructions) only for the first few through each wrapper call, to
	 * count and say their sites (take.c).  The read-only closed byte
	 * (site.h), set when the last pool was protected, says so in one
	 * load: a server's serving then pays nothing here for a heap route
	 * in code the policy names (the range search of
	 * resolve_policy_route) and a few loads for a wrapper, not an
	 * unwind. */
	if (site_policy_closed()) {
		if (h.route == SITE_ROUTE_HEAP)
			return NULL;
		if (h.route == SITE_ROUTE_WRAPPER && !take_resolve_late(h.id))
			return NULL;
	}
	/* The cached route is a writable word: believed only as far as the
	 * read-only policy agrees.  A heap route for code the policy names
	 * (its filter bit sent it here), a wrapper route for code that is no
	 * wrapper, or a pool number past the state's pools is decided again. */
	if (h.route == SITE_ROUTE_HEAP || h.route == SITE_ROUTE_WRAPPER) {
		int truth = resolve_policy_route(ra);
		if (truth == SITE_ROUTE_HEAP && h.route == SITE_ROUTE_HEAP)
			return NULL;
		if (truth != h.route) {
			h.route = truth;
			site_set_route(h.id, truth);
		}
	} else if (h.route >= (int)st->n_pools) {
		h.route = SITE_ROUTE_UNKNOWN;
	}
	if (h.route == SITE_ROUTE_UNKNOWN || h.route == SITE_ROUTE_WRAPPER) {
		int e = errno;       /* a successful malloc leaves errno alone */
		int busy = shim_busy_enter();
		if (h.route == SITE_ROUTE_UNKNOWN)
			h.route = resolve_route(ra, h.id);
		if (h.route == SITE_ROUTE_WRAPPER)
			h = resolve_through_wrapper(ra);
		shim_busy_leave(busy);
		errno = e;
	}
	if (h.route < 0)
		return NULL;
	/* A heap block moved by realloc (realloc_heap): only into an enforced
	 * pool that takes until its trigger, while it takes. */
	if (move && (!st->pools[h.route].until_trigger || st->image->mode == POLICY_MODE_LEARN ||
		     pool_closed(st->pools[h.route].pool)))
		return NULL;
	align = align < PM_ALIGN ? PM_ALIGN : align;
	/* take = "until-trigger" (learn mode's pools too): the read-only
	 * state's word.  Learning finds each allocation's context (learn.h);
	 * enforce, once the pool closed, counts the site and goes to the heap
	 * (one more load and test per routed allocation while open). */
	if (unlikely(st->pools[h.route].until_trigger)) {
		if (st->image->mode == POLICY_MODE_LEARN && learn_active())
			return learn_alloc((size_t)h.route, size, align, ra, h.id);
		if (pool_closed(st->pools[h.route].pool)) {
			switch (take_note_late((size_t)h.route, h.id, size)) {
			case TAKE_TELL_NOW:
				rules_msg_answer();
				break;
			case TAKE_TELL_RATED:
				rules_msg_send(RULES_MSG_SITES);
				break;
			case TAKE_TELL_NONE:
				break;
			}
			return NULL;
		}
	}
	/* NULL from the pool: it reached max_bytes (said once), or closed
	 * meanwhile; heap it is. */
	return pool_alloc(st->pools[h.route].pool, size, align, h.id);
}

/* Where an allocation from return address ra goes, when a policy is armed:
 * a pool object, or NULL for "the heap".  The common case, a site that was
 * seen before and goes to the heap, is one table probe (after one TLS load). */
static inline void *route_as(size_t size, size_t align, uintptr_t ra, bool move)
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
	if (likely(h.route == SITE_ROUTE_HEAP) && likely(!site_maybe_policy(ra)))
		return NULL;
	return route_slow(size, align, ra, h, move);
}

static inline void *route(size_t size, size_t align, uintptr_t ra)
{
	return route_as(size, align, ra, false);
}

/* malloc from a site that is not known to go to the heap (first seen, a
 * wrapper, or a pool's); apart, so that malloc's fast paths stay short. */
static __attribute__((noinline)) void *malloc_routed(size_t size, uintptr_t ra)
{
	void *p = route(size, PM_ALIGN, ra);
	return p ? p : heap_next.malloc(size);
}

/* Fast paths (x86-64, callgrind): no policy, 5 instructions (endbr64, a
 * load and a test of site_armed, in the read-only page, the jump to the
 * heap's malloc); armed, a site seen before that goes to the heap, 20
 * (site_is_heap: the return address hashed, its slot's one word, address
 * and route, compared; then the heap route, a writable word, checked
 * against the read-only filter of the policy's code, site_maybe_policy:
 * 6).  Everything else: malloc_routed. */
PMALLOC_EXPORT void *malloc(size_t size)
{
	struct site *t = site_armed;
	if (likely(!t) || likely(site_is_heap(t, CALLER()) && !site_maybe_policy(CALLER())))
		return heap_next.malloc(size);
	return malloc_routed(size, CALLER());
}

/* free() of pool object p: checked and counted (for learning too). */
static void note_free(void *p, const char *api)
{
	pool_note_free(p, api);
	learn_note_free(p);
}

void free_checked(void *p)
{
	if (unlikely(arena_contains(p))) {
		/* Pool memory is permanent by design: counted, never reused. */
		note_free(p, "free");
		return;
	}
	heap_next.free(p);
}

/* Fast path: one indirect jump through the read-only table (heap.h) to the
 * heap's free while no arena exists (2 instructions with endbr64), else to
 * free_checked (8: the range compare of arena_contains). */
PMALLOC_EXPORT void free(void *p)
{
	heap_page.free_entry(p);
}

PMALLOC_EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;
	if (unlikely(__builtin_mul_overflow(n, size, &total))) {
		errno = ENOMEM;
		return NULL;
	}
	/* Pool memory is never reused inside a span and spans are committed
	 * fresh, so it is already zero (checked by the unit tests). */
	void *p = shim ? route(total, PM_ALIGN, CALLER()) : NULL;
	return p ? p : heap_next.calloc(n, size);
}

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
	p = route(size, PM_ALIGN, ra);
	return p ? p : heap_next.malloc(size);
}

static cold void *realloc_from(void *old, size_t size, uintptr_t ra)
{
	if (!old) {
		void *p = shim ? route(size, PM_ALIGN, ra) : NULL;
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
	void *p = shim ? route(size, PM_ALIGN, ra) : NULL;
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
static cold void *realloc_heap(void *old, size_t size, uintptr_t ra)
{
	struct site *t = site_armed;
	if (!t || size == 0 || site_is_heap(t, ra))
		return heap_next.realloc(old, size);
	void *p = route_as(size, PM_ALIGN, ra, true);
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

PMALLOC_EXPORT void *realloc(void *old, size_t size)
{
	/* Heap objects stay on the heap (but realloc_heap's moves);
	 * realloc(NULL) is a malloc to route. */
	if (likely(!arena_contains(old)) && likely(old != NULL))
		return shim ? realloc_heap(old, size, CALLER()) : heap_next.realloc(old, size);
	if (!old && !shim)
		return heap_next.realloc(old, size);
	return realloc_from(old, size, CALLER());
}

PMALLOC_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_from(old, total, CALLER());
}

static void *aligned_from(size_t align, size_t size, uintptr_t ra)
{
	void *p = shim ? route(size, align, ra) : NULL;
	return p ? p : heap_next.memalign(align, size);
}

static bool power_of_two(size_t a)
{
	return a && !(a & (a - 1));
}

PMALLOC_EXPORT int posix_memalign(void **ret, size_t align, size_t size)
{
	if (!power_of_two(align) || align % sizeof(void *))
		return EINVAL;
	int e = errno;
	void *p = aligned_from(align, size, CALLER());
	if (!p) {
		int r = errno;
		errno = e;
		return r ? r : ENOMEM;
	}
	errno = e;
	*ret = p;
	return 0;
}

PMALLOC_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned_from(align, size, CALLER());
}

PMALLOC_EXPORT void *memalign(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned_from(align, size, CALLER());
}

PMALLOC_EXPORT void *valloc(size_t size)
{
	return aligned_from((size_t)getpagesize(), size, CALLER());
}

PMALLOC_EXPORT void *pvalloc(size_t size)
{
	size_t ps = (size_t)getpagesize();
	size_t total = ALIGN_UP(size ? size : 1, ps);
	if (total < size) {
		errno = ENOMEM;
		return NULL;
	}
	return aligned_from(ps, total, CALLER());
}

PMALLOC_EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
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
	void *p = shim ? route(n, PM_ALIGN, CALLER()) : NULL;
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
	char *p = shim ? route(n + 1, PM_ALIGN, CALLER()) : NULL;
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
	return sig == SIGSEGV || sig == SIGTRAP || learn_stop_signal(sig);
}

PMALLOC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (learn_stop_signal(sig)) {
		/* Learn mode notes the shutdown (learn_stop.c). */
		struct sigaction copy;
		if (act) {
			copy = *act;
			fault_filter_mask(&copy.sa_mask);
			act = &copy;
		}
		int r = learn_stop_sigaction(sig, act, old);
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
