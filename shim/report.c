/*
 * report.c - the violation record, written once: the line on stderr, then
 * the caller's enrichment (the stack walk), then the hand-off to pmallocd
 * or the journal (report_send_hook, set by the client code at start-up).
 *
 * Reports are serialised by one lock (a spin lock, owner by thread id,
 * held with every signal blocked; taken after the audit window's, never
 * before it):
 * the handler of one thread waits for another's report to finish instead
 * of dropping its own, so every write is reported or counted.  A report
 * nested inside another on the same thread (a signal handler that writes
 * protected memory while the thread reports a kernel write) cannot wait
 * for itself: its stderr line is written, its send counted as dropped.
 *
 * The stderr line is rate-limited like the journal (daemon.report_burst
 * lines per faulting instruction per daemon.report_interval_s; both 0: no
 * limit): an audited program writing in a loop must not fill a disk with
 * stderr.  What is held back is counted and summarised in one line when
 * that instruction's window ends, and at exit.  The daemon or journal
 * still gets every report (they have their own limit and count).
 *
 * Async-signal-safe throughout: no malloc, no stdio, no locks but the spin
 * lock above.  Module names come from _dl_find_object(), which glibc
 * documents as AS-safe.  The buffers are static (under the lock): the
 * handler may run on a small alternate stack.
 */
#define _GNU_SOURCE
#include "report.h"
#include "fmt.h"
#include "os.h"
#include "pool.h"
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

void (*report_send_hook)(const struct violation *v);
const char *report_program;

#define DEFAULT_BURST 20u
#define DEFAULT_INTERVAL_S 10u
#define LIMIT_SLOTS 64          /* faulting instructions tracked; the last is shared */

struct limit_slot {
	uintptr_t ip;
	uint64_t window_start;  /* 0: slot free */
	unsigned int shown, held;
};

static _Atomic int report_owner;              /* thread id holding the lock, 0 free */
static struct limit_slot slots[LIMIT_SLOTS];  /* under the lock */
static char line[1024], nested_line[1024];
static atomic_flag nested_busy = ATOMIC_FLAG_INIT;
static _Atomic unsigned long sends_dropped;   /* nested reports not sent */

static int thread_id(void)
{
	return os_gettid();
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void report_fmt_location(struct fmt *f, uintptr_t a)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)a, &dlfo) == 0 && dlfo.dlfo_link_map) {
		const char *name = dlfo.dlfo_link_map->l_name;
		if (!name || !*name)      /* the program: argv[0] may be retitled */
			name = report_program && *report_program ? report_program : program_invocation_short_name;
		fmt_escaped(f, base_name(name));
		fmt_str(f, "+");
		fmt_hex(f, a - (uintptr_t)dlfo.dlfo_link_map->l_addr);
		return;
	}
	fmt_hex(f, a);
}

static void limits(unsigned int *burst, unsigned int *interval_s)
{
	const struct shim_state *st = shim;
	*burst = DEFAULT_BURST;
	*interval_s = DEFAULT_INTERVAL_S;
	if (st) {
		*burst = st->image->report_burst;
		*interval_s = st->image->report_interval_s;
	}
}

static void summary(const struct limit_slot *s, bool shared, unsigned int burst, unsigned int interval_s)
{
	char buf[256];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_line_start(&f);
	fmt_u64(&f, s->held);
	fmt_str(&f, " more write reports ");
	if (shared) {
		fmt_str(&f, "from other instructions");
	} else if (s->ip) {
		fmt_str(&f, "at ip ");
		fmt_hex(&f, s->ip);
		fmt_str(&f, " (");
		report_fmt_location(&f, s->ip);
		fmt_str(&f, ")");
	} else {
		fmt_str(&f, "of unknown ip");
	}
	fmt_str(&f, " not shown (rate limit: ");
	fmt_u64(&f, burst);
	fmt_str(&f, " per ");
	fmt_u64(&f, interval_s);
	fmt_str(&f, " s)\n");
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

static void format_line(struct fmt *f, const struct violation *v)
{
	fmt_line_start(f);
	fmt_str(f, "write to protected pool \"");
	fmt_escaped(f, v->pool);
	fmt_str(f, "\" at ");
	fmt_hex(f, v->address);
	if (v->object) {
		fmt_str(f, ": offset ");
		fmt_u64(f, v->address - v->object);
		fmt_str(f, " in ");
		fmt_u64(f, v->object_size);
		fmt_str(f, "-byte object ");
		fmt_hex(f, v->object);
		if (v->site_ra) {
			fmt_str(f, " allocated at ");
			if (v->site_symbol)
				fmt_escaped(f, v->site_symbol);
			else
				report_fmt_location(f, v->site_ra);
		}
	} else {
		fmt_str(f, ": not inside an object");
	}
	if (v->ip) {
		fmt_str(f, "; ip ");
		fmt_hex(f, v->ip);
		fmt_str(f, " (");
		report_fmt_location(f, v->ip);
		fmt_str(f, ")");
	} else {
		fmt_str(f, "; ip unknown");
	}
	if (v->kernel_call) {
		fmt_str(f, " by the kernel in ");
		fmt_str(f, v->kernel_call);
		fmt_str(f, "(2)");
	} else if (v->other_thread) {
		fmt_str(f, " (changed while the page was open for another audited write)");
	}
	if (v->policy && *v->policy) {
		fmt_str(f, "; policy \"");
		fmt_escaped(f, v->policy);
		fmt_str(f, "\"");
	}
	fmt_str(f, v->audit ? "; audit: write allowed\n" : "; enforce: killed by SIGSEGV\n");
}

static void lock(int me)
{
	int expected = 0;
	for (unsigned spins = 1; !atomic_compare_exchange_weak_explicit(&report_owner, &expected, me,
									memory_order_acquire, memory_order_relaxed);
	     spins++) {
		/* An owner that is no thread of ours (the word overwritten, or a
		 * thread gone) holds nothing: a fault handler must not wait for
		 * it for ever (it would hang instead of killing). */
		if (spins % 1024 == 0 && !os_thread_alive(expected) &&
		    atomic_compare_exchange_strong(&report_owner, &expected, me))
			return;
		expected = 0;
		os_yield();
	}
}

static void unlock(void)
{
	atomic_store_explicit(&report_owner, 0, memory_order_release);
}

void report_violation(struct violation *v, void (*enrich)(struct violation *v, void *arg), void *arg)
{
	int me = thread_id();
	struct fmt f;
	if (atomic_load_explicit(&report_owner, memory_order_relaxed) == me) {
		/* Nested on this thread: the lock is ours further up. */
		if (!atomic_flag_test_and_set(&nested_busy)) {
			fmt_init(&f, nested_line, sizeof(nested_line));
			format_line(&f, v);
			fmt_flush_stderr(&f);
			atomic_flag_clear(&nested_busy);
		}
		atomic_fetch_add_explicit(&sends_dropped, 1, memory_order_relaxed);
		return;
	}
	/* No signal handler runs on this thread while it holds the lock: one
	 * that faulted into an audit window another thread holds, while that
	 * thread waits here to report, would wait for ever. */
	sigset_t all, old;
	sigfillset(&all);
	os_sigmask(SIG_BLOCK, &all, &old);
	lock(me);
	if (limit_admits(v->ip)) {
		fmt_init(&f, line, sizeof(line));
		format_line(&f, v);
		fmt_flush_stderr(&f);
	}
	if (enrich)
		enrich(v, arg);
	if (v->n_frames == 0) {
		v->frames[0] = v->ip;
		v->n_frames = v->ip ? 1 : 0;
	}
	if (report_send_hook)
		report_send_hook(v);
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
		fmt_u64(&f, lost);
		fmt_str(&f, " nested write reports were shown here only (not sent)\n");
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

void violation_from_hit(struct violation *v, const struct pool_hit *hit, uintptr_t address)
{
	memset(v, 0, sizeof(*v));
	v->pool = hit->pool->name[0] ? hit->pool->name : "(unnamed)";
	v->policy = hit->pool->policy;
	v->address = address;
	if (hit->in_object) {
		v->object = hit->object;
		v->object_size = hit->object_size;
	}
}
