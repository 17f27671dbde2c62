/*
 * interpose.c - the exported malloc family, thin: pass to glibc unless a
 * policy is armed and the caller is a named site, and keep glibc's hands
 * off pool pointers.
 *
 * Costs (measured in make bench): no policy, one load and a predicted
 * branch over glibc's own malloc; armed policy, plus the return address
 * looked up in the site table (~3 ns).  free() of a heap pointer adds one
 * range compare.  No lock, no syscall, no symbol look-up on these paths:
 * decisions are made once per call site in resolve.c.
 *
 * glibc exports __libc_malloc & co., so no dlsym is needed to reach it and
 * allocation works from the first instruction of the process.  errno is
 * left as glibc or the pool leaves it.
 */
#define _GNU_SOURCE
#include "shim.h"
#include "arena.h"
#include "fault.h"
#include "site.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

const struct shim_state *shim;
__thread int shim_busy __attribute__((tls_model("initial-exec")));

#define CALLER() ((uintptr_t)__builtin_return_address(0))

/* glibc's malloc_usable_size has no __libc_ alias: found once with dlsym. */
static size_t glibc_usable_size(void *p)
{
	typedef size_t (*fn_t)(void *);
	fn_t fn = REAL(malloc_usable_size, fn_t);
	if (!fn)
		fatal("malloc_usable_size", "glibc's malloc_usable_size not found");
	return fn(p);
}

/* The rare part of routing: a site seen for the first time, an allocation
 * wrapper (whose caller decides), a site that goes to a pool, or the shim
 * allocating for itself.  NULL means "the heap". */
static cold void *route_slow(size_t size, size_t align, uintptr_t ra, struct site_hit h)
{
	const struct shim_state *st = shim;
	if (shim_busy)
		return NULL;
	if (h.route == SITE_ROUTE_UNKNOWN || h.route == SITE_ROUTE_WRAPPER) {
		int e = errno;       /* a successful malloc leaves errno alone */
		shim_busy = 1;
		if (h.route == SITE_ROUTE_UNKNOWN)
			h.route = resolve_route(ra, h.id);
		if (h.route == SITE_ROUTE_WRAPPER)
			h = resolve_through_wrapper(ra);
		shim_busy = 0;
		errno = e;
	}
	if (h.route < 0)
		return NULL;
	/* NULL from the pool: it reached max_bytes (said once); heap it is. */
	return pool_alloc(st->pools[h.route].pool, size, align < PM_ALIGN ? PM_ALIGN : align, h.id);
}

/* Where an allocation from return address ra goes, when a policy is armed:
 * a pool object, or NULL for "the heap".  The common case, a site that was
 * seen before and goes to the heap, is one table probe. */
static inline void *route(size_t size, size_t align, uintptr_t ra)
{
	struct site_hit h = site_lookup(ra);
	if (likely(h.route == SITE_ROUTE_HEAP))
		return NULL;
	return route_slow(size, align, ra, h);
}

/* malloc when a policy is armed; apart, so that the unarmed malloc is a
 * test and a jump. */
static __attribute__((noinline)) void *malloc_armed(size_t size, uintptr_t ra)
{
	void *p = route(size, PM_ALIGN, ra);
	return p ? p : __libc_malloc(size);
}

PMALLOC_EXPORT void *malloc(size_t size)
{
	if (likely(!shim))
		return __libc_malloc(size);
	return malloc_armed(size, CALLER());
}

PMALLOC_EXPORT void free(void *p)
{
	if (unlikely(arena_contains(p))) {
		/* Pool memory is permanent by design: counted, never reused. */
		pool_note_free(p, "free");
		return;
	}
	__libc_free(p);
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
	return p ? p : __libc_calloc(n, size);
}

static cold void *realloc_from(void *old, size_t size, uintptr_t ra)
{
	if (!old) {
		void *p = shim ? route(size, PM_ALIGN, ra) : NULL;
		return p ? p : __libc_malloc(size);
	}
	if (likely(!arena_contains(old)))
		return __libc_realloc(old, size);   /* heap objects stay on the heap */
	if (size == 0) {
		pool_note_free(old, "realloc");
		return NULL;
	}
	size_t have = pool_usable_size(old, "realloc");
	if (size <= have && !pool_is_protected(old))
		return old;
	void *p = shim ? route(size, PM_ALIGN, ra) : NULL;
	if (!p)
		p = __libc_malloc(size);
	if (p) {
		memcpy(p, old, have < size ? have : size);
		pool_note_free(old, "realloc");
	}
	return p;
}

PMALLOC_EXPORT void *realloc(void *old, size_t size)
{
	/* Heap objects stay on the heap; realloc(NULL) is a malloc to route. */
	if (likely(!arena_contains(old)) && (likely(old != NULL) || !shim))
		return __libc_realloc(old, size);
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
	return p ? p : __libc_memalign(align, size);
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
	return glibc_usable_size(p);
}

PMALLOC_EXPORT char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	void *p = shim ? route(n, PM_ALIGN, CALLER()) : NULL;
	if (!p)
		p = __libc_malloc(n);
	return p ? memcpy(p, s, n) : NULL;
}

PMALLOC_EXPORT char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *p = shim ? route(n + 1, PM_ALIGN, CALLER()) : NULL;
	if (!p)
		p = __libc_malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* SIGSEGV stays the shim's: the program's handler is recorded as the one
 * to chain to for every fault that is not a write to pool memory. */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);
extern sighandler_t bsd_signal(int, sighandler_t);

PMALLOC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return fault_set_program_action(sig, act, old);
}

PMALLOC_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);     /* BSD semantics, as glibc's signal() */
	if (sig != SIGSEGV && sig != SIGTRAP)
		return bsd_signal(sig, handler);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
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
	if (shim && !shim_busy) {
		int e = errno;
		shim_busy = 1;
		resolve_forget_unloaded();
		shim_busy = 0;
		errno = e;
	}
	return r;
}
