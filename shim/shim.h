/*
 * shim.h - the interposition's state: the policy that applies to this
 * process (its image, policy_image.h) and its pools.  Built once by init.c
 * in a page or mapping of its own, the image copied right after the state,
 * then read-only (mprotect'ed, as OpenBSD's malloc_readonly is; sealed too under
 * protection = "seal"): an attacker who can write the heap cannot rewrite
 * where allocations go or which pools protect.  Nothing here points into
 * writable memory but the pool structs (pool.h).
 */
#ifndef PMALLOC_SHIM_H
#define PMALLOC_SHIM_H

#include "arena.h"
#include "common.h"
#include "fmt.h"
#include "policy.h"
#include "policy_image.h"
#include "pool.h"
#include "site.h"

#define SHIM_POOLS_MAX 32

/* Pool i of the state is pool i of the image. */
struct shim_pool {
	struct pmalloc_pool *pool;
	uint32_t call_mask;              /* bit c: on-call trigger for call c */
	uint64_t after_ns;               /* after: trigger, 0 when none */
	bool manual;                     /* manual trigger: pmalloc_protect_named, pmallocctl protect */
	char after_text[24];             /* "after:2s", for reports */
};

struct shim_state {
	const struct pimg_header *image; /* the policy, validated, in this state's mapping */
	uint64_t generation;             /* the daemon's policy generation; 0 from a file */
	size_t n_pools;
	uint32_t call_mask;              /* union of the pools' on-call triggers */
	int match_all;                   /* pool taking every allocation ("*"), or -1 */
	bool has_manual;                 /* a pool has the manual trigger: read pmallocctl's orders */
	uint64_t start_ns;               /* CLOCK_MONOTONIC at start-up */
	struct shim_pool pools[SHIM_POOLS_MAX];
};

/* The armed state: NULL until a policy with pools is armed.  The pointer
 * itself sits in a page of its own that init.c makes read-only (and seals
 * under protection = "seal") right after setting it, like the state it
 * points to: a write into the shim's .bss cannot point it at a forged
 * state.  Reading it is one load, as from any global.  The state and its
 * image live in the rest of that page when they fit (most policies: one
 * mprotect for all, and no mapping of their own), else in a mapping made
 * read-only apart. */
union shim_ro_page {
	struct {
		const struct shim_state *state;
		/* The site table once a policy is armed, NULL before: malloc's
		 * one test for "armed?" and its table at once (site_arm()). */
		struct site *sites;
		_Alignas(64) unsigned char room[RO_PAGE - 64];
	};
	unsigned char page[RO_PAGE];
};
static_assert(sizeof(union shim_ro_page) == RO_PAGE, "the state's pointer has its page to itself");
extern union shim_ro_page shim_ro;
#define shim (shim_ro.state)
#define site_armed (shim_ro.sites)

/* Per-thread re-entrancy guard: set while the shim itself allocates or
 * resolves, so those allocations go straight to libc.  Owned here: other
 * files read it with shim_is_busy() and set it only with the pair
 * shim_busy_enter()/shim_busy_leave(), which restores what was there (so
 * nested sections are right).  Defined in interpose.c, whose slow path
 * reads it; one initial-exec TLS load, a few cycles. */
extern __thread int shim_busy __attribute__((tls_model("initial-exec")));

static inline int shim_is_busy(void)
{
	return shim_busy;
}

static inline int shim_busy_enter(void)
{
	int was = shim_busy;
	shim_busy = 1;
	return was;
}

static inline void shim_busy_leave(int was)
{
	shim_busy = was;
}

/* init.c: the start-up (constructor).  Returns nothing: whatever fails
 * (no policy, no memory, a policy it cannot apply) leaves the program
 * running unprotected, said only under PMALLOC_DEBUG. */
void shim_init(void);

/* resolve.c: the routing decision for return address ra (cold path). */
int resolve_route(uintptr_t ra, uint16_t id);
/* What the read-only policy says of return address ra, from the ranges
 * read so far (no symbol is read, no lock taken): its pool, a wrapper, or
 * the heap.  What a cached route is checked against before it is believed
 * (interpose.c). */
int resolve_policy_route(uintptr_t ra);
/* The site to charge an allocation to, and its route, looking through
 * wrappers from the call at ra: the first caller outside a wrapper. */
struct site_hit resolve_through_wrapper(uintptr_t ra);
/* After dlclose: forget the ranges of objects no longer loaded and decide
 * every call site again (another object may now sit at the same place). */
void resolve_forget_unloaded(void);
/* Read now every symbol table still waiting for its object's first
 * allocation: the program is about to restrict itself (restrict.c). */
void resolve_read_all(void);
/* Read the rules of the policy being armed from its image (and set
 * st->match_all); scans the objects loaded now.  Before st is read-only.
 * exe: the program's path as read at start-up ("" when unknown). */
int resolve_init(struct shim_state *st, const char *exe);
/* The rules read (every site and wrapper but the match-all "*"), for
 * pmallocd's status: rule i as written and whether it matched; false past
 * the last.  Read while other threads may resolve: a rule seen unmatched
 * may match a moment later (rules_msg.c says so again then). */
struct resolve_rule_view {
	int pool;                        /* index in shim->pools */
	bool wrapper, by_offset;
	bool looked_up;                  /* false: a pool takes everything, nothing was scanned */
	bool matched;
	const char *object, *function, *build_id;   /* object, build_id may be NULL */
};
size_t resolve_n_rules(void);
size_t resolve_unmatched(void);
bool resolve_rule(size_t i, struct resolve_rule_view *ret);

/* trigger.c */
void trigger_call(enum policy_call c);
void trigger_init(const struct shim_state *st);
size_t shim_protect_pool(size_t i, const char *trigger);

/* client.c: the daemon handshake (start, wait as long as wanted, or
 * abandon), and reports */
/* comm: /proc/self/comm as read at start, told in the HELLO ("": not). */
int client_start(const char *socket_path, const char *comm);
int client_wait(unsigned int timeout_ms, void **ret_image, size_t *ret_len, uint64_t *ret_generation);
void client_abandon(void);
/* Orders pmallocd sent since (pmallocctl protect): fn(pool) for each;
 * never blocks.  Only in the process that connected (not a forked child). */
void client_read_orders(void (*fn)(const char *pool));
/* Wait up to timeout_ms for an order: 1 one is there, 0 not yet, -errno
 * no connection of this process's (-ENOTCONN) or the daemon went away. */
int client_wait_orders(int timeout_ms);
void client_notify_protected(size_t pool_index, const char *trigger, size_t new_bytes);
/* Hand msg to pmallocd without blocking: false without a daemon of this
 * process's (or a full socket).  Async-signal-safe. */
bool client_send_msg(const void *msg, size_t len);
/* Whether pmallocd served this process (a connection was kept): without
 * it, messages only for the daemon are not even built. */
bool client_has_daemon(void);

/* libc's definition of name (dlsym RTLD_NEXT), NULL if none. */
void *shim_real_symbol(const char *name);
/* libc's name, as a function of type, found once and cached. */
#define REAL(name, type) ({ \
	static type _Atomic real_; \
	type fn_ = atomic_load_explicit(&real_, memory_order_relaxed); \
	if (unlikely(!fn_)) { \
		fn_ = (type)shim_real_symbol(#name); \
		atomic_store_explicit(&real_, fn_, memory_order_relaxed); \
	} \
	fn_; })
/* The same, cached in var, a file-scope _Atomic pointer that a constructor
 * may fill before the first call (for calls made in signal handlers, where
 * dlsym must not run). */
#define LIBC(var, name) ({ \
	__typeof__(var) f_ = atomic_load_explicit(&(var), memory_order_relaxed); \
	if (unlikely(!f_)) { \
		f_ = (__typeof__(f_))shim_real_symbol(name); \
		atomic_store_explicit(&(var), f_, memory_order_relaxed); \
	} \
	f_; })


#endif
