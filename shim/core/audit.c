/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * audit.c - the audit window: a protected page made writable for one
 * let-through write (a single-stepped store, or a kernel write copied in),
 * then protected again.
 *
 * The page is writable for every thread while it is open, so:
 *   - windows are serialised, one at a time in the process (a spin lock
 *     owned by thread id): a thread that faults meanwhile waits in its
 *     handler for a few microseconds instead of writing through someone
 *     else's window unseen;
 *   - each page is copied before it is opened and compared after it is
 *     protected again: a byte that changed outside the let-through write
 *     (the 64 bytes from the faulting address, the widest x86 store; the
 *     copied range for a kernel write) was written by another thread that
 *     did not fault because the page was open.  Each such run of changed
 *     bytes is reported as its own write ("ip unknown"), before the window is
 *     released.  Limits, stated in
 *     the README: a store of the value already there changes nothing and is
 *     not seen; several stores to the same bytes within one window are one
 *     report; another thread's store within those 64 bytes is taken for the
 *     stepped one's.
 *
 * Once per site: the first audited write into an object of a site (its
 * allocation site) in this process is reported and stepped as above;
 * each later one is counted, not reported again, and its page is left
 * writable for good (as learn mode does), so that a server whose every
 * request writes a start-up object faults about once per page, not once
 * per request.  The price, stated in the README: once a page is open, a
 * write there by another site is no longer seen in this process; and the
 * bitmap that says "reported" is writable (audit lets writes through
 * anyway: it is evidence, not protection).  The count is said at exit.
 *
 * Async-signal-safe (the fault and trap handlers use it): no malloc, no
 * stdio; the snapshot buffers are static.  Never used in enforce mode.
 */
#define _GNU_SOURCE
#include "audit.h"
#include "stderr.h"
#include "arena.h"
#include "os.h"
#include "pool.h"
#include "report.h"
#include "fmt.h"
#include "site.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define WIN_PAGES 4             /* a straddling store, and one nested in a handler */
#define SNAP_PAGE AUDIT_PAGE
#define STORE_MAX 64            /* widest store of one instruction (AVX-512) */

struct window {
	_Atomic int owner;          /* thread id, 0 when closed */
	int n;
	uintptr_t ip;               /* the stepped store's instruction, 0 for a copy-in */
	uintptr_t page[WIN_PAGES];
	uintptr_t own_lo[WIN_PAGES], own_hi[WIN_PAGES];   /* the let-through bytes */
};

static struct window win;
static unsigned char snap[WIN_PAGES][SNAP_PAGE] __attribute__((aligned(64)));

static int thread_id(void)
{
	return os_gettid();
}

bool audit_window_mine(void)
{
	return atomic_load_explicit(&win.owner, memory_order_acquire) == thread_id();
}

static void acquire(int me)
{
	int expected = 0;
	for (unsigned spins = 1; !atomic_compare_exchange_weak_explicit(&win.owner, &expected, me,
									memory_order_acquire, memory_order_relaxed);
	     spins++) {
		/* An owner that is no thread of ours (the word overwritten)
		 * holds nothing: waiting for it would hang a fault handler. */
		if (spins % 1024 == 0 && !os_thread_alive(expected) &&
		    atomic_compare_exchange_strong(&win.owner, &expected, me))
			return;
		expected = 0;
		os_yield();
	}
}

bool audit_window_continues(uintptr_t addr, uintptr_t ip)
{
	if (!audit_window_mine() || win.ip != ip || win.ip == 0)
		return false;
	uintptr_t page = addr & ~(uintptr_t)(SNAP_PAGE - 1);
	for (int i = 0; i < win.n; i++)
		if (win.page[i] == page)
			return false;
	return true;
}

/* Open page for the let-through bytes [lo, hi); the window is ours. */
static int open_page(uintptr_t page, uintptr_t lo, uintptr_t hi)
{
	for (int i = 0; i < win.n; i++)
		if (win.page[i] == page) {
			win.own_lo[i] = lo < win.own_lo[i] ? lo : win.own_lo[i];
			win.own_hi[i] = hi > win.own_hi[i] ? hi : win.own_hi[i];
			return 0;
		}
	if (win.n == WIN_PAGES || os_page_size != SNAP_PAGE)
		return -ENOSPC;
	memcpy(snap[win.n], (const void *)page, SNAP_PAGE);
	int r = os_protect_rw((void *)page, SNAP_PAGE);
	if (r < 0)
		return r;
	win.page[win.n] = page;
	win.own_lo[win.n] = lo;
	win.own_hi[win.n] = hi;
	win.n++;
	return 0;
}

/* Protect the window's pages again and report what changed in them; the
 * window stays ours. */
static void flush_pages(void);

int audit_window_add(uintptr_t addr, uintptr_t ip)
{
	int me = thread_id();
	bool fresh = atomic_load_explicit(&win.owner, memory_order_acquire) != me;
	if (fresh) {
		acquire(me);
		win.n = 0;
		win.ip = ip;
	} else if (win.n == WIN_PAGES && ip == win.ip) {
		flush_pages();           /* a rep string instruction going on and on */
	}
	uintptr_t page = addr & ~(uintptr_t)(SNAP_PAGE - 1);
	uintptr_t hi = addr + STORE_MAX < page + SNAP_PAGE ? addr + STORE_MAX : page + SNAP_PAGE;
	int r = open_page(page, addr, hi);
	if (r < 0 && fresh)
		atomic_store_explicit(&win.owner, 0, memory_order_release);
	return r;
}

bool audit_window_stepping(uintptr_t ip, uintptr_t dest)
{
	if (!audit_window_mine() || !win.ip || ip != win.ip)
		return false;
	/* A rep string instruction between iterations: its destination
	 * pointer says which bytes are its own. */
	for (int i = 0; i < win.n; i++) {
		uintptr_t lo = dest - STORE_MAX, hi = dest + STORE_MAX;
		if (hi <= win.page[i] || lo >= win.page[i] + SNAP_PAGE)
			continue;
		if (lo < win.own_lo[i])
			win.own_lo[i] = lo < win.page[i] ? win.page[i] : lo;
		if (hi > win.own_hi[i])
			win.own_hi[i] = hi > win.page[i] + SNAP_PAGE ? win.page[i] + SNAP_PAGE : hi;
	}
	return true;
}

static bool own_byte(int i, uintptr_t a)
{
	return a >= win.own_lo[i] && a < win.own_hi[i];
}

static void report_other(uintptr_t addr)
{
	struct pool_hit hit;
	if (!pool_lookup((const void *)addr, &hit))
		return;
	/* The pool's own names: fault.c, which imports this file, has the
	 * read-only page's.  Names only: nothing is decided by them. */
	struct pmw_report *r = report_begin(&hit, NULL, NULL, addr, 0, true);
	report_cause(r, PMW_CAUSE_OTHER_THREAD, NULL);
	report_end(r, NULL, NULL);
}

/* Report each run of bytes of window page i that changed outside the
 * let-through bytes.  The page is read-only again and the window still
 * ours: nobody changes it under the comparison.  (Lock order: the window,
 * then the report lock; nothing takes them the other way round.) */
static void report_changes(int i)
{
	const unsigned char *now = (const unsigned char *)win.page[i], *was = snap[i];
	bool in_run = false;
	for (size_t off = 0; off < SNAP_PAGE; off += 8) {
		uint64_t a, b;
		memcpy(&a, now + off, 8);
		memcpy(&b, was + off, 8);
		if (a == b) {
			in_run = false;
			continue;
		}
		for (size_t k = off; k < off + 8; k++) {
			uintptr_t addr = win.page[i] + k;
			bool changed = now[k] != was[k] && !own_byte(i, addr);
			if (changed && !in_run)
				report_other(addr);
			in_run = changed;
		}
	}
}

static void flush_pages(void)
{
	for (int i = 0; i < win.n; i++)
		if (os_protect_ro((void *)win.page[i], SNAP_PAGE) < 0)
			fatal("audit", "cannot protect pool memory again");
	for (int i = 0; i < win.n; i++)
		report_changes(i);
	win.n = 0;
}

void audit_window_close(void)
{
	flush_pages();
	win.ip = 0;
	atomic_store_explicit(&win.owner, 0, memory_order_release);
}

int audit_copy_in(void *dst, const void *src, size_t len)
{
	sigset_t all, old;
	sigfillset(&all);
	os_sigmask(SIG_SETMASK, &all, &old);      /* no handler runs inside our window */
	int r = 0;
	uintptr_t d = (uintptr_t)dst;
	const unsigned char *s = src;
	bool nested = audit_window_mine();
	while (len > 0 && r == 0) {
		uintptr_t page = d & ~(uintptr_t)(SNAP_PAGE - 1);
		size_t chunk = page + SNAP_PAGE - d < len ? page + SNAP_PAGE - d : len;
		if (nested) {
			/* A signal handler of a thread whose store is being
			 * stepped: its window takes the page too, and closes
			 * it at that store's trap. */
			r = open_page(page, d, d + chunk);
			if (r == 0)
				memcpy((void *)d, s, chunk);
			d += chunk;
			s += chunk;
			len -= chunk;
			continue;
		}
		acquire(thread_id());
		win.n = 0;
		win.ip = 0;
		r = open_page(page, d, d + chunk);
		if (r == 0) {
			memcpy((void *)d, s, chunk);
			audit_window_close();
		} else {
			atomic_store_explicit(&win.owner, 0, memory_order_release);
		}
		d += chunk;
		s += chunk;
		len -= chunk;
	}
	os_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* Sites reported once in this process, and the writes not reported
 * again since.  Pages left open, one bit per arena page (mapped at the
 * first: fault_enable_audit() runs before any pool is protected): a page is
 * put on the ring below once.  Kernel writes always go through kwrite.c's
 * bounce buffer (a page may be closed again at any time: a call writing
 * straight into it would fail with EFAULT). */
static _Atomic uint64_t site_reported[SITE_SLOTS / 64];
static _Atomic unsigned long repeats;
static _Atomic uint64_t *opened;

void audit_init(void)
{
	void *o;
	size_t words = (arena_size / os_page_size + 63) / 64;
	if (!opened && words && os_map_lazy(words * sizeof(uint64_t), &o) == 0)
		opened = o;
}

static _Atomic unsigned long sites_reported;

bool audit_site_first(uint16_t site)
{
	if (site == SITE_NONE || site >= SITE_SLOTS) {
		atomic_fetch_add_explicit(&sites_reported, 1, memory_order_relaxed);
		return true;                     /* no site to tell writes apart by: each reported */
	}
	uint64_t m = (uint64_t)1 << (site % 64);
	if (atomic_fetch_or_explicit(&site_reported[site / 64], m, memory_order_relaxed) & m)
		return false;
	atomic_fetch_add_explicit(&sites_reported, 1, memory_order_relaxed);
	return true;
}

unsigned long audit_sites_reported(void)
{
	return atomic_load_explicit(&sites_reported, memory_order_relaxed);
}

bool audit_site_reported(uint16_t site)
{
	if (site == SITE_NONE || site >= SITE_SLOTS)
		return false;
	uint64_t m = (uint64_t)1 << (site % 64);
	return atomic_load_explicit(&site_reported[site / 64], memory_order_relaxed) & m;
}

/* Pages left open, in the order they were opened: audit_reclose() makes
 * them read-only again (every 100 ms at the most, from an event-loop call:
 * trigger.c), so that a write of another site into a page one site's
 * repeated writes opened is seen, reported, and left out by propose, within
 * that time, instead of never.  A ring: an entry pushed out by a newer one
 * is closed by the pusher (one mprotect, in the fault handler). */
#define OPEN_RING 512u
static _Atomic uintptr_t open_ring[OPEN_RING];
static _Atomic unsigned int open_head;

static void page_bit_clear(uintptr_t page)
{
	if (opened && arena_contains((const void *)page)) {
		size_t bit = (page - arena_base) / os_page_size;
		atomic_fetch_and_explicit(&opened[bit / 64], ~((uint64_t)1 << (bit % 64)), memory_order_relaxed);
	}
}

static void page_close(uintptr_t page)
{
	page_bit_clear(page);
	if (os_protect_ro((void *)page, os_page_size) < 0)
		return;                /* left open: only a later fault less */
}

/* page (in the arena, the table mapped) was just made writable: its bit
 * set and, when it was clear, the page pushed into the ring, the entry it
 * pushes out closed again.  Atomics only: the fault handler calls it. */
static void page_opened(uintptr_t page)
{
	size_t bit = (page - arena_base) / os_page_size;
	uint64_t m = (uint64_t)1 << (bit % 64);
	if (atomic_fetch_or_explicit(&opened[bit / 64], m, memory_order_relaxed) & m)
		return;
	unsigned int i = atomic_fetch_add_explicit(&open_head, 1, memory_order_relaxed) % OPEN_RING;
	uintptr_t old = atomic_exchange_explicit(&open_ring[i], page, memory_order_acq_rel);
	if (old && old != page)
		page_close(old);
}

int audit_repeat(uintptr_t addr, uint16_t site)
{
	(void)site;
	uintptr_t page = addr & ~(uintptr_t)(os_page_size - 1);
	/* A bit is a hint only (the table is writable): the page is opened
	 * here whatever it says. */
	int r = os_protect_rw((void *)page, os_page_size);
	if (r < 0)
		return r;
	if (opened && arena_contains((const void *)page))
		page_opened(page);
	atomic_fetch_add_explicit(&repeats, 1, memory_order_relaxed);
	return 0;
}

static bool page_bit_is_set(uintptr_t page)
{
	size_t bit = (page - arena_base) / os_page_size;
	return atomic_load_explicit(&opened[bit / 64], memory_order_relaxed) & ((uint64_t)1 << (bit % 64));
}

int audit_repeat_range(uintptr_t addr, size_t len, uint16_t site)
{
	(void)site;
	uintptr_t lo = addr & ~(uintptr_t)(os_page_size - 1);
	uintptr_t hi = (addr + len + os_page_size - 1) & ~(uintptr_t)(os_page_size - 1);
	if (!opened || !len || !arena_contains((const void *)lo) || !arena_contains((const void *)(hi - 1)))
		return -EINVAL;
	bool all_open = true;
	for (uintptr_t p = lo; p < hi && all_open; p += os_page_size)
		all_open = page_bit_is_set(p);
	if (!all_open) {
		int r = os_protect_rw((void *)lo, hi - lo);
		if (r < 0)
			return r;
		for (uintptr_t p = lo; p < hi; p += os_page_size)
			page_opened(p);
	}
	atomic_fetch_add_explicit(&repeats, 1, memory_order_relaxed);
	return 0;
}

void audit_reclose(void)
{
	for (unsigned int i = 0; i < OPEN_RING; i++) {
		uintptr_t p = atomic_exchange_explicit(&open_ring[i], 0, memory_order_acq_rel);
		if (p)
			page_close(p);
	}
}

/* The count at exit (a destructor: also when the shim is unloaded). */
__attribute__((destructor)) static void audit_at_exit(void)
{
	unsigned long n = atomic_load(&repeats);
	if (!n)
		return;
	unsigned long sites = 0;
	for (size_t i = 0; i < SITE_SLOTS / 64; i++)
		for (uint64_t m = atomic_load(&site_reported[i]); m; m &= m - 1)
			sites++;               /* not __builtin_popcountll: libgcc's __popcountdi2, a name a host could define */
	char buf[200];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_line_start(&f);
	fmt_printf(&f, "audit: %lu later writes of %lu sites reported once were let through unreported\n",
		   n, sites);
	fmt_flush_stderr(&f);
}

unsigned long audit_repeats(void)
{
	return atomic_load(&repeats);
}

void audit_after_fork_child(void)
{
	/* Once per site and process: the child reports its own first writes. */
	for (size_t i = 0; i < SITE_SLOTS / 64; i++)
		atomic_store(&site_reported[i], 0);
	atomic_store(&repeats, 0);
	/* The pages the parent left open stay open in this copy, on its ring:
	 * the child's next audit_reclose() closes them. */
	/* Another thread's window: its pages are open in this copy too. */
	if (atomic_load(&win.owner)) {
		for (int i = 0; i < win.n; i++)
			if (os_protect_ro((void *)win.page[i], SNAP_PAGE) < 0)
				fatal("fork", "cannot protect audited pool memory again in the child");
		win.n = 0;
		atomic_store(&win.owner, 0);
	}
}
