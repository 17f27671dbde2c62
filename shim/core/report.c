/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * report.c - a violation reported: its record (struct pmw_report, the one
 * type it has up to the journal) filled once, its line on stderr, the
 * caller's stack walk, then the hand-off to the report sink (hooks.h: the
 * preloaded shim's pmallocd or journal; none in libpmalloc.so).
 *
 * Owns: filling the record (names, object, site, modules and build-ids of
 * the frames, the exported symbol of the faulting instruction), the report
 * lock, the stderr rate limit.  The wording is violation_fmt.c's.
 * Never: allocates, uses stdio, or takes a lock but its own spin lock.
 *
 * Reports are serialised by one lock (a spin lock, owner by thread id,
 * held with every signal blocked; taken after the audit window's, never
 * before it):
 * the handler of one thread waits for another's report to finish instead
 * of dropping its own, so every write is reported or counted.  A report
 * nested inside another on the same thread (a fault in its stack walk)
 * cannot wait for itself: it gets a record of its own, its stderr line is
 * written, its send counted as dropped.
 *
 * The stderr line is rate-limited like the journal (daemon.report_burst
 * lines per faulting instruction per daemon.report_interval_s; both 0: no
 * limit): an audited program writing in a loop must not fill a disk with
 * stderr.  What is held back is counted and summarised in one line when
 * that instruction's window ends, and at exit.  The daemon or journal
 * still gets every report (they have their own limit and count).
 *
 * Async-signal-safe throughout.  Module names come from _dl_find_object()
 * (dynsym.c), which glibc documents as AS-safe.  The records are static (under the
 * lock): the handler may run on a small alternate stack, and a record is
 * 3.4 KiB.
 */
#define _GNU_SOURCE
#include "report.h"
#include "life.h"
#include "dynsym.h"
#include "hooks.h"
#include "os.h"
#include "pool.h"
#include "site.h"
#include "violation_fmt.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_BURST 20u
#define DEFAULT_INTERVAL_S 10u
#define LIMIT_SLOTS 64          /* faulting instructions tracked; the last is shared */

struct limit_slot {
	uintptr_t ip;
	uint64_t window_start;  /* 0: slot free */
	unsigned int shown, held;
};

static _Atomic int report_owner;              /* thread id holding the lock, 0 free */
/* This thread is inside report_begin .. report_end: with report_owner, what
 * says a report is nested.  Two words, of two kinds of memory: one
 * overwritten (report_owner set to this thread's id) does not make a
 * report nested (a nested one gets a record of its own). */
static __thread int in_report __attribute__((tls_model("initial-exec")));
static sigset_t owner_mask;                   /* the owner's mask before report_begin */
static struct limit_slot slots[LIMIT_SLOTS];  /* under the lock */
static struct pmw_report record;              /* under the lock */
static struct pmw_report nested;              /* under nested_busy */
static struct pmw_report discard;             /* a report nested twice: not even stderr */
static char line[2560];                       /* under the lock or nested_busy; fits the
						 * longest escaped names */
static atomic_flag nested_busy = ATOMIC_FLAG_INIT;
static _Atomic unsigned long sends_dropped;   /* nested reports not sent */

static int thread_id(void)
{
	return os_gettid();
}

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = src ? strnlen(src, size - 1) : 0;
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

/* The armed policy's limits (hooks.h), else the defaults. */
static void limits(unsigned int *burst, unsigned int *interval_s)
{
	uint64_t generation;
	if (!core_hook.report_limits || !core_hook.report_limits(burst, interval_s, &generation)) {
		*burst = DEFAULT_BURST;
		*interval_s = DEFAULT_INTERVAL_S;
	}
}

static void summary(const struct limit_slot *s, bool shared, unsigned int burst, unsigned int interval_s)
{
	char buf[256];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_line_start(&f);
	fmt_printf(&f, "%u more write reports ", s->held);
	if (shared) {
		fmt_str(&f, "from other instructions");
	} else if (s->ip) {
		fmt_printf(&f, "at ip 0x%" PRIxPTR " (", s->ip);
		dynsym_location(&f, s->ip, true);
		fmt_str(&f, ")");
	} else {
		fmt_str(&f, "of unknown ip");
	}
	fmt_printf(&f, " not shown (rate limit: %u per %u s)\n", burst, interval_s);
	fmt_flush_stderr(&f);
}

/* May the line for a write at ip be shown now?  Under the lock. */
static bool limit_admits(uintptr_t ip)
{
	unsigned int burst, interval_s;
	limits(&burst, &interval_s);
	if (burst == 0 || interval_s == 0)
		return true;
	uint64_t now = os_monotonic_ns(true) | 1, len = (uint64_t)interval_s * 1000000000u;
	struct limit_slot *s = NULL;
	for (int i = 0; i < LIMIT_SLOTS - 1 && !s; i++) {
		struct limit_slot *c = &slots[i];
		if (c->window_start && now - c->window_start >= len) {
			if (c->held)
				summary(c, false, burst, interval_s);
			c->window_start = 0;
		}
		if (c->window_start && c->ip == ip)
			s = c;
	}
	for (int i = 0; i < LIMIT_SLOTS - 1 && !s; i++)
		if (!slots[i].window_start) {
			s = &slots[i];
			s->ip = ip;
		}
	bool shared = !s;
	if (shared) {
		s = &slots[LIMIT_SLOTS - 1];
		if (s->window_start && now - s->window_start >= len) {
			if (s->held)
				summary(s, true, burst, interval_s);
			s->window_start = 0;
		}
	}
	if (!s->window_start) {
		s->window_start = now;
		s->shown = s->held = 0;
	}
	if (s->shown < burst) {
		s->shown++;
		return true;
	}
	s->held++;
	return false;
}

/* The longest a report waits for another thread's: a report takes well
 * under a millisecond but for its stack walk and sends (a few ms); an
 * owner that holds the lock longer is taken to be a forged word. */
#define LOCK_WAIT_NS (2000000000ull)

static void lock(int me)
{
	int expected = 0;
	uint64_t since = 0;
	for (unsigned spins = 1; !atomic_compare_exchange_weak_explicit(&report_owner, &expected, me,
									memory_order_acquire, memory_order_relaxed);
	     spins++) {
		/* An owner that is no thread of ours (the word overwritten, or a
		 * thread gone) holds nothing: a fault handler must not wait for
		 * it for ever (it would hang instead of killing).  Nor for a
		 * live thread's id written there (issue 27, row 7): after
		 * LOCK_WAIT_NS the lock is taken over, the report made.  Looked
		 * at from the first spin on, then every 64: on a loaded machine
		 * 1024 yields before the first look took seconds (make tamper:
		 * a forged owner let the run hang past its deadline). */
		if (spins % 64 == 1) {
			uint64_t now = os_monotonic_ns(false);
			if (!since)
				since = now;
			if ((!os_thread_alive(expected) || now - since > LOCK_WAIT_NS) &&
			    atomic_compare_exchange_strong(&report_owner, &expected, me))
				return;
		}
		expected = 0;
		os_yield();
	}
}

static void unlock(void)
{
	atomic_store_explicit(&report_owner, 0, memory_order_release);
}

/* The build-id of the object mapped at [start, end), read from its program
 * headers in memory: no lock, no system call. */
static uint32_t build_id_of(const struct link_map *lm, uintptr_t start, uintptr_t end, uint8_t *out)
{
	const ElfW(Ehdr) *eh = (const void *)start;
	if (end - start < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return 0;
	uintptr_t ph = start + eh->e_phoff;
	if (eh->e_phoff == 0 || ph + (uintptr_t)eh->e_phnum * sizeof(ElfW(Phdr)) > end)
		return 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		const ElfW(Phdr) *p = (const void *)(ph + (uintptr_t)i * sizeof(ElfW(Phdr)));
		if (p->p_type != PT_NOTE)
			continue;
		uintptr_t n = lm->l_addr + p->p_vaddr, nend = n + p->p_memsz;
		if (n < start || nend > end)
			continue;
		while (n + sizeof(ElfW(Nhdr)) <= nend) {
			const ElfW(Nhdr) *nh = (const void *)n;
			uintptr_t name = n + sizeof(*nh);
			uintptr_t desc = name + ALIGN_UP(nh->n_namesz, 4);
			uintptr_t next = desc + ALIGN_UP(nh->n_descsz, 4);
			if (next > nend)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp((const void *)name, "GNU", 4) == 0) {
				uint32_t len = nh->n_descsz < PMW_BUILD_ID ? nh->n_descsz : PMW_BUILD_ID;
				memcpy(out, (const void *)desc, len);
				return len;
			}
			n = next;
		}
	}
	return 0;
}

/* Frame fr's module in r (added on first sight) and offset; PMW_NO_MODULE
 * when no object holds it or r has no room.  With build_id, the module's
 * build-id too, read from its headers in memory: after the stderr line
 * only (it reads the program's mappings). */
static void frame_resolve(struct pmw_report *r, struct pmw_frame *fr, bool build_id)
{
	struct dl_find_object dlfo;
	const struct link_map *lm;
	const char *name = dynsym_object(fr->ip, &lm, &dlfo);
	uint32_t i = 0;
	fr->module = PMW_NO_MODULE;
	if (!name)
		return;
	fr->offset = fr->ip - lm->l_addr;
	while (i < r->n_modules && r->modules[i].base != lm->l_addr)
		i++;
	if (i == r->n_modules) {
		if (i >= PMW_MODULES)
			return;
		copy_str(r->modules[i].path, sizeof(r->modules[i].path), name);
		r->modules[i].base = lm->l_addr;
		r->n_modules++;
	}
	struct pmw_module *mod = &r->modules[i];
	if (build_id && mod->build_id_len == 0)
		mod->build_id_len = build_id_of(lm, (uintptr_t)dlfo.dlfo_map_start, (uintptr_t)dlfo.dlfo_map_end,
						mod->build_id);
	fr->module = i;
}

/* The pool's and policy's names (the caller's: fault_names(), from the
 * read-only page; NULL: the pool struct's own, read within its fields) and
 * the policy generation: what the record takes from the shim's state. */
static void record_names(struct pmw_report *r, const struct pool_hit *hit, const char *pool,
			 const char *policy)
{
	unsigned int burst, interval_s;
	uint64_t generation = 0;
	if (core_hook.report_limits && !core_hook.report_limits(&burst, &interval_s, &generation))
		generation = 0;
	if (!pool) {
		pool = hit->pool->name[0] ? hit->pool->name : "(unnamed)";
		policy = hit->pool->policy;
	}
	copy_str(r->pool, sizeof(r->pool), pool);
	copy_str(r->policy, sizeof(r->policy), policy);
	r->generation = generation;
}

/* The object's allocation site: its symbol where the shim knows it, else
 * "module+0xoffset" (raw: escaped when formatted). */
static void record_site(struct pmw_report *r, uint16_t site)
{
	const char *sym = site_symbol(site);
	uintptr_t ra = site_address(site);
	if (sym) {
		copy_str(r->object_site, sizeof(r->object_site), sym);
	} else if (ra) {
		struct fmt f;
		fmt_init(&f, r->object_site, sizeof(r->object_site));
		dynsym_location(&f, ra, false);
		fmt_cstr(&f);
	}
}

static void record_fill(struct pmw_report *r, const struct pool_hit *hit, const char *pool, const char *policy,
			uintptr_t address, uintptr_t ip, bool audit)
{
	memset(r, 0, sizeof(*r));
	record_names(r, hit, pool, policy);
	r->mode = audit ? PMW_MODE_AUDIT : PMW_MODE_ENFORCE;
	r->address = address;
	if (hit->in_object) {
		r->object_start = hit->object;
		r->object_size = hit->object_size;
		r->offset = address - hit->object;
		record_site(r, hit->site);
	}
	copy_str(r->exe, sizeof(r->exe), dynsym_program());
	copy_str(r->role, sizeof(r->role), life_role());
	r->fault_ip = ip;
	r->frames[0].ip = ip;
	r->n_frames = ip ? 1 : 0;
	frame_resolve(r, &r->frames[0], false);     /* the line names ip's module */
}

static void write_line(const struct pmw_report *r)
{
	struct fmt f;
	fmt_init(&f, line, sizeof(line));
	fmt_line_start(&f);
	violation_fmt_line(&f, r);
	if (f.p == f.end && f.p > f.start)
		f.p[-1] = '\n';                  /* cut: still one whole line */
	fmt_flush_stderr(&f);
}

struct pmw_report *report_begin(const struct pool_hit *hit, const char *pool, const char *policy,
				uintptr_t address, uintptr_t ip, bool audit)
{
	int me = thread_id();
	struct pmw_report *r;
	if (atomic_load_explicit(&report_owner, memory_order_relaxed) == me && in_report) {
		/* Nested on this thread: the lock is ours further up. */
		r = atomic_flag_test_and_set(&nested_busy) ? &discard : &nested;
	} else {
		/* No signal handler runs on this thread while it holds the
		 * lock: one that faulted into an audit window another thread
		 * holds, while that thread waits here to report, would wait
		 * for ever. */
		sigset_t all, old;
		sigfillset(&all);
		os_sigmask(SIG_BLOCK, &all, &old);
		if (atomic_load_explicit(&report_owner, memory_order_relaxed) == me)
			unlock();        /* this thread's id, written by no report of ours */
		lock(me);
		owner_mask = old;
		in_report = 1;
		r = &record;
	}
	record_fill(r, hit, pool, policy, address, ip, audit);
	return r;
}

void report_cause(struct pmw_report *r, enum pmw_cause cause, const char *kernel_call)
{
	r->cause = cause;
	copy_str(r->kernel_call, sizeof(r->kernel_call), kernel_call);
}

void report_end(struct pmw_report *r, void (*walk)(struct pmw_report *r, void *arg), void *arg)
{
	if (r != &record) {
		if (r == &nested) {
			/* Sent too: a kill is always reported (the sink's buffer
			 * for violations is used under this lock only, and the
			 * outer report, whose walk faulted, is not in it). */
			write_line(r);
			if (core_hook.report_sink)
				core_hook.report_sink(r);
			atomic_flag_clear(&nested_busy);
			return;
		}
		atomic_fetch_add_explicit(&sends_dropped, 1, memory_order_relaxed);
		return;
	}
	if (limit_admits(r->fault_ip))
		write_line(r);
	if (walk)
		walk(r, arg);
	for (uint32_t i = 0; i < r->n_frames; i++)
		frame_resolve(r, &r->frames[i], true);
	/* Exported functions only: no symbol file is read in a faulting process. */
	if (r->fault_ip)
		dynsym_name(r->fault_ip, r->fault_symbol, sizeof(r->fault_symbol));
	if (core_hook.report_sink)
		core_hook.report_sink(r);   /* pmallocd or the journal, in the preloaded shim */
	sigset_t old = owner_mask;
	in_report = 0;
	unlock();
	os_sigmask(SIG_SETMASK, &old, NULL);
}

/* Held-back lines of windows still open, said at exit (also when the
 * shim is unloaded: a destructor, not atexit). */
__attribute__((destructor)) static void report_at_exit(void)
{
	unsigned int burst, interval_s;
	int me = thread_id();
	if (atomic_load(&report_owner) == me)
		return;
	lock(me);
	limits(&burst, &interval_s);
	for (int i = 0; i < LIMIT_SLOTS; i++)
		if (slots[i].window_start && slots[i].held) {
			summary(&slots[i], i == LIMIT_SLOTS - 1, burst, interval_s);
			slots[i].held = 0;
		}
	unsigned long lost = atomic_exchange(&sends_dropped, 0);
	if (lost) {
		char buf[160];
		struct fmt f;
		fmt_init(&f, buf, sizeof(buf));
		fmt_line_start(&f);
		fmt_printf(&f, "%lu nested write reports were shown here only (not sent)\n", lost);
		fmt_flush_stderr(&f);
	}
	unlock();
}

/* A child forked while another thread reported must not wait for it. */
static void report_after_fork_child(void)
{
	atomic_store(&report_owner, 0);
	atomic_flag_clear(&nested_busy);
	memset(slots, 0, sizeof(slots));      /* the parent's counts are the parent's to say */
	atomic_store(&sends_dropped, 0);
}

void report_init(void)
{
	static atomic_flag done = ATOMIC_FLAG_INIT;
	if (!atomic_flag_test_and_set(&done))
		pthread_atfork(NULL, NULL, report_after_fork_child);
}
