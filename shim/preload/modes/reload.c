/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reload.c - a service's reload: SIGHUP, SIGUSR1 or SIGUSR2 delivered to a
 * handler of the program's (nginx's reload, systemctl reload with
 * ExecReload=kill -HUP or nginx -s reload, many daemons' re-read of their
 * files; lighttpd's and apache2's graceful restart, Debian's
 * ExecReload=kill -USR1: the configuration read again in the same
 * process; haproxy's reload, Debian's ExecReload=kill -USR2: its master
 * re-execs itself; nginx's binary upgrade, SIGUSR2: its master forks and
 * execs the new binary).  SIGUSR1 is also what some programs take for
 * other work (a log reopen, a statistics dump): it opens a window too,
 * which costs nothing more than a reload's (below: the window ends at the
 * main thread's next wait).
 *
 * What a reload does to a protected process: it rebuilds its
 * configuration on its main thread, after its first trigger.  It writes
 * start-up state that was protected (glibc's NSS state when nginx looks its
 * user up again, the old configuration's listening sockets that the new
 * one takes over), frees the old configuration (pool memory is never
 * reused: counted) and allocates the new one from the same sites, which
 * go to the heap once the pools closed.  So, without this file: a kill at
 * the reload, or a service that runs on unprotected after it.
 *
 * The window.  It opens when the reload signal is delivered to the
 * program's handler (a trampoline of the shim's runs first, then the
 * program's handler, with the flags and mask the program asked for), and
 * ends when the main thread (the one that ran main(); trigger.c) enters a
 * wait call (epoll_wait, sigsuspend, ...: POLICY_WAIT_CALLS) after one of
 * its wait calls returned since the signal, for an event (a wait for
 * events that the handler interrupted, EINTR, does not count; a signal
 * wait's return does): an event loop handles the signal after a wait
 * returns (nginx's sigsuspend, a self-pipe's epoll_wait) and goes back to
 * wait once the reload is done.  A signal that comes just before a wait
 * call (the program will see its flag or its pipe when that call returns)
 * keeps the window open through it; so does a second signal during the
 * reload; a program that checks its flag before waiting, or at EINTR, has
 * a window one loop turn longer.
 * Meanwhile:
 *   - a write by the main thread into protected pool memory is let
 *     through (its page made writable until the window's end) and counted
 *     (reload_writes); other threads' writes are enforced as always,
 *     unless they hit a page the main thread opened;
 *   - the main thread's allocations from the sites of pools whose first
 *     trigger fired go to those pools (a region of the window's: new spans),
 *     at most RELOAD_GENERATIONS_MAX windows per process (then the heap, as
 *     before: a bound on what reloads add, since pool memory is never given
 *     back; the old configuration, freed, is counted and stays mapped);
 *   - at the window's end every pool whose memory was protected before is
 *     protected again: what the reload built (a new generation: the "pool
 *     protected" entry's PMALLOC_GENERATION, pmallocctl status), and the
 *     pages opened during the window.
 * Learn mode sees the same window: the main thread's writes in it are not
 * marked written (enforce lets them through), its allocations are learned
 * as allocated before that generation's protect, not as late ones.  But a
 * process that ends with its window still open (a stop, not a reload:
 * haproxy's old worker at SIGUSR1) has what the window let it write
 * marked written at its exit flush, and its frees in the window counted
 * as frees while serving (learn.c: learn_window_let_through).
 *
 * A reload that re-execs (haproxy's master): the window lets the old
 * image's writes through until its exec (execve or execv/execvp, which
 * trigger.c wraps: learn mode flushes there); the new image is a fresh
 * process image with the same pid and role (life.c: "main", the place
 * since exec), which starts, learns or enforces as the first one did.
 *
 * Threat model.  Only a process that may signal the service (root, or the
 * service's own user) can open a window: such a process can already stop
 * or ptrace it (ptrace_scope permitting).  What it gains: during the
 * window, writes by the main thread to protected memory are not killed.
 * A memory-corruption bug reached on the main thread while the window is
 * open (in nginx the master, which serves no client) can then change
 * protected configuration undetected; the window ends at the main
 * thread's next wait, and the pages are read-only again.  Workers, other
 * threads and other processes are unchanged.  Sealed pools (protection =
 * "seal") cannot be opened: a reload that writes them is still killed;
 * use mprotect for services that reload.  The window's state and the
 * program's handler are kept in a read-only page (mprotect'ed writable
 * only to change them, under a spin lock, with the reload signal blocked):
 * a stray write can neither open a window nor aim the trampoline at its
 * own code.  Programs that take SIGHUP through signalfd or sigwaitinfo run
 * no handler: their reloads are not seen (no window).
 *
 * Async-signal-safe: the trampoline and reload_let_through (the SIGSEGV
 * handler's hook) make system calls and atomic operations only.
 */
#define _GNU_SOURCE
#include "reload.h"
#include "armed.h"
#include "stderr.h"
#include "os.h"
#include "pool.h"
#include "ro.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define RELOAD_GENERATIONS_MAX 64
/* The reload signals, each with the program's handler in ro. */
static const int reload_sigs[] = { SIGHUP, SIGUSR1, SIGUSR2 };
#define RELOAD_SIGS (sizeof(reload_sigs) / sizeof(reload_sigs[0]))

static int sig_index(int sig)
{
	for (size_t k = 0; k < RELOAD_SIGS; k++)
		if (reload_sigs[k] == sig)
			return (int)k;
	return -1;
}

struct reload_state {
	uintptr_t prog_fn[RELOAD_SIGS];  /* the program's handlers; 0: none (SIG_DFL/SIG_IGN) */
	int prog_info[RELOAD_SIGS];      /* it takes siginfo */
	int armed;                       /* reload_init ran */
	int open;                        /* a window is open */
	int returned;                    /* the main thread returned from a wait since the last signal */
	uint64_t reloads;                /* windows opened */
	uint64_t taken;                  /* windows whose allocations went to the pools */
};
static union {
	struct reload_state s;
	unsigned char page[RO_PAGE];
} ro __attribute__((aligned(RO_PAGE)));
const struct ro_span reload_ro_span = { &ro, sizeof(ro) };   /* ro.h: init.c lists it */
static_assert(sizeof(ro) == RO_PAGE, "the reload state is one page");

static atomic_flag ro_busy = ATOMIC_FLAG_INIT;
static _Atomic uint64_t writes;                /* let through in windows */
static _Atomic int taking;                     /* this window has counted against the bound */
/* The window's region per pool (pool_alloc_reopened): used by the main
 * thread only, in a window. */
static struct pool_region gen_region[SHIM_POOLS_MAX];

/* Learn mode: the processes a reload replaces.  nginx's master, at a
 * reload, starts new workers and tells the old ones to quit by its
 * channel (no signal the shim sees); they free their configuration as
 * they go, which is no free while serving (it would leave the
 * configuration out of the proposal).  So each process counts its reload
 * windows in a word of a page shared with its children (a new one in each
 * forked child); a child remembers its parent's count at the fork, and
 * once that count has grown (a reload after the child was forked) the
 * child is superseded: learn.c leaves its frees uncounted, as those of a
 * process that was stopped.  A writable hint read only by learning. */
static _Atomic uint64_t *epoch_word;          /* this process's reloads */
static _Atomic uint64_t *parent_epoch;        /* its parent's, NULL in the first process */
static uint64_t parent_epoch_at_fork;

/* Change ro: the reload signals blocked on this thread (the trampoline
 * takes the same lock), the page writable for fn's length. */
static void ro_change(void (*fn)(struct reload_state *, void *), void *arg)
{
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t k = 0; k < RELOAD_SIGS; k++)
		sigaddset(&block, reload_sigs[k]);
	os_sigmask(SIG_BLOCK, &block, &old);
	while (atomic_flag_test_and_set_explicit(&ro_busy, memory_order_acquire))
		os_yield();
	if (os_protect_rw(&ro, sizeof(ro)) < 0)
		fatal("sigaction", "cannot open the reload state");
	fn(&ro.s, arg);
	if (os_protect_ro(&ro, sizeof(ro)) < 0)
		fatal("sigaction", "cannot make the reload state read-only");
	atomic_flag_clear_explicit(&ro_busy, memory_order_release);
	os_sigmask(SIG_SETMASK, &old, NULL);
}

/* Only the forking thread lives on in a child: a change of ro that
 * another thread had under way is no one's now. */
static void ro_after_fork_child(void)
{
	atomic_flag_clear_explicit(&ro_busy, memory_order_release);
}

static void epoch_after_fork_child(void)
{
	void *w;
	parent_epoch = epoch_word;
	parent_epoch_at_fork = parent_epoch ? atomic_load(parent_epoch) : 0;
	epoch_word = os_map_shared(sizeof(*epoch_word), &w) == 0 ? w : NULL;
}

void reload_init(const struct shim_state *st)
{
	void *w;
	if (st->image->mode == POLICY_MODE_LEARN && os_map_shared(sizeof(*epoch_word), &w) == 0) {
		epoch_word = w;
		pthread_atfork(NULL, NULL, epoch_after_fork_child);
	}
	pthread_atfork(NULL, NULL, ro_after_fork_child);
	/* Still writable (never protected before): one mprotect at start-up,
	 * with the armed state's (ro.h's held freezes). */
	ro.s.armed = 1;
	if (ro_freeze(&ro, sizeof(ro)) < 0)
		fatal("pmalloc", "cannot make the reload state read-only");
}

bool reload_superseded(void)
{
	_Atomic uint64_t *p = parent_epoch;
	return p && atomic_load_explicit(p, memory_order_relaxed) != parent_epoch_at_fork;
}

bool reload_signal(int sig)
{
	return sig_index(sig) >= 0 && ro.s.armed;
}

const int *const reload_open_word = &ro.s.open;

static bool main_thread(void)
{
	return os_gettid() == (int)getpid();
}

bool reload_in_window(void)
{
	return reload_open() && main_thread();
}

bool reload_takes(void)
{
	if (!reload_open() || !main_thread())
		return false;
	if (atomic_load_explicit(&taking, memory_order_relaxed))
		return true;
	if (ro.s.taken >= RELOAD_GENERATIONS_MAX)
		return false;            /* the bound: the heap, as without reloads */
	atomic_store_explicit(&taking, 1, memory_order_relaxed);
	return true;
}

void *reload_alloc(size_t i, size_t size, size_t align, uint16_t site)
{
	const struct shim_state *st = shim;
	if (i >= st->n_pools)
		return NULL;
	return pool_alloc_reopened(st->pools[i].pool, &gen_region[i], size, align, site, false);
}

bool reload_let_through(const struct pool_hit *hit, uintptr_t addr)
{
	if (!reload_open() || pool_seals(hit->pool) || !main_thread())
		return false;
	uintptr_t page = addr & ~(uintptr_t)(os_page_size - 1);
	if (os_protect_rw((void *)page, os_page_size) < 0)
		return false;
	atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
	return true;
}

static void note_signal(struct reload_state *s, void *arg)
{
	(void)arg;
	s->returned = 0;
	if (!s->open) {
		s->open = 1;
		s->reloads++;
	}
}

static void on_reload(int sig, siginfo_t *si, void *uctx)
{
	int e = errno;
	ro_change(note_signal, NULL);
	if (epoch_word)
		atomic_fetch_add_explicit(epoch_word, 1, memory_order_relaxed);
	errno = e;
	int k = sig_index(sig);
	if (k < 0)
		return;
	uintptr_t fn = __atomic_load_n(&ro.s.prog_fn[k], __ATOMIC_ACQUIRE);
	if (!fn)
		return;
	if (ro.s.prog_info[k])
		((void (*)(int, siginfo_t *, void *))fn)(sig, si, uctx);
	else
		((void (*)(int))fn)(sig);
}

struct at_wait {
	bool ends;
};

static void wait_step(struct reload_state *s, void *arg)
{
	struct at_wait *w = arg;
	if (!s->returned) {
		w->ends = false;         /* no wait has returned since the signal: go on */
		return;
	}
	s->open = 0;
	if (atomic_exchange_explicit(&taking, 0, memory_order_relaxed))
		s->taken++;
	w->ends = true;
}

bool reload_at_wait(void)
{
	struct at_wait w = { false };
	if (!reload_open() || !ro.s.returned)
		return false;
	ro_change(wait_step, &w);
	return w.ends;
}

static void set_returned(struct reload_state *s, void *arg)
{
	(void)arg;
	if (s->open)
		s->returned = 1;
}

void reload_returned(void)
{
	if (reload_open() && !ro.s.returned && main_thread())
		ro_change(set_returned, NULL);
}

void reload_done(void)
{
	const struct shim_state *st = shim;
	for (size_t i = 0; st && i < st->n_pools; i++)
		if (!pool_seals(st->pools[i].pool))
			pool_reprotect(st->pools[i].pool, "reload");
}

uint64_t reload_count(void)
{
	return ro.s.reloads;
}

uint64_t reload_writes(void)
{
	return atomic_load_explicit(&writes, memory_order_relaxed);
}

struct set_handler {
	uintptr_t fn;
	int info;
	int k;                           /* reload_sigs index */
};

static void set_handler(struct reload_state *s, void *arg)
{
	const struct set_handler *h = arg;
	s->prog_info[h->k] = h->info;
	__atomic_store_n(&s->prog_fn[h->k], h->fn, __ATOMIC_RELEASE);
}

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;

int reload_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int k = sig_index(sig);
	if (k < 0)
		return -EINVAL;
	pthread_mutex_lock(&handler_lock);
	struct set_handler was = { ro.s.prog_fn[k], ro.s.prog_info[k], k };
	int r;
	if (!act) {
		r = os_sigaction(sig, NULL, old);
	} else {
		bool info = (act->sa_flags & SA_SIGINFO) != 0;
		struct set_handler now = { info ? (uintptr_t)act->sa_sigaction : (uintptr_t)act->sa_handler, info, k };
		if (!info && (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)) {
			r = os_sigaction(sig, act, old);
			if (r == 0) {
				struct set_handler none = { 0, 0, k };
				ro_change(set_handler, &none);
			}
		} else {
			/* Published before the kernel can call the trampoline. */
			ro_change(set_handler, &now);
			struct sigaction tramp = *act;
			tramp.sa_flags |= SA_SIGINFO;
			tramp.sa_sigaction = on_reload;
			r = os_sigaction(sig, &tramp, old);
			if (r < 0)
				ro_change(set_handler, &was);
		}
	}
	/* old as the program set it: the trampoline replaced by its handler. */
	if (r == 0 && old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == on_reload) {
		if (was.info) {
			old->sa_sigaction = (void (*)(int, siginfo_t *, void *))was.fn;
		} else {
			old->sa_flags &= ~SA_SIGINFO;
			old->sa_handler = (void (*)(int))was.fn;
		}
	}
	pthread_mutex_unlock(&handler_lock);
	return r;
}
