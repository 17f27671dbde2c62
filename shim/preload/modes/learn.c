/*
 * learn.c - learn mode (see learn.h): the written-site marks, the pages
 * learning has opened, and the flush of what was learned to the journal.
 *
 * Per allocation it costs nothing: the counts (objects, bytes per site)
 * are read at flush time from the records every pool keeps anyway (one per
 * object, with its site), counting the objects below each span's protected
 * mark, i.e. allocated before a trigger protected them.
 *
 * A page shared by objects of several sites marks all of them as written:
 * in enforce mode a write anywhere on that page would kill, whichever
 * object it meant, and learning cannot tell which object a store aimed at
 * without a fault per store.
 *
 * learn_let_through() runs in the SIGSEGV handler and in kwrite.c: it
 * touches only pre-mapped tables (atomics) and makes one mprotect call per
 * page, once.  learn_flush() runs in normal context (exit, execve,
 * pmallocctl learn-flush): it reads symbol files and allocates with the
 * shim's guard set; never from a signal handler.
 */
#define _GNU_SOURCE
#include "learn.h"
#include "arena.h"
#include "fault.h"
#include "heap.h"
#include "journal.h"
#include "os.h"
#include "pool_sites.h"
#include "shim.h"
#include "site.h"
#include "symtab.h"

#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct shim_state *learn_st;
static _Atomic unsigned char *written;   /* per site id - 1: 1 once written after protection */
static _Atomic uint64_t *opened;         /* per arena page: made writable by learning */
/* Per site id - 1: its objects at its pool's first protect (learn_note_protect),
 * so that a flush tells the sites that went on allocating while the program
 * served: their memory comes and goes with the load. */
static _Atomic uint32_t *early;
static _Atomic unsigned char snapped[PIMG_POOLS_MAX];    /* per pool: early counted */
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;

bool learn_active(void)
{
	return learn_st != NULL;
}

static void mark(uint16_t site)
{
	if (site != SITE_NONE && site <= SITE_SLOTS)
		atomic_store_explicit(&written[site - 1], 1, memory_order_relaxed);
}

/* Every object with a byte on the page at span offset pg. */
static void mark_page(const struct span *s, size_t pg)
{
	size_t end = pg + os_page_size, off = pg;
	while (off < end && off < s->bytes) {
		struct span_object o;
		if (span_object_at(s, off, &o)) {
			mark(o.site);
			off = o.start + o.size > off ? o.start + o.size : off + PM_ALIGN;
		} else {
			off += PM_ALIGN;
		}
	}
}

bool learn_let_through(const struct pool_hit *hit, uintptr_t addr)
{
	/* Read-only state only (fault.c): a pool index, learn_st or a bit of
	 * opened overwritten never makes an enforced pool learn. */
	if (fault_mode_of(hit) != FAULT_LEARN || !hit->span || !opened)
		return false;
	uintptr_t page = addr & ~(uintptr_t)(os_page_size - 1);
	size_t bit = (page - arena_base) / os_page_size;
	uint64_t m = UINT64_C(1) << (bit % 64);
	/* A bit set already: another thread is opening the page, or the bit
	 * was written by someone else (the table is writable).  Either way the
	 * page is opened here too (idempotent): the bit never lets a write
	 * through by itself, and the handler never waits on it. */
	bool mine = !(atomic_fetch_or_explicit(&opened[bit / 64], m, memory_order_acq_rel) & m);
	mark_page(hit->span, page - hit->span->base);
	if (os_protect_rw((void *)page, os_page_size) < 0) {
		if (mine)
			atomic_fetch_and_explicit(&opened[bit / 64], ~m, memory_order_acq_rel);
		return false;
	}
	return true;
}

bool learn_init(const struct shim_state *st)
{
	void *w, *o, *e;
	size_t words = (arena_size / os_page_size + 63) / 64;
	if (os_map(SITE_SLOTS, &w) < 0 || os_map_lazy(words * sizeof(uint64_t), &o) < 0 ||
	    os_map(SITE_SLOTS * sizeof(*early), &e) < 0) {
		debug_printf("learn mode: no memory for its tables; pools enforce");
		return false;
	}
	written = w;
	opened = o;
	early = e;
	learn_st = st;
	return true;
}

/* One learned site, at flush time. */
struct lsite {
	uintptr_t ra;
	uint16_t id;
	int pool;
	uint64_t objects, bytes, late;
	bool written;
	uintptr_t bias;
	const char *object;              /* interned in objs */
	char build_id[SYMTAB_BUILD_ID_MAX];
	char func[128];
};

struct lobj {
	char path[512];
	uintptr_t bias;
	char build_id[SYMTAB_BUILD_ID_MAX];
};

struct flush_ctx {
	struct lsite *s;
	size_t n;
	struct lobj *objs;
	size_t n_objs, cap_objs;
	char exe[512];
	size_t lo, hi;                   /* the sites of the object being read */
};

static int ra_cmp(const void *a, const void *b)
{
	const struct lsite *x = a, *y = b;
	return x->ra < y->ra ? -1 : x->ra > y->ra;
}

/* Sites of the objects loaded now: path, bias, build-id. */
static int visit_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct flush_ctx *c = arg;
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : c->exe;
	if (strncmp(name, "linux-vdso", 10) == 0)
		return 0;
	struct lobj *obj = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		for (size_t k = 0; k < c->n; k++) {
			if (c->s[k].ra <= lo || c->s[k].ra > hi || c->s[k].object)
				continue;
			if (!obj) {
				if (c->n_objs == c->cap_objs) {
					size_t cap = c->cap_objs ? c->cap_objs * 2 : 8;
					struct lobj *no = heap_realloc(c->objs, cap * sizeof(*no));
					if (!no)
						return 1;
					c->objs = no;
					c->cap_objs = cap;
				}
				obj = &c->objs[c->n_objs++];
				snprintf(obj->path, sizeof(obj->path), "%s", name);
				obj->bias = info->dlpi_addr;
				if (!symtab_build_id(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr, obj->build_id))
					obj->build_id[0] = '\0';
			}
			c->s[k].object = obj->path;     /* fixed up below: objs may move */
			c->s[k].bias = obj->bias;
		}
	}
	return 0;
}

static int name_sites(void *arg, const char *name, uintptr_t start, size_t size)
{
	struct flush_ctx *c = arg;
	/* The first site whose call lies at or after start. */
	size_t lo = c->lo, hi = c->hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->s[mid].ra - 1 < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < c->hi && c->s[k].ra - 1 < start + size; k++)
		if (!c->s[k].func[0])
			snprintf(c->s[k].func, sizeof(c->s[k].func), "%s", name);
	return 0;
}

static void triggers_text(const struct pimg_header *img, const struct pimg_pool *pp, char *buf,
			  size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t t = 0; t < pp->n_triggers && n < len; t++) {
		const struct pimg_trigger *tr = pimg_pool_trigger(img, pp, t);
		const char *sep = t ? "," : "";
		int w;
		if (tr->kind == POLICY_TRIGGER_ON_CALL)
			w = snprintf(buf + n, len - n, "%son-call:%s", sep, policy_call_name(tr->call));
		else if (tr->kind == POLICY_TRIGGER_AFTER)
			w = snprintf(buf + n, len - n, "%safter:%llums", sep,
				     (unsigned long long)(tr->after_ns / 1000000u));
		else
			w = snprintf(buf + n, len - n, "%smanual", sep);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static void flush_locked(const char *reason)
{
	const struct shim_state *st = learn_st;
	struct lsite *acc = heap_calloc(SITE_SLOTS, sizeof(*acc));
	struct pool_site_count *counts = heap_calloc(SITE_SLOTS, sizeof(*counts));
	struct flush_ctx c;
	memset(&c, 0, sizeof(c));
	if (!acc || !counts) {
		heap_free(acc);
		heap_free(counts);
		return;
	}
	/* Per site: objects below each span's protected mark. */
	for (size_t i = 0; i < st->n_pools; i++)
		pool_sites_count(st->pools[i].pool, (int)i, true, counts, NULL, NULL);
	for (size_t k = 0; k < SITE_SLOTS; k++)
		if (counts[k].objects) {
			struct lsite *l = &acc[c.n++];
			l->objects = counts[k].objects;
			l->bytes = counts[k].bytes;
			l->pool = counts[k].pool;
			l->id = (uint16_t)(k + 1);
			l->ra = site_address(l->id);
			l->written = atomic_load_explicit(&written[k], memory_order_relaxed);
			uint32_t before = atomic_load_explicit(&early[k], memory_order_relaxed);
			l->late = snapped[l->pool] && l->objects > before ? l->objects - before : 0;
			l->object = NULL;
			l->func[0] = l->build_id[0] = '\0';
		}
	heap_free(counts);
	c.s = acc;
	ssize_t n = readlink("/proc/self/exe", c.exe, sizeof(c.exe) - 1);
	c.exe[n > 0 ? n : 0] = '\0';
	qsort(c.s, c.n, sizeof(*c.s), ra_cmp);
	dl_iterate_phdr(visit_object, &c);
	/* Name the sites of each object from its symbol table (read once per
	 * object): the sites are sorted by address, an object's are adjacent. */
	for (size_t o = 0; o < c.n_objs; o++) {
		struct lobj *obj = &c.objs[o];
		size_t lo = 0;
		while (lo < c.n && c.s[lo].bias != obj->bias)
			lo++;
		size_t hi = lo;
		while (hi < c.n && c.s[hi].bias == obj->bias && c.s[hi].object)
			hi++;
		c.lo = lo;
		c.hi = hi;
		for (size_t k = lo; k < hi; k++) {
			c.s[k].object = obj->path;
			memcpy(c.s[k].build_id, obj->build_id, sizeof(obj->build_id));
		}
		if (hi > lo)
			symtab_for_each_function(obj->path, obj->bias, name_sites, &c);
	}
	for (size_t k = 0; k < c.n; k++) {
		struct lsite *l = &c.s[k];
		char site[192], trig[256];
		const char *obj = l->object ? l->object : "?";
		const char *base = strrchr(obj, '/');
		base = base ? base + 1 : obj;
		if (l->func[0])
			snprintf(site, sizeof(site), "%s", l->func);
		else
			snprintf(site, sizeof(site), "%s+0x%llx", base, (unsigned long long)(l->ra - l->bias));
		const struct pimg_pool *pp = pimg_pool(st->image, (size_t)l->pool);
		triggers_text(st->image, pp, trig, sizeof(trig));
		const char *wrappers[64];
		size_t n_wrappers = 0;
		for (; n_wrappers < pp->n_wrappers && n_wrappers < ARRAY_SIZE(wrappers); n_wrappers++)
			wrappers[n_wrappers] = pimg_pool_wrapper(st->image, pp, n_wrappers);
		struct journal_learned j = {
			.policy = pimg_policy_name(st->image), .pool = pimg_str(st->image, pp->name), .site = site, .object = obj,
			.build_id = l->build_id, .triggers = trig, .exe = c.exe, .reason = reason,
			.wrappers = wrappers, .n_wrappers = n_wrappers,
			.offset = l->object ? l->ra - l->bias : l->ra, .objects = l->objects, .bytes = l->bytes,
			.late = l->late,
			.written = l->written, .named = l->func[0] != '\0',
		};
		journal_learned(&j);
	}
	debug_printf("learn: %zu sites written to the journal (%s)", c.n, reason);
	heap_free(c.objs);
	heap_free(acc);
}

static void count_early(void *ctx, uint16_t site, size_t bytes)
{
	(void)ctx;
	(void)bytes;
	if (site != SITE_NONE && site <= SITE_SLOTS)
		atomic_fetch_add_explicit(&early[site - 1], 1, memory_order_relaxed);
}

void learn_note_protect(size_t i)
{
	if (!learn_st || i >= ARRAY_SIZE(snapped) || atomic_exchange(&snapped[i], 1))
		return;
	int busy = shim_busy_enter();
	pool_sites_walk(learn_st->pools[i].pool, true, count_early, NULL);
	shim_busy_leave(busy);
}

void learn_flush(const char *reason)
{
	if (!learn_st)
		return;
	int busy = shim_busy_enter();
	/* A flush under way (another thread's, or one a fork copied half-way)
	 * is left alone: its entries say the same. */
	if (pthread_mutex_trylock(&flush_lock) == 0) {
		flush_locked(reason);
		pthread_mutex_unlock(&flush_lock);
	}
	shim_busy_leave(busy);
}

__attribute__((destructor)) static void learn_at_exit(void)
{
	learn_flush("exit");
}
