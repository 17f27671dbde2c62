/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * learn.c - learn mode (see learn.h): allocation contexts, the pages
 * they share, their counts and the written marks.  What was learned goes to the
 * journal by learn_flush.c, which reads the context table through
 * learn_inner.h.
 *
 * Owns: the context table (chains hashed, ids 1..CTX_MAX-1, never
 * removed), the groups (the contexts whose chains begin with the same
 * SHARE_FRAMES frames), the lanes (regions of pool.c, each page of a lane
 * holding one group's objects: per learn pool LANES shared in turn, a
 * lane changing hands skips to a fresh page; and a lane of its own for
 * each context that took OWN_LANE_AFTER shared lanes already), the page
 * map (arena page -> its context, or the runs of its contexts' objects
 * when a group's contexts share it, and the objects live on it before the
 * trigger) that the fault handler, kwrite.c and free read, and the giving
 * back of pages whose objects were all freed before the trigger.  Must
 * never: let a write through for a pool the read-only decision does not
 * say learns, take a lock or allocate in learn_let_through, open a page
 * without marking every context with an object on it (a write there later
 * is not seen), or give back a page that holds a live object.
 *
 * Why a page's first write marks every context on it rather than the
 * store's object alone: the page is then writable, and a later write into
 * a neighbour of another context would go unseen (marked unwritten,
 * proposed, killed in enforce mode), unless every page stayed protected
 * and every store faulted.  Marking more contexts than were written is
 * safe (it only leaves them out of the proposal); so pages are shared by
 * contexts that share their first SHARE_FRAMES frames only, whose fate
 * is nearly always one: measured on redis 7.0, sharing by the allocator's
 * caller alone marked 70 more contexts and its proposal protected 17%
 * fewer bytes, by 3 or 4 frames 4% fewer (populateCommandTable's and
 * moduleRegisterCoreAPI's dictionary entries sharing pages with entries a
 * rehash wrote), by 5 frames none fewer, and nginx and haproxy none fewer
 * at any depth.  A context per page cost a page a context (haproxy's
 * master and worker 2,200 and 3,500 contexts): 2.39 x its resident memory
 * alone, 1.99 to 2.01 x shared by 5 frames (doc/figures.md).
 *
 * Cost per learn-pool allocation (learn mode only; enforce never comes
 * here; x86-64, callgrind): about 22,000 instructions for an allocation
 * made 8 frames deep, nearly all of it the unwind (libgcc's
 * _Unwind_Backtrace over the shim's own frames and up to LEARN_FRAMES of
 * the program's, some 1,000 a frame); then a hash of the chain and, under
 * one mutex, a probe of the context table and pool_alloc_in() (a second,
 * uncontended lock).  After the pool's first trigger the heap, and the
 * unwind only for a sample (late_weight(): each site's first 32, then one
 * in up to 1,024): late allocations are counted per context, the others a
 * load and an atomic add on their site's counter.  A free of a pool
 * object: a page-map load, a record look-up (and on a shared page a walk
 * of its runs, one per change of hands on it), a load of the pool's flags
 * and two atomic adds; before the trigger four (frees before it are
 * counted apart, PMALLOC_TRIGGER_LIVE_*) and learn_lock for the page's
 * live count, with one madvise for each page it leaves with none.
 *
 * learn_let_through() runs in the SIGSEGV handler and in kwrite.c: it
 * touches only pre-mapped tables (atomics; a page's runs, bounded by
 * PAGE_RUNS_MAX) and makes one mprotect call per page, once
 * (learn_kernel_write: none for a page opened already).
 */
#define _GNU_SOURCE
#include "learn.h"
#include "learn_inner.h"
#include "stderr.h"
#include "arena.h"
#include "fault.h"
#include "life.h"
#include "os.h"
#include "armed.h"
#include "reload.h"

#include <pthread.h>
#include <string.h>
#include <unwind.h>

#define CTX_MAX 65536u                 /* context ids 1..CTX_MAX-1; 0: none */
#define CTX_BUCKETS 8192u              /* hash chains (lctx.next), power of two */
#define LANES 64                       /* per pool: groups allocating in turn without a page skip */
#define OWN_LANE_AFTER 2               /* shared lanes taken: then a lane of the context's own */
#define SHARE_FRAMES 5                 /* contexts whose chains begin alike share pages */
#define NODES_MAX (1u << 21)           /* runs of shared pages, [1..NODES_MAX) */
#define PAGE_RUNS_MAX 512              /* runs a page can hold (4096 / 16 objects), and a bound */
#define SHIM_FRAMES_MAX 16             /* the shim's own frames above the allocator's caller */
#define PAGE_CTX_ID 0xffffu            /* page_ctx's bits that hold the context id */
#define PAGE_LIVE_ONE 0x10000u         /* one live object in page_ctx's count above them */
static_assert(CTX_MAX - 1 <= PAGE_CTX_ID, "a context id fits its bits of page_ctx");

struct lane {
	struct pool_region r;              /* pool.c's, bound at first use */
	uint32_t owner;                    /* an own lane's: its context id */
	uint64_t used;                     /* tick of the last use, for the choice of a lane */
	uint64_t key;                      /* a shared lane's: the group whose page is current, 0: none */
};

/* A run of a shared page: the objects from offset off (bytes in the page)
 * up to the next run's are context ctx's.  A page's runs are a list from
 * page_head, the last run first (offsets descending). */
struct run {
	uint32_t next;
	uint16_t ctx;
	uint16_t off;
};
static_assert(CTX_MAX - 1 <= UINT16_MAX, "a context id fits a run");

/* The state learning serves and its tables' addresses: set once by
 * learn_init(), then read-only (one RO_PAGE, listed by init.c, frozen
 * with arming's other pages in every armed process).  As writable words
 * they were forged by the tamper sweep (learn_st, ctxs): the periodic
 * thread or a wait call's flush read through them and took the process
 * down in the shim before its kill was reported. */
struct learn_tables {
	const struct shim_state *st;
	struct lctx *ctxs;             /* [CTX_MAX] */
	_Atomic uint32_t *ctx_index;   /* [CTX_BUCKETS]: a chain's first context id, 0: none */
	struct lane *lanes;            /* [SHIM_POOLS_MAX][LANES] */
	struct lane *own_lanes;        /* [CTX_MAX]: [1..n_own), in the order they were given */
	_Atomic uint32_t *page_head;   /* per arena page: its last run, 0: one context's page
				        * (page_ctx's id) */
	struct run *runs;              /* [NODES_MAX] */
	_Atomic uint32_t *page_ctx;    /* per arena page: its context id, and above PAGE_CTX_ID
				        * its objects live before the trigger (learn_lock) */
	_Atomic uint64_t *freed_early; /* per arena granule, a bit: the object starting there
				        * was freed before the trigger (learn_lock) */
	_Atomic uint64_t *opened;      /* per arena page: made writable by learning */
	_Atomic uint64_t *open_done;   /* per arena page: its mprotect returned */
	_Atomic uint32_t *late_calls;  /* [65536], per site id */
};
static union {
	struct learn_tables t;
	unsigned char page[RO_PAGE];
} lro __attribute__((aligned(RO_PAGE)));
const struct ro_span learn_ro_span = { &lro, sizeof(lro) };   /* ro.h: init.c lists it */
static_assert(sizeof(lro) == RO_PAGE, "the learn tables' page is one page");
static uint32_t n_ctx = 1;             /* next id; written under learn_lock */
static uint32_t n_runs = 1;            /* learn_lock */
static uint32_t n_own = 1;             /* learn_lock */
static uint64_t tick;                  /* learn_lock */
static _Atomic uint64_t lost;          /* allocations no context could take (table full) */
static _Atomic uint64_t marks;         /* contexts marked written so far (learn_marks) */
static pthread_mutex_t learn_lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread holds learn_lock in learn_alloc: a free() from a signal
 * handler that interrupted it gives no page back (release_early would
 * wait on its own lock). */
static __thread bool lock_mine __attribute__((tls_model("initial-exec")));

/* The learn state is believed only when it is the armed state (shim, in
 * its read-only page) of a learn policy: lro is read-only in every armed
 * process, empty in those of another mode. */
bool learn_active(void)
{
	const struct shim_state *st = lro.t.st;
	return st && st == shim && st->image->mode == POLICY_MODE_LEARN;
}

const struct shim_state *learn_state(void)
{
	return learn_active() ? lro.t.st : NULL;
}

struct lctx *learn_contexts(uint32_t *ret_n)
{
	uint32_t n = __atomic_load_n(&n_ctx, __ATOMIC_ACQUIRE);
	*ret_n = n < CTX_MAX ? n : CTX_MAX;   /* a writable word: the table's end bounds it */
	return lro.t.ctxs;
}

uint64_t learn_lost(void)
{
	return atomic_load(&lost);
}

uint64_t learn_marks(void)
{
	return atomic_load_explicit(&marks, memory_order_acquire);
}

/* ---- contexts ---- */

struct chain_walk {
	uintptr_t ra;
	uintptr_t *f;
	unsigned n, skipped;
	bool seen;
};

static _Unwind_Reason_Code chain_step(struct _Unwind_Context *ctx, void *arg)
{
	struct chain_walk *w = arg;
	uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
	if (ip == 0)
		return _URC_END_OF_STACK;
	if (!w->seen) {
		/* The shim's own frames, up to the allocator's caller. */
		if (ip != w->ra)
			return ++w->skipped > SHIM_FRAMES_MAX ? _URC_END_OF_STACK : _URC_NO_REASON;
		w->seen = true;
	}
	w->f[w->n++] = ip;
	return w->n == LEARN_FRAMES ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* The chain of the allocation whose caller returns to ra, into f; its
 * length (at least 1: ra alone when the walk cannot find it). */
static unsigned chain_of(uintptr_t ra, uintptr_t f[LEARN_FRAMES])
{
	struct chain_walk w = { .ra = ra, .f = f };
	int busy = shim_busy_enter();      /* whatever the unwinder allocates: the heap */
	_Unwind_Backtrace(chain_step, &w);
	shim_busy_leave(busy);
	if (!w.seen || w.n == 0) {
		f[0] = ra;
		return 1;
	}
	return w.n;
}

static uint64_t chain_hash(const uintptr_t *f, unsigned n, size_t pool)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ pool;
	for (unsigned i = 0; i < n; i++)
		h = (h ^ f[i]) * UINT64_C(0x100000001b3) + (h >> 29);
	return h ? h : 1;
}

/* The context of chain f[n] in pool, inserted on first sight (learn_lock
 * held); 0 when the table is full. */
static uint32_t ctx_get(const uintptr_t *f, unsigned n, size_t pool, uint16_t site)
{
	uint64_t h = chain_hash(f, n, pool);
	uint32_t b = (uint32_t)(h ^ h >> 32) & (CTX_BUCKETS - 1);
	uint32_t first = atomic_load_explicit(&lro.t.ctx_index[b], memory_order_relaxed);
	/* Bounded: the table is writable memory, a chain overwritten into a
	 * loop ends here too. */
	uint32_t k = 0;
	for (uint32_t id = first; id != 0 && id < CTX_MAX && k++ < CTX_MAX; id = lro.t.ctxs[id].next) {
		const struct lctx *c = &lro.t.ctxs[id];
		if (c->hash == h && c->pool == pool && c->n_frames == n && memcmp(c->frames, f, n * sizeof(*f)) == 0)
			return id;
	}
	uint32_t id = __atomic_load_n(&n_ctx, __ATOMIC_RELAXED);
	if (id >= CTX_MAX)
		return 0;
	struct lctx *c = &lro.t.ctxs[id];
	c->hash = h;
	memcpy(c->frames, f, n * sizeof(*f));
	c->n_frames = (uint8_t)n;
	c->pool = (uint8_t)pool;
	c->lane = -1;
	c->site = site;
	c->next = first;
	/* Whole before it is counted: a flush reads up to n_ctx without the
	 * lock. */
	__atomic_store_n(&n_ctx, id + 1, __ATOMIC_RELEASE);
	atomic_store_explicit(&lro.t.ctx_index[b], id, memory_order_release);
	return id;
}

static size_t page_of(uintptr_t a)
{
	return (a - arena_base) / os_page_size;
}

/* The group of context id in pool i: the contexts whose chains begin
 * alike (SHARE_FRAMES frames), whose objects share pages.  Once the runs
 * are spent, each context is a group of its own (learn_lock held). */
static uint64_t group_of(size_t i, uint32_t id)
{
	const struct lctx *c = &lro.t.ctxs[id];
	if (n_runs >= NODES_MAX - 2)
		return UINT64_C(1) << 63 | id;
	uint64_t h = chain_hash(c->frames, c->n_frames < SHARE_FRAMES ? c->n_frames : SHARE_FRAMES, i) &
		     ~(UINT64_C(1) << 63);
	return h ? h : 1;                  /* 0: a lane no group holds */
}

/* A lane of pool i for context id (learn_lock held): for a context that
 * took OWN_LANE_AFTER shared lanes already, a lane of its own (its page
 * never handed to another context, never skipped; pool_alloc_in's first
 * span of a region starts on a page of its own); else the shared lane
 * whose page its group holds; else the shared lane least lately used,
 * whose next object then starts on a fresh page (*fresh).
 *
 * Why both: shared lanes skip to a fresh page at each change of hands,
 * and a start-up that interleaves more busy contexts than there are lanes
 * (haproxy: 250,000 objects of 3,500 contexts before its first wait)
 * touched a page every few objects, 16 x its resident memory.  A lane of
 * its own costs a context two pages (its page tail and its span's first
 * page of records): for every context, nginx's 800 a process, that was
 * 3.2 x nginx's memory where shared lanes cost 2.2 x.  Whether a context
 * is busy is told by the lanes it had to take, not by its objects: past
 * 32 objects (the rule before) haproxy's worker put each of the first 31
 * objects of 390 interleaved contexts on a page of its own, 7,900 pages
 * (31 MB of its 70); after two takes, none (36.7 MB in all). */

static struct lane *lane_for(size_t i, uint32_t id, bool *fresh)
{
	struct lctx *c = &lro.t.ctxs[id];
	*fresh = false;
	struct lane *pl = &lro.t.lanes[i * LANES];
	if (c->own == 0 && c->takes >= OWN_LANE_AFTER)
		c->own = (uint16_t)n_own++;        /* at most one a context: < CTX_MAX */
	if (c->own != 0) {
		lro.t.own_lanes[c->own].owner = id;
		return &lro.t.own_lanes[c->own];
	}
	uint64_t g = group_of(i, id);
	if (c->lane < 0 || pl[c->lane].key != g)
		for (int k = 0; k < LANES; k++)
			if (pl[k].key == g)
				c->lane = (int16_t)k;
	if (c->lane >= 0 && pl[c->lane].key == g) {
		pl[c->lane].used = ++tick;
		return &pl[c->lane];
	}
	c->takes++;
	int best = 0;
	for (int k = 1; k < LANES; k++)
		if (pl[k].used < pl[best].used)
			best = k;
	*fresh = pl[best].key != 0;
	pl[best].key = g;
	pl[best].used = ++tick;
	c->lane = (int16_t)best;
	return &pl[best];
}

/* Context id is written: marked, once (async-signal-safe: the fault
 * handler's). */
static bool mark(uint32_t id)
{
	if (id == 0 || id >= CTX_MAX || atomic_exchange_explicit(&lro.t.ctxs[id].written, 1, memory_order_acq_rel))
		return false;
	uint64_t live = atomic_load_explicit(&lro.t.ctxs[id].bytes, memory_order_relaxed) -
			atomic_load_explicit(&lro.t.ctxs[id].freed_bytes, memory_order_relaxed);
	atomic_store_explicit(&lro.t.ctxs[id].written_bytes, live, memory_order_relaxed);
	atomic_fetch_add_explicit(&marks, 1, memory_order_release);
	return true;
}

/* fn(id, arg) for every context with an object on arena page pg: the
 * page's one context, or the context of each of its runs.  Lock-free and
 * bounded (the fault handler's), a page head forged or not. */
static void page_contexts(size_t pg, void (*fn)(uint32_t id, uint32_t arg), uint32_t arg)
{
	uint32_t r = atomic_load_explicit(&lro.t.page_head[pg], memory_order_acquire);
	if (r == 0) {
		fn(atomic_load_explicit(&lro.t.page_ctx[pg], memory_order_acquire) & PAGE_CTX_ID, arg);
		return;
	}
	for (unsigned k = 0; r != 0 && r < NODES_MAX && k < PAGE_RUNS_MAX; k++, r = lro.t.runs[r].next)
		fn(lro.t.runs[r].ctx, arg);
}

static void mark_one(uint32_t id, uint32_t unused)
{
	(void)unused;
	(void)mark(id);
}

/* Context id noted as written into in reload window w
 * (learn_window_let_through: the window opened the page, so a later write
 * of another context there does not fault until the window ends). */
static void note_window(uint32_t id, uint32_t w)
{
	if (id != 0 && id < CTX_MAX)
		atomic_store_explicit(&lro.t.ctxs[id].window, w, memory_order_relaxed);
}

static void run_push(size_t pg, uint32_t id, uint16_t off)
{
	uint32_t r = n_runs++;
	lro.t.runs[r] = (struct run){ .next = atomic_load_explicit(&lro.t.page_head[pg], memory_order_relaxed),
				.ctx = (uint16_t)id, .off = off };
	atomic_store_explicit(&lro.t.page_head[pg], r, memory_order_release);
}

/* Object [a, a+need) of context id counted on its pages (learn_lock
 * held): a page one context's objects alone were on stays that context's
 * (page_ctx's id); one that another context of its group joins gets a run
 * for each change of hands, its first context's from offset 0.
 * Later pages of the object are fresh: nothing of the lane is past its
 * start.  True when one of the pages is open already (a reload's
 * allocation on a page a write opened): no write into the object would
 * fault, so it is marked written now. */
static bool pages_note(uintptr_t a, size_t need, uint32_t id)
{
	bool open = false;
	size_t first = page_of(a);
	for (size_t pg = first; pg <= page_of(a + need - 1); pg++) {
		uint32_t v = atomic_load_explicit(&lro.t.page_ctx[pg], memory_order_relaxed);
		uint32_t owner = v & PAGE_CTX_ID, head = atomic_load_explicit(&lro.t.page_head[pg], memory_order_relaxed);
		if (head == 0 && (v < PAGE_LIVE_ONE || owner == id)) {
			owner = id;
		} else {
			if (head == 0)
				run_push(pg, owner, 0);
			head = atomic_load_explicit(&lro.t.page_head[pg], memory_order_relaxed);
			if (head >= NODES_MAX || lro.t.runs[head].ctx != id)   /* a writable word: bounded */
				run_push(pg, id, pg == first ? (uint16_t)(a & (os_page_size - 1)) : 0);
		}
		atomic_store_explicit(&lro.t.page_ctx[pg], ((v & ~PAGE_CTX_ID) + PAGE_LIVE_ONE) | owner, memory_order_release);
		/* Against learn_let_through's order (opened set, then the runs
		 * read): one of the two sees the other. */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&lro.t.opened[pg / 64], memory_order_relaxed) & (UINT64_C(1) << (pg % 64)))
			open = true;
	}
	return open;
}

/* The context of the object starting at a (pool memory, learn_alloc's). */
static uint32_t ctx_of_object(uintptr_t a)
{
	size_t pg = page_of(a);
	uint32_t r = atomic_load_explicit(&lro.t.page_head[pg], memory_order_acquire);
	uint16_t off = (uint16_t)(a & (os_page_size - 1));
	for (unsigned k = 0; r != 0 && r < NODES_MAX && k < PAGE_RUNS_MAX; k++, r = lro.t.runs[r].next)
		if (lro.t.runs[r].off <= off)
			return lro.t.runs[r].ctx;
	return atomic_load_explicit(&lro.t.page_ctx[pg], memory_order_acquire) & PAGE_CTX_ID;
}

/* A late allocation's weight: 0 when it is not unwound, else how many
 * late allocations of its site it stands for.  Each site's first
 * LATE_EACH are unwound one by one, then one in stride, the stride
 * doubling with the site's count up to LATE_STRIDE_MAX: a chain that
 * makes at least one in LATE_STRIDE_MAX of its site's late allocations is
 * seen, and its late mark set, within a few thousand of them.
 *
 * Why sampling is safe: a late allocation goes to the heap, in learn mode
 * as in enforce, so a chain whose late mark is missed is at worst
 * proposed while it also allocates as it serves, and its later objects go
 * to the heap under the proposal (take = "until-trigger"): no write is
 * missed (the written marks are its objects' from before the trigger,
 * every one of them unwound).  The late counts are estimates (each sample
 * counted stride times). */
#define LATE_EACH 32
#define LATE_STRIDE_MAX 1024u

static uint32_t late_weight(uint16_t site)
{
	uint32_t n = atomic_fetch_add_explicit(&lro.t.late_calls[site], 1, memory_order_relaxed);
	if (n < LATE_EACH)
		return 1;
	uint32_t stride = 2;
	while (stride < LATE_STRIDE_MAX && stride * LATE_EACH <= n)
		stride *= 2;
	return n % stride == 0 ? stride : 0;
}

void *learn_alloc(size_t i, size_t size, size_t align, uintptr_t ra, uint16_t site)
{
	uintptr_t f[LEARN_FRAMES];
	struct pmalloc_pool *p = shim->pools[i].pool;   /* the read-only state, which learn_st names (learn_active) */
	uint32_t weight = 1;
	/* A reload's allocations (reload.c) are learned as the first ones
	 * were: in the lanes, before the window's protect, every one (a
	 * sample would send the reload's configuration past the site's first
	 * LATE_EACH to the heap, learned as freed and never kept). */
	bool reload = pool_closed(p) && reload_takes();
	if (pool_closed(p) && !reload && (weight = late_weight(site)) == 0)
		return NULL;               /* counted in its site's stride */
	unsigned n = chain_of(ra, f);
	size_t need = ALIGN_UP(size ? size : 1, PM_ALIGN);
	void *obj = NULL;
	pthread_mutex_lock(&learn_lock);
	lock_mine = true;
	uint32_t id = ctx_get(f, n, i, site);
	if (id == 0) {
		lock_mine = false;
		pthread_mutex_unlock(&learn_lock);
		atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
		return NULL;
	}
	struct lctx *c = &lro.t.ctxs[id];
	if (!pool_closed(p) || reload) {
		bool fresh;
		struct lane *l = lane_for(i, id, &fresh);
		obj = reload ? pool_alloc_reopened(p, &l->r, size, align, site, fresh)
			     : pool_alloc_in(p, &l->r, size, align, site, fresh);
	}
	if (obj) {
		if (pages_note((uintptr_t)obj, need, id))
			mark(id);
		atomic_fetch_add_explicit(&c->objects, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->bytes, need, memory_order_relaxed);
	} else if (pool_closed(p)) {
		atomic_fetch_add_explicit(&c->late_objects, weight, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->late_bytes, need * weight, memory_order_relaxed);
	}
	lock_mine = false;
	pthread_mutex_unlock(&learn_lock);
	return obj;
}

/* The context of pool memory at a, 0 for none. */
static uint32_t ctx_at(uintptr_t a)
{
	if (!lro.t.page_ctx || !arena_contains((const void *)a))
		return 0;
	uint32_t id = atomic_load_explicit(&lro.t.page_ctx[page_of(a)], memory_order_acquire) & PAGE_CTX_ID;
	return id < CTX_MAX ? id : 0;
}

/* Object [obj, obj+size) of context id freed before its pool's trigger:
 * each of its pages that holds no live object any more is given back
 * (its objects all freed: nothing the program may still use, nothing a
 * protect will ever hold; a page its lane goes on filling comes back,
 * zero, at the next object's first store).  The live counts are
 * learn_alloc's, under the same lock, so no object lands on a page
 * between its count read as 0 and the discard.  An object freed twice
 * is counted once (its bit in freed_early): a double free the heap would
 * have let by drops no other object's page.  A free that interrupted this
 * thread's learn_alloc (a signal handler's) leaves its count as it is:
 * its pages are kept. */
static void release_early(uintptr_t obj, size_t size)
{
	if (lock_mine)
		return;
	size_t g = (obj - arena_base) >> ARENA_GRANULE_SHIFT;
	uint64_t m = UINT64_C(1) << (g % 64);
	pthread_mutex_lock(&learn_lock);
	if (!(atomic_fetch_or_explicit(&lro.t.freed_early[g / 64], m, memory_order_relaxed) & m)) {
		for (size_t pg = page_of(obj); pg <= page_of(obj + size - 1); pg++) {
			uint32_t v = atomic_load_explicit(&lro.t.page_ctx[pg], memory_order_relaxed);
			if ((v & PAGE_CTX_ID) == 0 || v < PAGE_LIVE_ONE)
				continue;          /* not counted: never given back */
			v -= PAGE_LIVE_ONE;
			atomic_store_explicit(&lro.t.page_ctx[pg], v, memory_order_release);
			if (v < PAGE_LIVE_ONE) {
				/* Its runs with it: the page's next object is
				 * its context's alone. */
				atomic_store_explicit(&lro.t.page_head[pg], 0, memory_order_release);
				(void)os_discard((void *)(arena_base + pg * os_page_size), os_page_size);
			}
		}
	}
	pthread_mutex_unlock(&learn_lock);
}

void learn_note_free(const void *p)
{
	struct pool_hit hit;
	if (!ctx_at((uintptr_t)p) || !pool_lookup(p, &hit) || !hit.in_object)
		return;
	uint32_t id = ctx_of_object(hit.object);
	if (id == 0 || id >= CTX_MAX)
		return;
	if (learn_stopping() || reload_superseded() || life_exiting())
		return;                 /* the shutdown's or exit's free: live when it began */
	struct lctx *c = &lro.t.ctxs[id];
	/* Before the trigger, a start-up object the program is done with: it
	 * never reaches protection (what it held stays pool memory, the pool
	 * never reuses it; its pages, once none holds a live object, are
	 * given back: release_early).  So is the old configuration a reload frees
	 * (reload.h): counted with those, not as a free while serving. */
	bool closed = pool_closed(shim->pools[c->pool].pool);
	if (!closed && hit.object_size)
		release_early(hit.object, hit.object_size);
	if (closed && reload_in_window()) {
		/* The main thread in a window: counted as a start-up object
		 * once the window ends (learn_early), as a free while serving
		 * if the process ends first (a stop: learn_window_let_through
		 * says why).  Only the main thread writes these fields. */
		uint32_t w = (uint32_t)reload_count();
		if (atomic_load_explicit(&c->win_free, memory_order_relaxed) != w) {
			uint64_t o = atomic_exchange_explicit(&c->win_objects, 0, memory_order_relaxed);
			uint64_t b = atomic_exchange_explicit(&c->win_bytes, 0, memory_order_relaxed);
			atomic_fetch_add_explicit(&c->early_objects, o, memory_order_relaxed);
			atomic_fetch_add_explicit(&c->early_bytes, b, memory_order_relaxed);
			atomic_store_explicit(&c->win_free, w, memory_order_relaxed);
		}
		atomic_fetch_add_explicit(&c->win_objects, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->win_bytes, hit.object_size, memory_order_relaxed);
	} else if (!closed) {
		atomic_fetch_add_explicit(&c->early_objects, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->early_bytes, hit.object_size, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&c->freed_objects, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->freed_bytes, hit.object_size, memory_order_relaxed);
}

bool learn_let_through(const struct pool_hit *hit, uintptr_t addr)
{
	/* Read-only state only (fault.c): a pool index, learn_st or a bit of
	 * opened overwritten never makes an enforced pool learn. */
	if (fault_mode_of(hit) != FAULT_LEARN || !hit->span || !lro.t.opened)
		return false;
	uintptr_t page = addr & ~(uintptr_t)(os_page_size - 1);
	size_t bit = page_of(page);
	uint64_t m = UINT64_C(1) << (bit % 64);
	/* A bit set already: another thread is opening the page, or the bit
	 * was written by someone else (the table is writable).  Either way the
	 * page is opened here too (idempotent): the bit never lets a write
	 * through by itself, and the handler never waits on it. */
	bool mine = !(atomic_fetch_or_explicit(&lro.t.opened[bit / 64], m, memory_order_seq_cst) & m);
	/* Every context with an object on the page is marked: the one
	 * written, and those of its group sharing the page, whose later
	 * writes the open page no longer shows. */
	atomic_thread_fence(memory_order_seq_cst);
	if (lro.t.page_ctx && arena_contains((const void *)addr))
		page_contexts(bit, mark_one, 0);
	if (os_protect_rw((void *)page, os_page_size) < 0) {
		if (mine)
			atomic_fetch_and_explicit(&lro.t.opened[bit / 64], ~m, memory_order_acq_rel);
		return false;
	}
	atomic_fetch_or_explicit(&lro.t.open_done[bit / 64], m, memory_order_release);
	return true;
}

/* A reload window's writes are not marked (reload.c): enforce lets the
 * main thread's writes through until its next wait, after a wait returned,
 * and so learning.  That holds while the program goes back to waiting once
 * its reload is done: both windows then cover the same writes.  A process
 * whose window is still open when it ends made no such wait: its signal
 * was a stop (haproxy's old worker, told by SIGUSR1 to stop at its
 * master's reload), and how many turns its loop made before it left it is
 * its threads' timing.  Its deinit() wrote 475 times into protected memory
 * (its pool cache writing the signal handler records it freed,
 * pool_put_to_cache) with the window open when its other thread had
 * acknowledged the stop before its first poll after the signal returned,
 * and after the window's end, at a second poll, when it had not: learning
 * marked none of those writes in one run, enforce killed the old worker
 * in the other (about one day in two).  So the contexts a window let
 * writes into are noted with the window's number, and marked written at
 * the exit flush when that window is still open: what a stop writes is
 * learned as enforce may see it, outside any window; so are its frees
 * there, counted as frees while serving, not as the old configuration a
 * reload frees (learn_note_free, learn_early): what deinit() writes varies
 * from run to run (lua_close, depending on its garbage collector's state,
 * wrote a Lua object the learn run's had not), and a site whose objects a
 * stop frees is left out for that role whether or not the learn run saw
 * the write.  A window that ends at a wait forgets its notes (the next one
 * has another number) and its frees count as before the trigger.  Costs:
 * a 4-byte store per page a window opens; the exit flush reads the note
 * of each context.  A program that writes in a window, waits within its
 * reload (the window ends there) and writes again is not covered. */
bool learn_window_let_through(const struct pool_hit *hit, uintptr_t addr)
{
	if (!reload_let_through(hit, addr))
		return false;
	if (fault_mode_of(hit) == FAULT_LEARN && ctx_at(addr))
		page_contexts(page_of(addr), note_window, (uint32_t)reload_count());
	return true;
}

void learn_early(const struct lctx *x, bool exec, uint64_t *objects, uint64_t *bytes)
{
	*objects = atomic_load_explicit(&x->early_objects, memory_order_relaxed);
	*bytes = atomic_load_explicit(&x->early_bytes, memory_order_relaxed);
	uint32_t w = atomic_load_explicit(&x->win_free, memory_order_relaxed);
	if (w && (exec || !reload_open() || (uint32_t)reload_count() != w)) {
		*objects += atomic_load_explicit(&x->win_objects, memory_order_relaxed);
		*bytes += atomic_load_explicit(&x->win_bytes, memory_order_relaxed);
	}
}

void learn_window_unfinished(void)
{
	if (!learn_active() || !reload_open())
		return;
	uint32_t w = (uint32_t)reload_count(), n = __atomic_load_n(&n_ctx, __ATOMIC_ACQUIRE), k = 0;
	for (uint32_t id = 1; id < n && id < CTX_MAX; id++)
		if (atomic_load_explicit(&lro.t.ctxs[id].window, memory_order_relaxed) == w)
			k += mark(id);
	debug_printf("learn: exit with reload window %u open: %u contexts it wrote marked written", w, k);
}

bool learn_kernel_write(const struct pool_hit *hit, uintptr_t addr)
{
	if (fault_mode_of(hit) != FAULT_LEARN || !hit->span || !lro.t.open_done)
		return false;
	/* Opened already (its context marked then): no system call.  A bit
	 * forged here makes the kernel's write fail with EFAULT, as it would
	 * without learn mode; a fault never trusts it (learn_let_through). */
	size_t bit = page_of(addr & ~(uintptr_t)(os_page_size - 1));
	if (atomic_load_explicit(&lro.t.open_done[bit / 64], memory_order_acquire) & (UINT64_C(1) << (bit % 64)))
		return true;
	return learn_let_through(hit, addr);
}

/* A fork waits for learn_lock: the child must not get the tables half-way
 * changed. */
static void lock_take_fork(void)
{
	pthread_mutex_lock(&learn_lock);
}

static void lock_drop_fork(void)
{
	pthread_mutex_unlock(&learn_lock);
}

bool learn_init(const struct shim_state *st)
{
	void *c, *x, *l, *ol, *pg, *o, *lc, *od, *fe, *ph, *rn;
	if (lro.t.st)
		return lro.t.st == st;   /* armed once: the page is read-only now */
	size_t pages = arena_size / os_page_size;
	size_t words = (pages + 63) / 64;
	if (os_map_lazy(CTX_MAX * sizeof(struct lctx), &c) < 0 ||
	    os_map_lazy(CTX_BUCKETS * sizeof(uint32_t), &x) < 0 ||
	    os_map_lazy(SHIM_POOLS_MAX * LANES * sizeof(struct lane), &l) < 0 ||
	    os_map_lazy(CTX_MAX * sizeof(struct lane), &ol) < 0 ||
	    os_map_lazy(pages * sizeof(uint32_t), &pg) < 0 || os_map_lazy(words * sizeof(uint64_t), &o) < 0 ||
	    os_map_lazy(65536 * sizeof(*lro.t.late_calls), &lc) < 0 || os_map_lazy(words * sizeof(uint64_t), &od) < 0 ||
	    os_map_lazy((arena_size >> ARENA_GRANULE_SHIFT) / 8, &fe) < 0 ||
	    os_map_lazy(pages * sizeof(uint32_t), &ph) < 0 ||
	    os_map_lazy(NODES_MAX * sizeof(struct run), &rn) < 0) {
		debug_printf("learn mode: no memory for its tables; pools enforce");
		return false;
	}
	lro.t.ctxs = c;
	lro.t.ctx_index = x;
	lro.t.lanes = l;
	lro.t.own_lanes = ol;
	lro.t.page_ctx = pg;
	lro.t.opened = o;
	lro.t.late_calls = lc;
	lro.t.open_done = od;
	lro.t.freed_early = fe;
	lro.t.page_head = ph;
	lro.t.runs = rn;
	lro.t.st = st;
	/* Frozen with arming's other pages (ro.h: held, then one mprotect
	 * with its neighbours; at once under a seal). */
	if (ro_freeze(&lro, sizeof(lro)) < 0) {
		memset(&lro, 0, sizeof(lro));
		debug_printf("learn mode: its tables' page cannot be made read-only; pools enforce");
		return false;
	}
	/* Registered after pool.c's handlers (the pools exist): taken before
	 * the pools' locks, the order learn_alloc() takes them in; the flush's
	 * lock before it (learn_flush_init() registers its handlers after
	 * these; a flush never takes the others). */
	pthread_atfork(lock_take_fork, lock_drop_fork, lock_drop_fork);
	learn_stop_init();
	return true;
}

int learn_tables_freeze(void)
{
	return ro_freeze(&lro, sizeof(lro));
}

void learn_forget_opened(void)
{
	if (!lro.t.st || !lro.t.opened || !lro.t.open_done)
		return;
	/* open_done first: a kernel write then goes through
	 * learn_let_through(), which opens the page again.  Only words with a
	 * bit set are written (the tables are mapped lazily).  A page opened
	 * by another thread between this and the protect keeps a stale bit: a
	 * kernel write into it fails once more with EFAULT, as without learn
	 * mode; the call after the protect clears that too. */
	size_t words = (arena_size / os_page_size + 63) / 64;
	for (size_t w = 0; w < words; w++) {
		if (atomic_load_explicit(&lro.t.open_done[w], memory_order_relaxed))
			atomic_store_explicit(&lro.t.open_done[w], 0, memory_order_release);
		if (atomic_load_explicit(&lro.t.opened[w], memory_order_relaxed))
			atomic_store_explicit(&lro.t.opened[w], 0, memory_order_release);
	}
}
