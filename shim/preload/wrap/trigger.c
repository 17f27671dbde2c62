/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trigger.c - when interposition pools are protected: on calls that mark
 * the end of initialisation (on-call:listen, ...), once after a delay from
 * start-up (after:2s, by a timer thread), or when the program asks
 * (pmalloc_protect_named, or pmallocctl protect through pmallocd: the
 * manual trigger).
 *
 * Which pool has which trigger was read from the policy's image at start-up
 * (init.c); pools are named by the image too, read-only like the masks.
 * The interposed calls are thin: one test of a read-only mask, then the
 * real function, found once with dlsym.  A protect with nothing new costs a
 * lock and no system call.  The protect happens before the real call runs,
 * so what initialisation built is read-only before the program listens.
 * Never holds a lock across the real call, never changes its arguments or
 * result, and never runs the program's code on its own threads (which
 * block every signal the program may handle), and starts none in a
 * single-threaded process for on-wait's fallback (below).  Also decides
 * when routing goes quiet (interpose.h): 30 s after every pool closed.
 * A wait of a server that serves, its pools closed and routing quiet,
 * costs here seven loads and a count, the coarse clock read at one wait
 * in 16 (wait_is_lean).
 */
#define _GNU_SOURCE
#include "trigger.h"
#include "stderr.h"
#include "audit.h"
#include "client.h"
#include "fault.h"
#include "fill.h"
#include "os.h"
#include "pmalloc.h"
#include "kwrite.h"
#include "interpose.h"
#include "heap.h"
#include "journal.h"
#include "learn.h"
#include "resolve.h"
#include "rules_msg.h"
#include "reload.h"
#include "route.h"
#include "take.h"
#include "hooks.h"
#include "site.h"
#include "thread.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/single_threaded.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* When every pool was last found closed (the first time, and at each
 * reload's end): routing goes quiet QUIET_AFTER_NS later (interpose.h),
 * at a wait.  A writable hint: forged, quiet comes sooner or later, and
 * late allocations are counted for less or more time; nothing else. */
#define QUIET_AFTER_NS (UINT64_C(30) * 1000000000u)
static _Atomic uint64_t closed_ns;

/* Each pool's protects that made something read-only: its generations
 * (1 the first trigger's, then one per reload window, reload.h).  For
 * reports only, and for the window's end: a pool protected before is
 * protected again there. */
static _Atomic uint32_t generation[SHIM_POOLS_MAX];

size_t shim_protect_pool(size_t i, const char *trigger)
{
	const struct shim_state *st = shim;
	/* take = "until-trigger": nothing enters after the first protect
	 * (pool.h: closed under the pool's lock, before the protect). */
	if (st->pools[i].until_trigger && !pool_closed(st->pools[i].pool))
		pool_close(st->pools[i].pool);
	/* A pool whose roles do not name this process's is closed like the
	 * others but never protected here (respawn.c). */
	size_t n = 0;
	if (shim_pool_protects_here(st, i)) {
		/* Learn mode: a page opened for a write before is made
		 * read-only again by a reload's protect (learn.h). */
		bool again = st->image->mode == POLICY_MODE_LEARN &&
			     atomic_load_explicit(&generation[i], memory_order_relaxed);
		if (again)
			learn_forget_opened();
		fill_protect_begin();      /* never half-way through the shim's own copy */
		n = pool_protect(st->pools[i].pool, trigger);
		fill_protect_end();
		if (again)
			learn_forget_opened();
	}
	(void)fault_recheck(n != 0);   /* the handler still the shim's (issue 27) */
	/* The last pool closed and protected: from now on every allocation
	 * goes to the heap, and routing need check no heap route (site.h's
	 * closed byte).  Learn mode keeps learning what comes late. */
	if (st->pools[i].until_trigger && st->image->mode != POLICY_MODE_LEARN && take_all_closed(st)) {
		resolve_pools_closed();
		uint64_t none = 0;
		atomic_compare_exchange_strong(&closed_ns, &none, os_monotonic_ns(true));
	}
	if (n && st->image->mode == POLICY_MODE_LEARN)
		learn_note_protected();    /* the periodic flush of what is learned */
	if (n) {
		debug_printf("pool \"%s\": %zu bytes made read-only (%s)", st->pools[i].pool->name, n,
			     trigger);
		uint32_t g = atomic_fetch_add_explicit(&generation[i], 1, memory_order_relaxed) + 1;
		if (client_notify_protected(i, trigger, n, g))
			rules_msg_send(RULES_MSG_SITES);   /* what this protect covered, per site */
	}
	return n;
}

/* pmallocctl protect: pmallocd's orders come on the shim's connection.
 * When the policy has a manual pool and pmallocd served the process, a
 * thread of the shim's ("pmalloc-orders", every signal blocked, 64 KiB of
 * stack) waits on the connection and obeys as soon as an order arrives:
 * a process that never makes an interposed call gets it too, with no
 * delay but the thread's wake-up.  Only the process that connected reads
 * orders (client.c): pmallocd names it, and a forked worker sharing the
 * descriptor must not take its parent's order.  Where the thread cannot
 * start, orders are read at interposed event-loop calls instead, at most
 * every 100 ms (a coarse clock read, a few ns, on the calls in between). */
#define ORDERS_EVERY_NS UINT64_C(100000000)
#define ORDERS_WAIT_MS 1000     /* the thread re-checks its connection this often */
static _Atomic uint64_t orders_checked;
static _Atomic int orders_thread;      /* 1 while the thread serves orders */

static void obey(const char *pool)
{
	const struct shim_state *st = shim;
	if (pool[0] == '\0') {
		learn_flush("learn-flush");   /* pmallocctl learn-flush */
		return;
	}
	for (size_t i = 0; i < st->n_pools; i++)
		if (st->pools[i].manual && strcmp(pimg_pool_name(st->image, i), pool) == 0) {
			shim_protect_pool(i, "manual:pmallocctl");
			return;
		}
	debug_printf("pmallocd asked to protect \"%s\", which has no manual trigger here", pool);
}

/* Audit mode: the pages repeated writes of reported sites opened are
 * closed again at an event-loop call (a coarse clock read, a few ns, on
 * the calls in between): audit.c says why.  Every 100 ms while new sites
 * are being reported; each interval that reported none doubles the next,
 * up to 6.4 s.  A page that every request writes is open again right after
 * each close whatever the interval, so a write of another site there is
 * seen only in the moment between: closing it 10 times a second bought
 * next to nothing and cost a fault and an mprotect (a TLB shoot-down) per
 * hot page each time (redis under an audit policy of all its start-up
 * objects: 0.79 x its throughput).  A page opened once stays open longer
 * (up to 6.4 s) before a write of another site there is seen again. */
#define RECLOSE_MIN_NS UINT64_C(100000000)
#define RECLOSE_MAX_NS (64 * RECLOSE_MIN_NS)
static _Atomic uint64_t audit_reclosed;
static _Atomic uint64_t reclose_every = RECLOSE_MIN_NS;
static _Atomic unsigned long reclose_sites;    /* audit_sites_reported() at the last close */

static void audit_reclose_due(void)
{
	uint64_t now = os_monotonic_ns(true);
	uint64_t last = atomic_load_explicit(&audit_reclosed, memory_order_relaxed);
	uint64_t every = atomic_load_explicit(&reclose_every, memory_order_relaxed);
	if (now - last < every || !atomic_compare_exchange_strong(&audit_reclosed, &last, now))
		return;
	unsigned long sites = audit_sites_reported();
	if (sites != atomic_exchange_explicit(&reclose_sites, sites, memory_order_relaxed))
		every = RECLOSE_MIN_NS;
	else if (every < RECLOSE_MAX_NS)
		every *= 2;
	atomic_store_explicit(&reclose_every, every, memory_order_relaxed);
	int e = errno;
	audit_reclose();
	errno = e;
}

static void check_orders(void)
{
	uint64_t now = os_monotonic_ns(true);
	uint64_t last = atomic_load_explicit(&orders_checked, memory_order_relaxed);
	if (now - last < ORDERS_EVERY_NS ||
	    !atomic_compare_exchange_strong(&orders_checked, &last, now))
		return;                     /* checked lately, or another thread is at it */
	client_read_orders(obey, rules_msg_answer);
}

/* Is this the process's main thread, the one that ran main()?  Its kernel
 * id is the process id (in a forked child too: the thread that forked).
 * Two system calls, asked only on a wait call that an on-wait pool has
 * not fired on yet. */
static bool on_main_thread(void)
{
	return os_gettid() == (int)getpid();
}

/* The main thread waits again after a reload (reload.h): the pools
 * protected before take what the reload built (a new generation), then
 * the pages the window opened are read-only again. */
static void reload_end(void)
{
	const struct shim_state *st = shim;
	if (!reload_at_wait())
		return;
	size_t n = 0;
	for (size_t i = 0; i < st->n_pools; i++)
		if (atomic_load_explicit(&generation[i], memory_order_relaxed))
			n += shim_protect_pool(i, "reload");
	reload_done();
	if (atomic_load(&closed_ns))
		atomic_store(&closed_ns, os_monotonic_ns(true));   /* a new while of late counts */
	debug_printf("reload %llu done: %zu bytes of a new generation made read-only; %llu writes let "
		     "through so far", (unsigned long long)reload_count(), n,
		     (unsigned long long)reload_writes());
}

/* on-wait's settle: before the first protect of an on-wait pool, the main
 * thread lets the threads the program started come to rest: until no other
 * thread of the process is running or ready to run (or in an uninterruptible
 * sleep) at two looks 1 ms apart, at most SETTLE_MAX_NS.  A thread the main
 * thread started just before it waits (memcached's LRU maintainer links its
 * logger into a list of loggers built at start: it writes the head's) would
 * otherwise run its own start-up before the protect in one run and after it
 * in the next: learning would see a different start-up each time, and
 * enforce kill the run where the thread came late.  A thread at rest has
 * done its start-up up to its first block (a wait, a sleep, a lock): the
 * same point in every run, whatever the scheduler did.
 * Costs: the main thread's first wait comes that much later (a few ms for
 * threads that start and block; SETTLE_MAX_NS for a process with a thread
 * that never blocks, said in debug), and reads /proc/self/task once, a file
 * per thread.  Inside a chroot it reads them through /proc as kept at the
 * chroot call (os_keep_proc: haproxy's worker); where /proc cannot be read
 * at all (a process that closed it) the protect comes at once, as without
 * the settle.  What an attacker gains: nothing he can
 * steer, the settle ends before the program reads its first request. */
#define SETTLE_MAX_NS (UINT64_C(2) * 1000000000u)
#define SETTLE_LOOK_NS UINT64_C(1000000)

static void settle(void)
{
	uint64_t start = os_monotonic_ns(false), now = start;
	int quiet = 0, busy = 0;
	while (quiet < 2 && now - start < SETTLE_MAX_NS) {
		busy = os_threads_busy();
		if (busy < 0)
			break;
		quiet = busy == 0 ? quiet + 1 : 0;
		if (quiet < 2)
			os_sleep_until_ns(now + SETTLE_LOOK_NS);
		now = os_monotonic_ns(false);
	}
	debug_printf("on-wait: other threads at rest after %llu us%s",
		     (unsigned long long)((now - start) / 1000u),
		     busy < 0 ? " (cannot read /proc/self/task: not waited for)"
		     : quiet < 2 ? " (still running at the limit: protected anyway)" : "");
}

/* Pools whose on-wait fired (bit i): a writable hint that spares the
 * main thread's later waits a protect walk and tells the fallback it is
 * not needed; forged, it only delays protection to the next trigger. */
static _Atomic uint32_t wait_fired;

static void timer_start_as(bool may_defer);

/* Routing quiet (interpose.h) once every pool has been closed a while, no
 * reload window open, not learning: at a wait, a coarse clock's look. */
static void quiet_if_due(const struct shim_state *st)
{
	uint64_t c = atomic_load_explicit(&closed_ns, memory_order_relaxed);
	if (!c || st->image->mode == POLICY_MODE_LEARN || reload_open())
		return;
	int e = errno;
	if (os_monotonic_ns(true) - c >= QUIET_AFTER_NS)
		interpose_quiet(true);
	errno = e;
}

void trigger_call(enum policy_call c)
{
	const struct shim_state *st = shim;
	if (likely(!st) || shim_is_busy())
		return;
	if (unlikely(atomic_load_explicit(&core_deferred_pending, memory_order_relaxed))) {
		/* The program's first thread of its own: the process is
		 * multi-threaded from now on, and the fallback the timer's. */
		if (c == POLICY_CALL_PTHREAD_CREATE) {
			int e = errno;
			timer_start_as(false);
			errno = e;
		} else {
			trigger_fallback_poll_slow();
		}
	}
	if (unlikely(st->image->mode == POLICY_MODE_AUDIT))
		audit_reclose_due();
	if (unlikely(st->has_manual) && !atomic_load_explicit(&orders_thread, memory_order_relaxed)) {
		int e = errno;
		check_orders();
		errno = e;
	}
	if (unlikely(c == POLICY_CALL_CHROOT)) {
		int e = errno;
		journal_keep_socket();  /* the journal's socket stays reachable inside */
		os_keep_proc();         /* and /proc, for on-wait's settle */
		errno = e;
	}
	if (unlikely(c == POLICY_CALL_EXECVE) && learn_active()) {
		int e = errno;
		learn_flush("exec");    /* what this image learned, before it is gone */
		errno = e;
	}
	uint32_t bit = 1u << c;
	if (unlikely(bit & POLICY_WAIT_CALLS) && st->image->mode == POLICY_MODE_LEARN && learn_active())
		learn_at_wait();    /* no flush thread (RLIMIT_NPROC 0): here */
	/* A reload under way ends at the main thread's next wait (reload.c). */
	if (unlikely(reload_open()) && (bit & POLICY_WAIT_CALLS)) {
		int e = errno;
		if (on_main_thread())
			reload_end();
		errno = e;
	}
	/* The fault handler still the shim's, SIGSEGV not blocked (issue 27):
	 * looked at, at most once a second, at the program's waits too, not
	 * only at protects (a handler replaced after the last protect). */
	if (bit & POLICY_WAIT_CALLS) {
		int e = errno;
		(void)fault_recheck(false);
		errno = e;
		if (unlikely(heap_page.routed) && site_policy_closed())
			quiet_if_due(st);
	}
	if (likely(!(st->call_mask & bit)))
		return;
	/* A server's every wait once it serves: each on-wait pool fired in
	 * this process (the writable hint below) and every pool closed (the
	 * read-only byte, site.h), no on-call pool named by this call: the
	 * loop below would find nothing to do, 90 instructions a wait.  A
	 * forged hint skips what the loop's own check of it would skip: the
	 * pools are closed (no new object), and their pages were protected
	 * when the byte was set. */
	if (!(st->named_call_mask & bit) && site_policy_closed() &&
	    (atomic_load_explicit(&wait_fired, memory_order_relaxed) & st->wait_pools) == st->wait_pools)
		return;
	int e = errno;              /* the program sees only the real call's errno */
	/* The trigger's words are written only when an on-call pool is to be
	 * protected: a server's every epoll_wait comes here once its on-wait
	 * pools are closed, and an snprintf a call was 680 of the 2,100
	 * instructions the shim added to an nginx request (callgrind). */
	char trigger[48] = "";
	int main_thread = -1;       /* not asked yet */
	bool settled = false;
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct shim_pool *sp = &st->pools[i];
		if (!(sp->call_mask & bit))
			continue;
		if (!(sp->wait_mask & bit)) {
			if (!trigger[0])
				snprintf(trigger, sizeof(trigger), "on-call:%s", policy_call_name(c));
			shim_protect_pool(i, trigger);
			continue;
		}
		/* on-wait: the main thread's waits only.  Another thread that
		 * waits first (a worker started early) may find the main
		 * thread still building state: firing then would protect a
		 * different part of start-up from one run to the next. */
		if (atomic_load_explicit(&wait_fired, memory_order_relaxed) & (1u << i) &&
		    sp->until_trigger && pool_closed(sp->pool))
			continue;
		if (main_thread < 0)
			main_thread = on_main_thread();
		if (!main_thread)
			continue;
		if (!settled && !(atomic_load_explicit(&wait_fired, memory_order_relaxed) & (1u << i))) {
			settle();
			settled = true;
		}
		atomic_fetch_or_explicit(&wait_fired, 1u << i, memory_order_relaxed);
		shim_protect_pool(i, "on-wait");
	}
	errno = e;
}

/* The calls by which a program waits for signals: their return after a
 * handler ran is the signal's delivery (nginx's sigsuspend). */
#define SIGNAL_WAIT_CALLS \
	(1u << POLICY_CALL_SIGSUSPEND | 1u << POLICY_CALL_PAUSE | 1u << POLICY_CALL_SIGWAITINFO | \
	 1u << POLICY_CALL_SIGTIMEDWAIT | 1u << POLICY_CALL_SIGWAIT)

/* A wait call returned with a reload window open (reload.h): one that
 * returned for an event (or a signal wait's return), not a wait for events
 * that a handler interrupted (EINTR: a loop may just call it again and
 * find the reload's pipe or flag then). */
static void trigger_returned(enum policy_call c, bool interrupted)
{
	int e = errno;
	/* The reload's allocations go to the pools (a new generation): the
	 * routing entries back in, whatever call returned. */
	if (!heap_page.routed)
		interpose_quiet(false);
	errno = e;
	if (!((1u << c) & POLICY_WAIT_CALLS) || (interrupted && !((1u << c) & SIGNAL_WAIT_CALLS)))
		return;
	reload_returned();
	errno = e;
}

/* pmalloc_protect_named (api.c) in the preloaded shim: init.c hands it to
 * the pool API as its protect_named hook. */
int trigger_protect_named(const char *name)
{
	const struct shim_state *st = shim;
	for (size_t i = 0; st && name && i < st->n_pools; i++)
		if (strcmp(pimg_pool_name(st->image, i), name) == 0) {
			shim_protect_pool(i, "manual");
			return 0;
		}
	errno = ENOENT;
	return -1;
}

/* A thread's lean waits since its last look at the clock: the clock is
 * read at one lean wait in LEAN_CLOCK_EVERY.  Writable, and only ever
 * delays the fault handler's look (forged, by at most the next wrap). */
#define LEAN_CLOCK_EVERY 16u
static __thread uint8_t lean_count __attribute__((tls_model("initial-exec")));

/* A wait of a process that serves: routing quiet (the heap's read-only
 * page), every pool closed and no reload window (route.h's
 * route_heap_is_truth: site.h's read-only byte, reload.h), an enforce policy with no orders to read at calls
 * (the state, read-only): trigger_call would find nothing to do but the
 * fault handler's look, at most once a second, which the clock says is
 * not due.  Only read-only words decide it, so no forged word sends a wait
 * of a process that still has a pool to protect this way.  Costs seven
 * loads and the thread's count of its lean waits; the coarse clock, 48
 * instructions a look under callgrind (a call, the vDSO's or the system
 * call's, and the conversion), is read at every LEAN_CLOCK_EVERY-th wait,
 * so the handler's look comes at most 16 of a thread's waits after it is
 * due (once a second): 2.6 s after the last look at worst for a server
 * that wakes ten times a second; a protect looks too.  trigger_call and
 * its out-of-line gates were 233 instructions a wait of nginx's under its
 * proposal (callgrind, routing quiet); the lean path with the clock at
 * every wait, 113 a wait of redis's; with the count, 68. */
static inline bool wait_is_lean(void)
{
	const struct shim_state *st = shim;
	if (!st || !st->lean_waits || heap_page.routed || !route_heap_is_truth())
		return false;
	if (likely(++lean_count % LEAN_CLOCK_EVERY))
		return true;
	return !fault_recheck_due(os_monotonic_ns(true));
}

/* An interposed call: the trigger (a wait call's short path first), then
 * the real function (ENOSYS if libc has none, which cannot happen with
 * glibc). */
#define WRAP_WITH(ret, name, call, params, invoke) \
	PMALLOC_EXPORT ret name params \
	{ \
		typedef ret (*fn_t) params; \
		if (!((1u << (call)) & POLICY_WAIT_CALLS) || !wait_is_lean()) \
			trigger_call(call); \
		fn_t fn = REAL(name, fn_t); \
		if (unlikely(!fn)) { \
			errno = ENOSYS; \
			return (ret)-1; \
		} \
		ret r_ = invoke; \
		if (unlikely(reload_open())) \
			trigger_returned(call, r_ == (ret)-1 && errno == EINTR); \
		return r_; \
	}
#define WRAP(ret, name, call, params, args) WRAP_WITH(ret, name, call, params, fn args)

/* The same, for a call the kernel writes user memory in: kwrite.c makes
 * the real call (and lets a write into audited pool memory through). */
#define KW_ARGS(...) __VA_ARGS__
#define WRAP_KW(ret, name, call, params, args) \
	WRAP_WITH(ret, name, call, params, \
		  kwrite_##name(fn, (uintptr_t)__builtin_return_address(0), KW_ARGS args))

WRAP(int, listen, POLICY_CALL_LISTEN, (int fd, int backlog), (fd, backlog))
WRAP_KW(int, accept, POLICY_CALL_ACCEPT, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l))
WRAP_KW(int, accept4, POLICY_CALL_ACCEPT4, (int fd, struct sockaddr *a, socklen_t *l, int f), (fd, a, l, f))
WRAP_KW(int, epoll_wait, POLICY_CALL_EPOLL_WAIT, (int fd, struct epoll_event *e, int n, int t), (fd, e, n, t))
WRAP_KW(int, epoll_pwait, POLICY_CALL_EPOLL_PWAIT,
     (int fd, struct epoll_event *e, int n, int t, const sigset_t *s), (fd, e, n, t, s))
WRAP_KW(int, poll, POLICY_CALL_POLL, (struct pollfd *f, nfds_t n, int t), (f, n, t))
WRAP_KW(int, ppoll, POLICY_CALL_PPOLL,
     (struct pollfd *f, nfds_t n, const struct timespec *t, const sigset_t *s), (f, n, t, s))
WRAP_KW(int, select, POLICY_CALL_SELECT, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t),
     (n, r, w, e, t))
WRAP_KW(int, pselect, POLICY_CALL_PSELECT,
     (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *s),
     (n, r, w, e, t, s))
WRAP_KW(int, epoll_pwait2, POLICY_CALL_EPOLL_PWAIT2,
     (int fd, struct epoll_event *e, int n, const struct timespec *t, const sigset_t *s), (fd, e, n, t, s))
/* The signal waits (on-wait): a daemon that waits for signals only. */
WRAP(int, sigsuspend, POLICY_CALL_SIGSUSPEND, (const sigset_t *m), (m))
WRAP(int, sigwaitinfo, POLICY_CALL_SIGWAITINFO, (const sigset_t *m, siginfo_t *i), (m, i))
WRAP(int, sigtimedwait, POLICY_CALL_SIGTIMEDWAIT, (const sigset_t *m, siginfo_t *i, const struct timespec *t),
     (m, i, t))
WRAP(int, pause, POLICY_CALL_PAUSE, (void), ())
/* glibc's sigwait does not go through sigtimedwait's PLT entry. */
WRAP(int, sigwait, POLICY_CALL_SIGWAIT, (const sigset_t *m, int *sig), (m, sig))
WRAP(int, setuid, POLICY_CALL_SETUID, (uid_t u), (u))
WRAP(int, setgid, POLICY_CALL_SETGID, (gid_t g), (g))
WRAP(int, setresuid, POLICY_CALL_SETRESUID, (uid_t r, uid_t e, uid_t s), (r, e, s))
WRAP(int, setresgid, POLICY_CALL_SETRESGID, (gid_t r, gid_t e, gid_t s), (r, e, s))
WRAP(int, seteuid, POLICY_CALL_SETEUID, (uid_t u), (u))
WRAP(int, setegid, POLICY_CALL_SETEGID, (gid_t g), (g))
WRAP(int, chroot, POLICY_CALL_CHROOT, (const char *p), (p))
WRAP(int, pthread_create, POLICY_CALL_PTHREAD_CREATE,
     (pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg), (t, a, f, arg))
WRAP(pid_t, fork, POLICY_CALL_FORK, (void), ())
WRAP(int, daemon, POLICY_CALL_DAEMON, (int nochdir, int noclose), (nochdir, noclose))
/* execve: learn mode first notes whether the loader will run the new
 * program in secure mode (it then ignores LD_PRELOAD: learn.h), for the
 * flush the trigger call makes.  execv, execvp and execvpe too: libc's
 * own calls execve inside libc, where no preload sees them (haproxy's
 * master re-execs itself by execvp at each reload: without these, what
 * its image learned since its last periodic flush was lost).  A name
 * without a slash (execvp's PATH search) is not stat'ed for the secure
 * check: set-id programs are named by path in practice. */
static void before_exec(const char *p)
{
	if (learn_active() && shim && !shim_is_busy() && p) {
		int e = errno;
		learn_note_exec(p);
		errno = e;
	}
	trigger_call(POLICY_CALL_EXECVE);
}

PMALLOC_EXPORT int execve(const char *p, char *const argv[], char *const envp[])
{
	typedef int (*fn_t)(const char *, char *const[], char *const[]);
	before_exec(p);
	fn_t fn = REAL(execve, fn_t);
	if (unlikely(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	return fn(p, argv, envp);
}

PMALLOC_EXPORT int execv(const char *p, char *const argv[])
{
	typedef int (*fn_t)(const char *, char *const[]);
	before_exec(p);
	fn_t fn = REAL(execv, fn_t);
	if (unlikely(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	return fn(p, argv);
}

PMALLOC_EXPORT int execvp(const char *f, char *const argv[])
{
	typedef int (*fn_t)(const char *, char *const[]);
	before_exec(strchr(f, '/') ? f : NULL);
	fn_t fn = REAL(execvp, fn_t);
	if (unlikely(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	return fn(f, argv);
}

PMALLOC_EXPORT int execvpe(const char *f, char *const argv[], char *const envp[])
{
	typedef int (*fn_t)(const char *, char *const[], char *const[]);
	before_exec(strchr(f, '/') ? f : NULL);
	fn_t fn = REAL(execvpe, fn_t);
	if (unlikely(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	return fn(f, argv, envp);
}

/* after:DURATION - a thread that sleeps until each deadline and protects.
 * It blocks every signal (the program's handlers never run on it) and is
 * started again in a forked child whose deadlines are still ahead.
 *
 * It also holds on-wait's fallback: a pool whose on-wait has not fired
 * WAIT_FALLBACK_NS after start-up (a main thread that never makes a wait
 * call the shim sees: it blocks on a condition variable, a semaphore, a
 * raw futex, or a read of a pipe) is protected then, with the trigger
 * "on-wait:fallback" in the journal and pmallocctl status: a point as late
 * in start-up for every run, so that learning and enforce still agree, and
 * a program that never waits is still protected (and said to be so late). */
#define WAIT_FALLBACK_NS (UINT64_C(30) * 1000000000u)
static _Atomic int timer_running;

/* Pool i's deadline of kind k (0: after:, 1: on-wait's fallback), 0 for
 * none: from start-up, or, in a child forked once it had passed (respawn.c
 * reopened the pool), from the fork: a respawned child is protected as long
 * after its start as the children learning saw.  The fallback counts from
 * the fork in every child: it stands for the child's own start-up done, and
 * a child forked just before its parent's deadline (apache2's, forked at a
 * graceful restart, whose main thread never makes a wait call) would be
 * protected in the middle of its start-up, at a point that differs from
 * run to run (its initgroups writing glibc's NSS state then killed it). */
static uint64_t deadline(const struct shim_state *st, size_t i, int k)
{
	const struct shim_pool *sp = &st->pools[i];
	uint64_t after = k == 0 ? sp->after_ns : sp->wait_mask ? WAIT_FALLBACK_NS : 0;
	uint64_t forked = life_fork_ns();
	if (!after)
		return 0;
	return forked && (k == 1 || st->start_ns + after <= forked) ? forked + after : st->start_ns + after;
}

static void *timer_main(void *arg)
{
	(void)arg;
	const struct shim_state *st = shim;
	bool fired[SHIM_POOLS_MAX][2] = { { false } };
	uint64_t started = os_monotonic_ns(false);
	for (;;) {
		uint64_t next = UINT64_MAX, now = os_monotonic_ns(false);
		for (size_t i = 0; i < st->n_pools; i++)
			for (int k = 0; k < 2; k++) {
				uint64_t d = deadline(st, i, k);
				if (!d || fired[i][k])
					continue;
				if (d > now) {
					next = d < next ? d : next;
					continue;
				}
				fired[i][k] = true;
				/* Once; a forked child's thread leaves alone what
				 * fired in the parent before the fork. */
				if (d <= started)
					continue;
				if (k == 0)
					shim_protect_pool(i, st->pools[i].after_text);
				else if (!(atomic_load(&wait_fired) & (1u << i)))
					shim_protect_pool(i, "on-wait:fallback");
			}
		if (next == UINT64_MAX)
			break;
		os_sleep_until_ns(next);
	}
	atomic_store(&timer_running, 0);
	return NULL;
}

/* The fallback in a single-threaded process: no thread of the shim's.  A
 * first thread makes glibc take its multi-threaded paths for the rest of
 * the process's life, whether or not that thread is still there: every
 * cancellable system call through the cancellation checks and every
 * malloc and free through the arena's lock (glibc reads
 * __libc_single_threaded, and a flag in the thread's control block, both
 * set by the first pthread_create, never cleared).  That was 350 of the
 * 1,400 instructions the shim added to an nginx request under its
 * proposal (callgrind): nginx's master and workers are single-threaded,
 * and every pool of a proposal is on-wait.  So, while the process has no
 * other thread and no after: deadline is ahead, the fallback's deadlines
 * are looked at by the process's own calls instead (hooks.h's deferred_poll,
 * at each interposed call and after each return of the read family,
 * kwrite.c): a main thread that never waits, blocked in read(2), is
 * protected as that read returns past the deadline, before the program
 * sees what it read.  The thread is started after all when the program
 * starts a thread of its own (it pays glibc's paths then anyway).
 * core_deferred_pending is a writable hint: forged to 0, the fallback comes
 * at the next wait instead; forged to 1, a look at the clock. */

static bool single_threaded(void)
{
	return __libc_single_threaded != 0;
}

static void timer_start_as(bool may_defer)
{
	const struct shim_state *st = shim;
	uint64_t now = os_monotonic_ns(false);
	bool after_ahead = false, fallback_ahead = false;
	for (size_t i = 0; st && i < st->n_pools; i++) {
		after_ahead |= deadline(st, i, 0) > now;
		fallback_ahead |= deadline(st, i, 1) > now;
	}
	if (may_defer && !after_ahead && fallback_ahead && single_threaded()) {
		atomic_store(&core_deferred_pending, 1);
		return;
	}
	atomic_store(&core_deferred_pending, 0);
	if (!(after_ahead || fallback_ahead) || atomic_exchange(&timer_running, 1))
		return;
	if (!shim_thread_start(timer_main, "pmalloc-timer", 64 * 1024)) {
		atomic_store(&timer_running, 0);
		debug_printf("cannot start the after: timer thread; after: triggers will not fire");
	}
}

static void timer_start(void)
{
	timer_start_as(true);
}

void trigger_fallback_poll_slow(void)
{
	const struct shim_state *st = shim;
	if (!st || shim_is_busy())
		return;
	int e = errno;
	if (!single_threaded()) {
		timer_start();            /* a thread came by a way not seen: the timer's */
		errno = e;
		return;
	}
	uint64_t now = os_monotonic_ns(true);
	bool pending = false;
	for (size_t i = 0; i < st->n_pools; i++) {
		uint64_t d = deadline(st, i, 1);
		if (!d || atomic_load_explicit(&wait_fired, memory_order_relaxed) & (1u << i))
			continue;
		if (now < d) {
			pending = true;
			continue;
		}
		atomic_fetch_or_explicit(&wait_fired, 1u << i, memory_order_relaxed);
		shim_protect_pool(i, "on-wait:fallback");
	}
	if (!pending)
		atomic_store(&core_deferred_pending, 0);
	errno = e;
}

/* Until pmallocd goes away (or the connection is no longer this
 * process's): wait for orders, obey each. */
static void *orders_main(void *arg)
{
	(void)arg;
	int r;
	while ((r = client_wait_orders(ORDERS_WAIT_MS)) >= 0)
		if (r > 0)
			client_read_orders(obey, rules_msg_answer);
	atomic_store(&orders_thread, 0);
	return NULL;
}

static void orders_start(void)
{
	const struct shim_state *st = shim;
	if (!st || !st->has_manual || client_wait_orders(0) == -ENOTCONN ||
	    atomic_exchange(&orders_thread, 1))
		return;
	if (!shim_thread_start(orders_main, "pmalloc-orders", 64 * 1024)) {
		atomic_store(&orders_thread, 0);
		debug_printf("cannot start the orders thread; pmallocctl protect is read at event-loop calls");
	}
}

static void timer_after_fork_child(void)
{
	atomic_store(&timer_running, 0);
	/* No orders thread here: the orders are the parent's. */
	atomic_store(&orders_thread, 0);
	/* The child's own on-wait: the pools respawn.c reopened are protected
	 * again at this process's main thread's first wait (a pool with
	 * nothing new costs a lock there, no system call). */
	atomic_store(&wait_fired, 0);
	timer_start();
}

void trigger_init(const struct shim_state *st)
{
	(void)st;
	pthread_atfork(NULL, NULL, timer_after_fork_child);
	timer_start();
	orders_start();
}
