/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api.c - the public pool API of include/pmalloc.h: argument checks and
 * errno, then pool.c does the work.  Thin by design.
 *
 * Every entry validates its pool (NULL is refused gently; anything else
 * that is not a live pool is memory corruption and fatal()); allocations do
 * it on the fast path with one compare of the pool's stamp (pool.h).  No lock is
 * held on return; errno is only written on failure.
 */
#define _GNU_SOURCE
#include "pmalloc.h"
#include "pool.h"
#include "fault.h"
#include "hooks.h"
#include "site.h"
#include "os.h"

#include <errno.h>
#include <string.h>

#define CALLER() caller_site((uintptr_t)__builtin_return_address(0))

/* The site id of return address ra: a per-thread cache of the last one, as
 * a program allocates from one place many times in a row. */
static cold uint64_t caller_site_slow(uintptr_t ra)
{
	uint16_t id = site_id(ra);
	pool_tls.last_ra = ra;
	pool_tls.last_site = id;
	return id;
}

static inline uint64_t caller_site(uintptr_t ra)
{
	if (likely(pool_tls.last_ra == ra))
		return pool_tls.last_site;
	return caller_site_slow(ra);
}

/* A pool that exists can be protected: the fault handler is in place
 * (once; later calls cost a lock and a check). */
static struct pmalloc_pool *with_handler(struct pmalloc_pool *p)
{
	if (p)
		fault_install();
	return p;
}

PMALLOC_EXPORT struct pmalloc_pool *pmalloc_create_pool(void)
{
	return with_handler(pool_create(NULL, 0, 0));
}

PMALLOC_EXPORT struct pmalloc_pool *pmalloc_create_named_pool(const char *name, unsigned int flags)
{
	if (flags & ~PMALLOC_POOL_SEAL) {
		errno = EINVAL;
		return NULL;
	}
	return with_handler(pool_create(name, flags, 0));
}

/* NULL (EINVAL), a pool that is not live (fatal) and everything else
 * uncommon are found by the fast path's compares and handled slowly. */
static inline __attribute__((always_inline)) void *alloc_checked(struct pmalloc_pool *pool, size_t size,
								  uint64_t site, const char *api)
{
	return pool_alloc_api(pool, size, PM_ALIGN, site, api);
}

/* Everything of pmalloc() but its fast path: the call site's id from the
 * thread's cache, the allocation through pool.h's path, then the key and
 * site of the region that served it, for the next call from there. */
static inline __attribute__((always_inline)) void *pmalloc_at(struct pmalloc_pool *pool, size_t size, uintptr_t ra)
{
	uint64_t site = caller_site(ra);
	void *ret = alloc_checked(pool, size, site, "pmalloc");
	struct pool_region *r = pool_active();
	if (ret && r->pool == pool) {
		r->key = (uintptr_t)pool ^ ra;
		r->site = site;
	}
	return ret;
}

#if defined(__x86_64__) && defined(__ELF__) && !defined(PMALLOC_NO_ASM)
/* The fast path, x86-64: 29 instructions (by callgrind in make bench:
 * 29.1 a call with the slow paths amortised).  Written out because the
 * compiler's code for the same C (pool.h's pool_alloc_api) takes 32:
 * it computes the region's address into a register and copies the
 * object's address to the return register.  Every branch out of it
 * jumps to pmalloc_slow(), which starts again with the same checks in C.
 *
 *   rcx  this thread's pool state, %fs-relative (pool_tls)
 *   r8   the active slot's offset in it: masked, always one of the
 *        thread's own slots whatever the word says (issue 27, row 2)
 *   the key (pool ^ return address) compared: the slot is pool's and
 *        its cached site id the caller's
 *   rdx  the size rounded up, less one: size 0 and sizes past
 *        POOL_SMALL_MAX fail the compare
 *   rax  the object (the cursor), rdx the new cursor, checked against
 *        the region's end and stored
 *   the pool's stamp compared with the region's after the store (see
 *        pool.h: a protect either sees the object or this thread sees
 *        its new stamp; the stamp is never another pool's), else the
 *        cursor goes back
 *   the record (span_record(): at << 16 | len is at * 0xffff + the new
 *        cursor), the record pointer and the requested bytes.
 *
 * Why no forged word makes it hand out memory outside a region the pool
 * knows: the slot is always one of this thread's own (the mask), bound
 * to a pool under its lock and linked into its list; whatever its cursor
 * and end say, the next slow path and every protect (which reads the
 * protecting thread's slots from its TLS, not only the list) check that
 * its span is the arena's and the pool's and its cursor inside it, else
 * fatal, before anything it handed out can be left unprotected.  Using
 * another pool's slot takes its key and its stamp forged, two words.
 * Built with -DPMALLOC_NO_ASM, or elsewhere than x86-64, pmalloc() is the
 * same in C (pmalloc_at()). */
/* Reached by a jump from pmalloc(): its return address is pmalloc()'s
 * caller's. */
void *pmalloc_slow(struct pmalloc_pool *pool, size_t size);
__attribute__((noinline, used)) void *pmalloc_slow(struct pmalloc_pool *pool, size_t size)
{
	return pmalloc_at(pool, size, (uintptr_t)__builtin_return_address(0));
}

#define PM_STR_(x) #x
#define PM_STR(x) PM_STR_(x)
#ifdef __CET__
#define PM_ENDBR "endbr64\n\t"
#else
#define PM_ENDBR ""
#endif
static_assert(POOL_SMALL_MAX == 0x40000 && PM_ALIGN == 16 && offsetof(struct pmalloc_pool, stamp) == 8 &&
	      REC_SIZE_SHIFT - ARENA_GRANULE_SHIFT == 12, "the fast path's constants");
__asm__(".text\n\t"
	".globl pmalloc\n\t"
	".type pmalloc, @function\n\t"
	".p2align 4\n"
	"pmalloc:\n\t"
	".cfi_startproc\n\t"
	PM_ENDBR
	"movq (%rsp), %rdx\n\t"
	"movq pool_tls@gottpoff(%rip), %rcx\n\t"
	"movq %fs:" PM_STR(POOL_T_ACTIVE) "(%rcx), %r8\n\t"
	"andl $" PM_STR(POOL_ACTIVE_MASK_IMM) ", %r8d\n\t"
	"xorq %rdi, %rdx\n\t"
	"cmpq %rdx, %fs:" PM_STR(POOL_R_KEY) "(%rcx,%r8)\n\t"
	"jne 1f\n\t"
	"leaq -1(%rsi), %rdx\n\t"
	"orq $15, %rdx\n\t"
	"cmpq $0x3ffff, %rdx\n\t"
	"ja 1f\n\t"
	"movq %fs:" PM_STR(POOL_R_CUR) "(%rcx,%r8), %rax\n\t"
	"leaq 1(%rax,%rdx), %rdx\n\t"
	"cmpq %rdx, %fs:" PM_STR(POOL_R_END) "(%rcx,%r8)\n\t"
	"jb 1f\n\t"
	"movq %rdx, %fs:" PM_STR(POOL_R_CUR) "(%rcx,%r8)\n\t"
	"movq 8(%rdi), %r9\n\t"
	"cmpq %fs:" PM_STR(POOL_R_STAMP) "(%rcx,%r8), %r9\n\t"
	"jne 2f\n\t"
	"imulq $0xffff, %rax, %r9\n\t"
	"addq %r9, %rdx\n\t"
	"shlq $12, %rdx\n\t"
	"orq %fs:" PM_STR(POOL_R_SITE) "(%rcx,%r8), %rdx\n\t"
	"movq %fs:" PM_STR(POOL_R_REC) "(%rcx,%r8), %r9\n\t"
	"movq %rdx, (%r9)\n\t"
	"addq $8, %fs:" PM_STR(POOL_R_REC) "(%rcx,%r8)\n\t"
	"addq %rsi, %fs:" PM_STR(POOL_R_REQUESTED) "(%rcx,%r8)\n\t"
	"ret\n"
	"2:\n\t"
	"movq %rax, %fs:" PM_STR(POOL_R_CUR) "(%rcx,%r8)\n"
	"1:\n\t"
	"jmp pmalloc_slow\n\t"
	".cfi_endproc\n\t"
	".size pmalloc, .-pmalloc\n\t"
	".previous");
#else
PMALLOC_EXPORT void *pmalloc(struct pmalloc_pool *pool, size_t size)
{
	return pmalloc_at(pool, size, (uintptr_t)__builtin_return_address(0));
}
#endif

PMALLOC_EXPORT void *pzalloc(struct pmalloc_pool *pool, size_t size)
{
	/* Pool memory is zero when handed out (never reused inside a span;
	 * a released span is decommitted to fresh pages), as calloc() in
	 * interpose.c relies on.  Cleared anyway: zero-filling is pzalloc's
	 * promise to the program, and must not hang on the arena's internals. */
	void *p = alloc_checked(pool, size, CALLER(), "pzalloc");
	if (p)
		memset(p, 0, size);
	return p;
}

PMALLOC_EXPORT void *pmalloc_array(struct pmalloc_pool *pool, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_checked(pool, total, CALLER(), "pmalloc_array");
}

PMALLOC_EXPORT void *pcalloc(struct pmalloc_pool *pool, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = alloc_checked(pool, total, CALLER(), "pcalloc");
	if (p)
		memset(p, 0, total);
	return p;
}

PMALLOC_EXPORT char *pstrdup(struct pmalloc_pool *pool, const char *s)
{
	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	size_t n = strlen(s) + 1;
	char *p = alloc_checked(pool, n, CALLER(), "pstrdup");
	if (p)
		memcpy(p, s, n);
	return p;
}

PMALLOC_EXPORT void pmalloc_protect_pool(struct pmalloc_pool *pool)
{
	if (!pool)
		return;
	pool_check(pool, "pmalloc_protect_pool");
	(void)fault_recheck(true);
	pool_protect(pool, "pmalloc_protect_pool");
}

PMALLOC_EXPORT void pmalloc_destroy_pool(struct pmalloc_pool *pool)
{
	if (!pool)
		return;
	pool_check(pool, "pmalloc_destroy_pool");
	pool_destroy(pool);
}

PMALLOC_EXPORT int pmalloc_pool_stats(const struct pmalloc_pool *pool, struct pmalloc_stats *st)
{
	if (!pool || !st) {
		errno = EINVAL;
		return -1;
	}
	pool_check(pool, "pmalloc_pool_stats");
	struct pmalloc_pool *p = (struct pmalloc_pool *)(uintptr_t)pool;
	struct pool_totals t;
	pool_totals(p, &t);
	st->objects = t.objects;
	st->requested_bytes = t.requested;
	st->used_bytes = t.used;
	st->protected_bytes = t.protected_bytes;
	st->mapped_bytes = t.mapped;
	st->protect_calls = t.protect_calls;
	st->frees = atomic_load_explicit(&p->frees, memory_order_relaxed);
	st->sealed = pool_seals(p) && os_have_mseal;
	return 0;
}

PMALLOC_EXPORT int pmalloc_is_protected(const void *addr)
{
	return pool_is_read_only(addr);
}

/* Interposition pools exist only in the preloaded shim, whose hook this
 * is; without one, no pool has a name a policy gave it. */
PMALLOC_EXPORT int pmalloc_protect_named(const char *pool)
{
	if (core_hook.protect_named)
		return core_hook.protect_named(pool);
	errno = ENOENT;
	return -1;
}
