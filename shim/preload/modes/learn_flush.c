/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * learn_flush.c - learn mode's flush: what learn.c's contexts learned, one
 * journal entry per pool and context, each frame named; the periodic
 * thread that flushes, and the exec about to be made.
 *
 * Owns: the flush's numbering and delivery counts, the names of frames
 * read so far, the executable's path and build-id taken at start-up (a
 * chroot hides /proc/self/exe later), this process's run id, and the note
 * of an exec the loader will run in secure mode (learn_note_exec).  Reads
 * the context table through learn_inner.h and writes only its "sent"
 * fields (flush_lock).
 *
 * learn_flush() runs in normal context (exit, execve, pmallocctl
 * learn-flush) and on the shim's "pmalloc-learn" thread (every signal
 * blocked), started at the first protect of a learn pool: every context
 * then, those that changed every PMALLOC_LEARN_INTERVAL seconds (10), all
 * at exit and exec; numbered flushes of cumulative counts (propose keeps
 * each context's latest per process).  It reads symbol files once per
 * frame (names kept between flushes) and allocates with the shim's guard
 * set; never from a signal handler; the thread waits on journald at most
 * 50 ms an entry and 400 ms a flush, and not at all once one entry did
 * not go (below).
 */
#define _GNU_SOURCE
#include "learn.h"
#include "learn_inner.h"
#include "stderr.h"
#include "fault.h"
#include "heap.h"
#include "journal.h"
#include "os.h"
#include "armed.h"
#include "site.h"
#include "symtab.h"
#include "libc.h"
#include "thread.h"

#include <errno.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
/* The delivery (README, "Learned entries"): this process's flushes are
 * numbered (PMALLOC_LEARN_SEQ, from 1 in each process); entries journald
 * did not take are counted (PMALLOC_LEARN_UNSENT, this process's total)
 * and their contexts sent again at the next flush.  flush_lock. */
static uint32_t flush_epoch = 1, flush_seq;
static uint64_t unsent;
/* The periodic flush: a thread of the shim's, started at the first protect
 * of a learn pool, every interval_s (PMALLOC_LEARN_INTERVAL, seconds;
 * 0: none).  A forked child starts its own. */
#define LEARN_INTERVAL_S 10
static unsigned interval_s = LEARN_INTERVAL_S;
static _Atomic int flusher;            /* 1 once started in this process */
/* The executable as it was at start-up: a chroot or a dropped privilege
 * hides /proc/self/exe later (haproxy). */
static char exe_path[512];
static char exe_build_id[SYMTAB_BUILD_ID_MAX];
/* The exec about to be made (learn_note_exec), for the exec flush; "" when
 * none.  flush_lock. */
static char exec_path[512];
static bool exec_secure;
/* This process's learn run (LEARN-FORMAT: PMALLOC_RUN), hex; a forked
 * child keeps it (the same run of the program). */
static char run_id[33];

static void flusher_start(void);

/* The marks (learn_marks) the journal has, as the last flush found them;
 * MARKS_RETRY when a written context's entry was not taken.  A mark newer
 * than these is sent at the program's next wait call, by the thread that
 * makes it, before it waits (learn_at_wait).  Why not leave it to the
 * periodic flush: a server goes to sleep in its event loop once a request
 * is answered, and a worker stopped then by a signal it does not handle
 * (haproxy's, SIGTERM from its master) or by SIGKILL never flushes again:
 * the marks of its last interval were lost, the journal kept the
 * trigger's "never written" for those contexts, propose protected what
 * the learn load wrote, and enforce killed at the same request.  A
 * context is marked once, so this costs a flush (a few ms: every frame
 * sorted, new ones named) at the wait calls after the first requests that
 * write a context never written before, and two loads and a compare at
 * every other wait. */
#define MARKS_RETRY UINT64_MAX
static _Atomic uint64_t marks_sent;

/* A fork waits for a flush under way (the shim's thread's, at most a
 * symbol read and a burst of sends that never wait): the child must not
 * get the flush's tables half-way changed. */
static void lock_take_fork(void)
{
	pthread_mutex_lock(&flush_lock);
}

static void lock_drop_fork(void)
{
	pthread_mutex_unlock(&flush_lock);
}

/* The forked child: its own flushes (a new epoch: every context is sent
 * again under its pid), its own periodic thread where its parent had
 * one. */
static _Atomic int wait_flush;
static _Atomic uint64_t wait_flush_due;

static void lock_child(void)
{
	pthread_mutex_unlock(&flush_lock);
	flush_epoch++;
	flush_seq = 0;
	unsent = 0;
	atomic_store(&wait_flush, 0);
	if (atomic_exchange(&flusher, 0))
		flusher_start();
}

static int exe_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0;
	if (!symtab_build_id(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr, exe_build_id))
		exe_build_id[0] = '\0';
	return 1;
}

static void exe_at_start(void)
{
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	exe_path[n > 0 ? n : 0] = '\0';
	dl_iterate_phdr(exe_object, NULL);
}

static void new_run_id(void)
{
	unsigned char r[16];
	if (os_random(r, sizeof(r)) < 0) {
		/* No entropy source: time and pid still tell runs apart. */
		uint64_t t = os_monotonic_ns(false), pid = (uint64_t)getpid();
		memcpy(r, &t, 8);
		memcpy(r + 8, &pid, 8);
	}
	for (size_t k = 0; k < sizeof(r); k++)
		snprintf(run_id + 2 * k, 3, "%02x", r[k]);
}

void learn_flush_init(void)
{
	new_run_id();
	exe_at_start();
	const char *iv = secure_getenv("PMALLOC_LEARN_INTERVAL");
	if (iv && *iv) {
		char *end;
		unsigned long v = strtoul(iv, &end, 10);
		if (!*end && v <= 86400)
			interval_s = (unsigned)v;
	}
	/* Registered after learn.c's handlers: the flush's lock is taken
	 * before learn_lock, as a flush never takes the other. */
	pthread_atfork(lock_take_fork, lock_drop_fork, lock_child);
}

/* One frame address to name, at flush time. */
struct lframe {
	uintptr_t ra;
	int obj;                           /* index in objs, -1: none found */
	char *func;                        /* the shim's heap, NULL: not named; owned by the table */
};

struct lobj {
	char path[512];
	uintptr_t bias;
	char build_id[SYMTAB_BUILD_ID_MAX];
};

struct flush_ctx {
	struct lframe *fr;
	size_t n;
	struct lobj *objs;
	size_t n_objs, cap_objs;
	char exe[512];
	char exe_build_id[SYMTAB_BUILD_ID_MAX];
	size_t lo, hi;                     /* the frames of the object being read */
};

/* The frames named by the last flush, by address (flush_lock): a periodic
 * flush reads no symbol file for them again, and names them still once a
 * chroot hides the files. */
static struct lframe *named;
static size_t n_named;
/* Both words sealed together with the shim's secret (os.h): a forged count
 * or pointer would have the flush read past the table and free what it
 * finds there; a table whose seal does not hold is dropped (left, not
 * freed) and its frames named again from the files. */
static uintptr_t named_seal;
static uintptr_t named_seal_of(const struct lframe *t, size_t n)
{
	return ((uintptr_t)t ^ ((uintptr_t)n * UINT64_C(0x9e3779b97f4a7c15))) ^ os_secret;
}
static void named_check(void)
{
	if (named_seal != named_seal_of(named, n_named)) {
		named = NULL;
		n_named = 0;
		named_seal = named_seal_of(NULL, 0);
	}
}

static int uptr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* The objects loaded now that hold frames: path, bias, build-id. */
static int visit_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct flush_ctx *c = arg;
	bool is_exe = !info->dlpi_name || !info->dlpi_name[0];
	const char *name = is_exe ? c->exe : info->dlpi_name;
	if (strncmp(name, "linux-vdso", 10) == 0)
		return 0;
	if (is_exe && !symtab_build_id(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr, c->exe_build_id))
		c->exe_build_id[0] = '\0';
	int obj = -1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		for (size_t k = 0; k < c->n; k++) {
			if (c->fr[k].ra <= lo || c->fr[k].ra > hi || c->fr[k].obj >= 0)
				continue;
			if (obj < 0) {
				if (c->n_objs == c->cap_objs) {
					size_t cap = c->cap_objs ? c->cap_objs * 2 : 8;
					struct lobj *no = heap_realloc(c->objs, cap * sizeof(*no));
					if (!no)
						return 1;
					c->objs = no;
					c->cap_objs = cap;
				}
				obj = (int)c->n_objs++;
				struct lobj *o = &c->objs[obj];
				snprintf(o->path, sizeof(o->path), "%s", name);
				o->bias = info->dlpi_addr;
				if (!symtab_build_id(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr, o->build_id))
					o->build_id[0] = '\0';
			}
			c->fr[k].obj = obj;
		}
	}
	return 0;
}

static int name_frames(void *arg, const char *name, uintptr_t start, size_t size)
{
	struct flush_ctx *c = arg;
	/* The first frame whose call lies at or after start. */
	size_t lo = c->lo, hi = c->hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->fr[mid].ra - 1 < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < c->hi && c->fr[k].ra - 1 < start + size; k++)
		if (!c->fr[k].func) {
			size_t len = strnlen(name, 255);
			char *f = heap_malloc(len + 1);
			if (f) {
				memcpy(f, name, len);
				f[len] = '\0';
				c->fr[k].func = f;
			}
		}
	return 0;
}

static const struct lframe *frame_find(const struct flush_ctx *c, uintptr_t ra)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->fr[mid].ra < ra)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->n && c->fr[lo].ra == ra ? &c->fr[lo] : NULL;
}

/* Text appended to a buffer of fixed size; what does not fit is not
 * written (ok false). */
struct sbuf {
	char *p;
	size_t len, cap;
	bool ok;
};

static void sb_add(struct sbuf *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	int n = b->ok ? vsnprintf(b->p + b->len, b->cap - b->len, format, ap) : -1;
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->len) {
		b->ok = false;
		b->p[b->len] = '\0';
		return;
	}
	b->len += (size_t)n;
}

/* OBJECT with '%', space and control bytes percent-encoded. */
static void put_path(struct sbuf *b, const char *path)
{
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p == '%' || *p == ' ' || *p < 0x20 || *p == 0x7f)
			sb_add(b, "%%%02X", *p);
		else
			sb_add(b, "%c", *p);
	}
}

/* Frame text "OBJECT@BUILDID+0xOFF[=FUNCTION]". */
static void put_frame(struct sbuf *b, const struct flush_ctx *c, uintptr_t ra)
{
	const struct lframe *fr = frame_find(c, ra);
	const struct lobj *o = fr && fr->obj >= 0 ? &c->objs[fr->obj] : NULL;
	if (!o) {
		sb_add(b, "?@-+0x%lx", (unsigned long)ra);
		return;
	}
	put_path(b, o->path);
	sb_add(b, "@%s+0x%lx", o->build_id[0] ? o->build_id : "-", (unsigned long)(ra - o->bias));
	if (fr->func)
		sb_add(b, "=%s", fr->func);
}

/* "name+0xOFF" (or "object+0xOFF" without a name) of frame ra, for people. */
static void short_frame(char *buf, size_t len, const struct flush_ctx *c, uintptr_t ra)
{
	const struct lframe *fr = frame_find(c, ra);
	const struct lobj *o = fr && fr->obj >= 0 ? &c->objs[fr->obj] : NULL;
	if (!o) {
		snprintf(buf, len, "0x%lx", (unsigned long)ra);
		return;
	}
	const char *base = strrchr(o->path, '/');
	base = base ? base + 1 : o->path;
	if (fr->func)
		snprintf(buf, len, "%s:%s", base, fr->func);
	else
		snprintf(buf, len, "%s+0x%lx", base, (unsigned long)(ra - o->bias));
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
		else if (tr->kind == POLICY_TRIGGER_ON_WAIT)
			w = snprintf(buf + n, len - n, "%son-wait", sep);
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

/* Decimal with thousands separators, for the MESSAGE. */
static const char *grouped(char *buf, size_t len, uint64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v), o = 0;
	for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

static bool flush_one(const struct shim_state *st, const struct flush_ctx *c, const struct lctx *x, uint32_t id,
		      const char *reason, char *chain, size_t chain_len, unsigned wait_ms)
{
	const struct pimg_pool *pp = pimg_pool(st->image, x->pool);
	char trig[256], site[300], first[800], second[800], msg[2048], b1[32], b2[32];
	/* The entry has room for about 6 KiB of chain: frames that do not
	 * fit are left off whole, never cut. */
	struct sbuf b = { chain, 0, chain_len < 6000 ? chain_len : 6000, true };
	chain[0] = '\0';
	for (unsigned k = 0; k < x->n_frames && k < LEARN_FRAMES; k++) {
		size_t before = b.len;
		if (k)
			sb_add(&b, " ");
		put_frame(&b, c, x->frames[k]);
		if (!b.ok) {
			chain[before] = '\0';
			break;
		}
	}
	triggers_text(st->image, pp, trig, sizeof(trig));
	uint64_t objects = atomic_load(&x->objects), bytes = atomic_load(&x->bytes);
	uint64_t fo = atomic_load(&x->freed_objects), fb = atomic_load(&x->freed_bytes);
	fo = fo > objects ? objects : fo;     /* a double free counts once at most */
	fb = fb > bytes ? bytes : fb;
	uint64_t eo, eb;
	learn_early(x, strcmp(reason, "exec") == 0, &eo, &eb);
	eo = eo > fo ? fo : eo;
	eb = eb > fb ? fb : eb;
	short_frame(first, sizeof(first), c, x->frames[0]);
	if (x->n_frames > 1)
		short_frame(second, sizeof(second), c, x->frames[1]);
	snprintf(msg, sizeof(msg), "learned: pool %s, %llu objects (%s bytes, %s live) from %s%s%s%s%s",
		 pimg_str(st->image, pp->name), (unsigned long long)objects, grouped(b1, sizeof(b1), bytes),
		 grouped(b2, sizeof(b2), bytes - fb), first, x->n_frames > 1 ? " <- " : "",
		 x->n_frames > 1 ? second : "", x->n_frames > 2 ? " <- ..." : "",
		 atomic_load(&x->written) ? ", written after protection"
		 : atomic_load(&x->late_objects) ? ", allocating after the trigger" : "");
	/* The round-2 fields name the site routing charged (wrappers looked
	 * through), else frame 0. */
	uintptr_t site_ra = site_address(x->site) ? site_address(x->site) : x->frames[0];
	const struct lframe *fr = frame_find(c, site_ra);
	const struct lobj *o = fr && fr->obj >= 0 ? &c->objs[fr->obj] : NULL;
	char site_short[300];
	short_frame(site_short, sizeof(site_short), c, site_ra);
	snprintf(site, sizeof(site), "%.299s", fr && fr->func ? fr->func : site_short);
	const char *wrappers[64];
	size_t n_wrappers = 0;
	for (; n_wrappers < pp->n_wrappers && n_wrappers < ARRAY_SIZE(wrappers); n_wrappers++)
		wrappers[n_wrappers] = pimg_pool_wrapper(st->image, pp, n_wrappers);
	struct journal_learned j = {
		.policy = pimg_policy_name(st->image), .pool = pimg_str(st->image, pp->name), .site = site,
		.object = o ? o->path : "?", .build_id = o ? o->build_id : "", .triggers = trig, .exe = c->exe,
		.reason = reason, .run = run_id, .exe_build_id = c->exe_build_id, .chain = chain,
		.message = msg, .wrappers = wrappers, .n_wrappers = n_wrappers,
		.offset = o ? site_ra - o->bias : site_ra,
		.policy_loaded_us = st->image->loaded_us,
		.objects = objects, .bytes = bytes, .live_objects = objects - fo, .live_bytes = bytes - fb,
		.freed_objects = fo, .freed_bytes = fb, .trigger_live_objects = objects - eo,
		.trigger_live_bytes = bytes - eb, .late_objects = atomic_load(&x->late_objects),
		.late_bytes = atomic_load(&x->late_bytes), .written_bytes = atomic_load(&x->written_bytes),
		.written = atomic_load(&x->written) != 0, .named = fr && fr->func,
		.seq = flush_seq, .ctx = id, .unsent = unsent, .protected = pool_closed(st->pools[x->pool].pool),
		.exec = strcmp(reason, "exec") == 0 ? exec_path : "", .secure_exec = exec_secure,
		.wait_ms = wait_ms,
	};
	return journal_learned(&j);
}

/* Does context x need an entry in this flush? all: every context with
 * objects; else those whose counts moved since the journal took them. */
static bool flush_due(const struct lctx *x, bool all)
{
	uint64_t objects = atomic_load(&x->objects), late = atomic_load(&x->late_objects);
	if (!objects && !late)
		return false;
	return all || x->sent_epoch != flush_epoch || x->sent_objects != objects || x->sent_late != late ||
	       x->sent_freed != atomic_load(&x->freed_objects) || x->sent_written != atomic_load(&x->written);
}

/* The frames of contexts [1, n) and their sites' addresses, each once,
 * sorted: *ret_n of them, in the shim's heap (NULL: no memory).  Through
 * a hash set sized by the frames found (hint: the last flush's count),
 * not an array of every context's frames: that was n x 17 words a flush
 * (haproxy's worker: 475 KB for its 2,000 distinct frames), and given
 * back to the heap at once it was counted in its resident peak. */
static size_t frame_slot(uintptr_t ra, unsigned bits)
{
	return (size_t)(((uint64_t)ra * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - bits));
}

/* ra (not 0) into set, 1 << bits slots, linear probing: true when it was
 * not there yet.  The set always has an empty slot (at most half full). */
static bool frame_put(uintptr_t *set, unsigned bits, uintptr_t ra)
{
	size_t mask = ((size_t)1 << bits) - 1, h = frame_slot(ra, bits);
	while (set[h] != 0 && set[h] != ra)
		h = (h + 1) & mask;
	if (set[h] == ra)
		return false;
	set[h] = ra;
	return true;
}

static uintptr_t *frame_set(const struct lctx *ctxs, uint32_t n, size_t hint, size_t *ret_n)
{
	unsigned bits = 10;
	/* The hint is bounded by the frames there can be (named's count is
	 * a writable word, sealed but not trusted for a size). */
	if (hint > (size_t)n * (LEARN_FRAMES + 1))
		hint = (size_t)n * (LEARN_FRAMES + 1);
	while (bits < 30 && ((size_t)1 << bits) < 2 * hint)
		bits++;
	uintptr_t *set = heap_calloc((size_t)1 << bits, sizeof(*set));
	size_t used = 0;
	for (uint32_t id = 1; set && id < n; id++) {
		unsigned nf = ctxs[id].n_frames < LEARN_FRAMES ? ctxs[id].n_frames : LEARN_FRAMES;
		for (unsigned k = 0; set && k <= nf; k++) {
			uintptr_t ra = k < nf ? ctxs[id].frames[k] : site_address(ctxs[id].site);
			if (ra == 0)
				continue;          /* no site address (0 is the set's empty slot) */
			if (!frame_put(set, bits, ra) || ++used * 2 <= ((size_t)1 << bits))
				continue;
			/* Half full: twice the slots, every frame placed again. */
			uintptr_t *big = bits < 30 ? heap_calloc((size_t)2 << bits, sizeof(*big)) : NULL;
			if (big) {
				for (size_t s = 0; s < ((size_t)1 << bits); s++)
					if (set[s] != 0)
						(void)frame_put(big, bits + 1, set[s]);
				bits++;
			}
			heap_free(set);
			set = big;
		}
	}
	if (!set)
		return NULL;
	size_t u = 0;
	for (size_t s = 0; s < (size_t)1 << bits; s++)
		if (set[s] != 0)
			set[u++] = set[s];
	qsort(set, u, sizeof(*set), uptr_cmp);
	*ret_n = u;
	return set;
}

static void flush_locked(const struct shim_state *st, const char *reason, bool all)
{
	struct flush_ctx c;
	memset(&c, 0, sizeof(c));
	uint32_t n_ctx_now;
	uint64_t marks = learn_marks();    /* before the written flags are read */
	struct lctx *ctxs = learn_contexts(&n_ctx_now);
	size_t due = 0;
	for (uint32_t id = 1; id < n_ctx_now; id++)
		due += flush_due(&ctxs[id], all);
	if (!due) {
		atomic_store(&marks_sent, marks);
		return;
	}
	/* Every frame of every context, once, sorted. */
	named_check();
	size_t n_uniq = 0;
	uintptr_t *uniq = frame_set(ctxs, n_ctx_now, n_named, &n_uniq);
	char *chain = heap_malloc(8192);
	if (!uniq || !chain) {
		heap_free(uniq);
		heap_free(chain);
		return;
	}
	c.fr = heap_calloc(n_uniq + 1, sizeof(*c.fr));
	bool *known = heap_calloc(n_uniq + 1, sizeof(*known));
	if (!c.fr || !known) {
		heap_free(c.fr);
		heap_free(known);
		heap_free(uniq);
		heap_free(chain);
		return;
	}
	/* Frames the last flush named keep their names (taken over from the
	 * old table, in address order); only objects with frames new since
	 * are read. */
	named_check();
	for (size_t k = 0, o = 0; k < n_uniq; k++) {
		c.fr[c.n].ra = uniq[k];
		c.fr[c.n].obj = -1;
		while (o < n_named && named[o].ra < uniq[k])
			o++;
		if (o < n_named && named[o].ra == uniq[k]) {
			c.fr[c.n].func = named[o].func;
			named[o].func = NULL;
			known[c.n] = true;
		}
		c.n++;
	}
	heap_free(uniq);
	snprintf(c.exe, sizeof(c.exe), "%s", exe_path);
	if (!c.exe[0]) {
		ssize_t n = readlink("/proc/self/exe", c.exe, sizeof(c.exe) - 1);
		c.exe[n > 0 ? n : 0] = '\0';
	}
	dl_iterate_phdr(visit_object, &c);
	if (exe_build_id[0])
		memcpy(c.exe_build_id, exe_build_id, sizeof(c.exe_build_id));
	/* Name the frames of each object from its symbol table (read once per
	 * object); the frames are sorted by address, an object's adjacent. */
	for (size_t o = 0; o < c.n_objs; o++) {
		size_t lo = 0;
		while (lo < c.n && c.fr[lo].obj != (int)o)
			lo++;
		size_t hi = lo;
		bool fresh = false;
		while (hi < c.n && c.fr[hi].obj == (int)o) {
			fresh |= !known[hi];
			hi++;
		}
		c.lo = lo;
		c.hi = hi;
		if (hi > lo && fresh)
			symtab_for_each_function(c.objs[o].path, c.objs[o].bias, name_frames, &c);
	}
	heap_free(known);
	flush_seq++;
	size_t written = 0, failed = 0, failed_marks = 0;
	/* A busy journald gets a quarter second an entry at exit or exec (the
	 * last chance), 50 ms on the shim's thread (what does not go is sent
	 * again next time).  Why wait at all: without a booted systemd (a
	 * container) the kernel queues 10 datagrams on journald's socket
	 * (net.unix.max_dgram_qlen, which systemd raises to 512 at boot), so a
	 * flush that never waits loses most of a burst whenever journald is a
	 * moment late. */
	unsigned wait_ms = strcmp(reason, "periodic") == 0 || strcmp(reason, "trigger") == 0 ||
			   strcmp(reason, "written") == 0 ? 50 : 250;
	/* And at most 8 such waits' time in all, a flush: a stalled journald
	 * must not hold the exit, nor a fork (which waits for flush_lock), for
	 * longer; journald taking each entry just before its wait ends must
	 * not make a flush of 800 contexts last 40 s.  Within that, an entry
	 * that did not go does not stop the next from waiting: a journald a
	 * quarter second late once (other processes' bursts) cost an exit
	 * flush every entry after it (haproxy's old worker: 2,275 of 3,543,
	 * the frees of its teardown among them, so propose protected what it
	 * frees and enforce killed it there). */
	uint64_t wait_end = os_monotonic_ns(true) + 8ull * wait_ms * 1000000u;
	/* The written contexts first: a written mark journald does not take
	 * leaves a written site proposed (a kill in enforce), an unwritten
	 * entry lost only leaves a site out.  Then the other contexts whose
	 * counts moved (a free, a late allocation: each can leave a site out
	 * too), then, in a flush of every context, those the journal has as
	 * they are.  (A context written between the passes waits for the next
	 * flush: its mark is due then.) */
	bool *moved = heap_calloc(n_ctx_now, sizeof(*moved));   /* as the flush began: a send changes it */
	for (uint32_t id = 1; moved && id < n_ctx_now; id++)
		moved[id] = flush_due(&ctxs[id], false);
	for (int pass = 0; pass < 3; pass++)
	for (uint32_t id = 1; id < n_ctx_now; id++) {
		struct lctx *x = &ctxs[id];
		uint8_t wr = atomic_load(&x->written);
		if (!flush_due(x, all) || (pass == 0) != (wr != 0) || (pass > 0 && moved && (pass == 1) != moved[id]) ||
		    (pass == 2 && !moved))
			continue;
		uint64_t objects = atomic_load(&x->objects), late = atomic_load(&x->late_objects);
		uint64_t freed = atomic_load(&x->freed_objects);
		uint64_t now = os_monotonic_ns(true);
		unsigned left = now >= wait_end ? 0 : (unsigned)((wait_end - now) / 1000000u);
		if (flush_one(st, &c, x, id, reason, chain, 8192, left < wait_ms ? left : wait_ms)) {
			x->sent_epoch = flush_epoch;
			x->sent_objects = objects;
			x->sent_late = late;
			x->sent_freed = freed;
			x->sent_written = wr;
			written++;
		} else {
			/* Sent again at the next flush (its counts do not match). */
			x->sent_epoch = 0;
			failed++;
			failed_marks += wr != 0;
		}
	}
	heap_free(moved);
	unsent += failed;
	atomic_store(&marks_sent, failed_marks ? MARKS_RETRY : marks);
	debug_printf("learn: flush %u (%s): %zu contexts written to the journal, %zu not taken; "
		     "%llu allocations without a context", flush_seq, reason, written, failed,
		     (unsigned long long)learn_lost());
	named_check();
	for (size_t k = 0; k < n_named; k++)
		heap_free(named[k].func);      /* frames no context has any more (none, today) */
	heap_free(named);
	named = c.fr;
	n_named = c.n;
	named_seal = named_seal_of(named, n_named);
	heap_free(c.objs);
	heap_free(chain);
}

/* Once the exit flush is done, the periodic thread stops: an entry after
 * the last would say the process did not end. */
static _Atomic int exited;

static void flush_as(const char *reason, bool all)
{
	/* The state taken once, believed only as learn_state() checks it:
	 * learn_st is a writable word, and a forged one seen by the
	 * periodic thread (a fork's first flush) took the process down
	 * with a NULL read before its kill was reported (tamper.sh). */
	const struct shim_state *st = learn_state();
	if (!st)
		return;
	int busy = shim_busy_enter();
	pthread_mutex_lock(&flush_lock);
	if (!atomic_load(&exited) || strcmp(reason, "exit") == 0)
		flush_locked(st, reason, all);
	if (strcmp(reason, "exec") == 0) {
		exec_path[0] = '\0';     /* said once: an exec that failed is not the next one */
		exec_secure = false;
	}
	if (strcmp(reason, "exit") == 0)
		atomic_store(&exited, 1);
	pthread_mutex_unlock(&flush_lock);
	shim_busy_leave(busy);
}

void learn_flush(const char *reason)
{
	if (!learn_active())
		return;
	if (strcmp(reason, "exit") == 0)
		learn_window_unfinished();   /* a stop in a reload window (learn.c) */
	flush_as(reason, true);
}

/* The periodic thread: every context at the first protect, then every
 * interval_s those that changed. */
static void *flusher_main(void *arg)
{
	(void)arg;
	flush_as("trigger", true);
	while (interval_s && !atomic_load(&exited)) {
		os_sleep_until_ns(os_monotonic_ns(false) + (uint64_t)interval_s * 1000000000u);
		flush_as("periodic", false);
	}
	return NULL;
}

/* The periodic flush's thread (thread.c): a stack for the flush's frames
 * and the unwinder's. */
static void flusher_start(void)
{
	if (atomic_exchange(&flusher, 1))
		return;
	if (!shim_thread_start(flusher_main, "pmalloc-learn", 256 * 1024)) {
		/* haproxy's workers set RLIMIT_NPROC to 0 (no fork, no thread):
		 * the flushes are then made at the program's wait calls. */
		atomic_store(&wait_flush_due, 0);
		atomic_store(&wait_flush, 1);
		debug_printf("learn: no thread for the periodic flush: flushed at the program's wait calls");
	}
}

/* A wait call of the program's (trigger.c, before the call): a context
 * marked written since the last flush is sent now (marks_sent says why);
 * a process whose flush thread could not start flushes here too: the
 * trigger's flush at the first, then those that changed once interval_s
 * has passed.  One thread flushes (the one that moves the due time, or
 * the marks sent), the others go on; the flush is the thread's own time,
 * before it waits, as an exit flush is. */
void learn_at_wait(void)
{
	uint64_t marks = learn_marks(), sent = atomic_load_explicit(&marks_sent, memory_order_relaxed);
	bool wf = atomic_load_explicit(&wait_flush, memory_order_relaxed);
	if (likely(!wf && marks == sent))
		return;
	const char *reason = NULL;
	bool all = false;
	if (wf) {
		uint64_t now = os_monotonic_ns(true), due = atomic_load(&wait_flush_due);
		uint64_t next = interval_s ? now + (uint64_t)interval_s * 1000000000u : UINT64_MAX;
		if (now >= due && atomic_compare_exchange_strong(&wait_flush_due, &due, next)) {
			reason = due == 0 ? "trigger" : "periodic";
			all = due == 0;
		}
	}
	if (!reason && marks != sent && atomic_compare_exchange_strong(&marks_sent, &sent, marks))
		reason = "written";
	if (!reason)
		return;
	int e = errno;
	flush_as(reason, all);
	errno = e;
}

void learn_note_exec(const char *path)
{
	struct stat st;
	if (!learn_active() || !path)
		return;
	bool secure = false;
	if (stat(path, &st) == 0) {
		secure = ((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
			 ((st.st_mode & S_ISGID) && st.st_gid != getegid()) ||
			 getxattr(path, "security.capability", NULL, 0) > 0;
	}
	pthread_mutex_lock(&flush_lock);
	snprintf(exec_path, sizeof(exec_path), "%s", path);
	exec_secure = secure;
	pthread_mutex_unlock(&flush_lock);
	if (secure)
		debug_printf("learn: exec of %s in secure mode (set-id or capabilities): the loader ignores "
			     "LD_PRELOAD, it runs without the shim and learns nothing", path);
}

void learn_note_protected(void)
{
	if (learn_active())
		flusher_start();
}

__attribute__((destructor)) static void learn_at_exit(void)
{
	learn_flush("exit");
}
