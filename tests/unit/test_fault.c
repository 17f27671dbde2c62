/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_fault.c - the library's SIGSEGV handler, seen from outside.
 *
 * A write to protected pool memory: one exact report line on stderr, then
 * death by SIGSEGV (the program's own handler is not run).  Every other
 * SIGSEGV (NULL dereference, faults the program handles, sent signals,
 * ignored signals, stack overflow) behaves as it would without the
 * library.  The handler works on a thread's small alternate stack, and a
 * kernel write into protected memory fails with EFAULT instead of faulting.
 *
 * Each crash case forks a child with its stderr on a pipe and RLIMIT_CORE
 * at 0 (no core files), and asserts on the child's exit signal and on the
 * exact text.
 */
#define _GNU_SOURCE
#include "pmalloc.h"
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- children --------------------------------------------------------- */

static void assert_killed_by_segv(const struct test_child *c)
{
	ck_assert_msg(WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGSEGV,
		      "expected death by SIGSEGV, got status 0x%x; stderr: \"%s\"", c->status,
		      c->err);
}

static void assert_silent_segv(const struct test_child *c)
{
	assert_killed_by_segv(c);
	ck_assert_msg(c->err_len == 0, "expected empty stderr, got \"%s\"", c->err);
}

/* ---- the report line -------------------------------------------------- */

/* Deliberately out of line, so that the allocation's return address and
 * the faulting instruction fall inside known functions. */
static __attribute__((noinline)) void *alloc_here(struct pmalloc_pool *pool, size_t size)
{
	void *p = pmalloc(pool, size);
	__asm__ volatile("" : : "r"(p) : "memory");     /* no tail call */
	return p;
}

static __attribute__((noinline)) void poke(char *p, char v)
{
	TEST_FORCE_WRITE(p, v);
	__asm__ volatile("" : : : "memory");
}

#define FN_SPAN 256      /* bytes of code that alloc_here() and poke() fit in */

/* Parse "MODULE+0xOFF" at *s, up to the terminator term; advance *s. */
static bool parse_location(const char **s, char term, char *module, size_t module_len,
			   uintptr_t *off)
{
	const char *plus = strstr(*s, "+0x");
	if (!plus || (size_t)(plus - *s) >= module_len)
		return false;
	memcpy(module, *s, (size_t)(plus - *s));
	module[plus - *s] = '\0';
	char *end;
	*off = (uintptr_t)strtoull(plus + 3, &end, 16);
	if (end == plus + 3 || *end != term)
		return false;
	*s = end;
	return true;
}

/* The address inside this program that "test_fault+0xOFF" names. */
static uintptr_t program_address(const char *module, uintptr_t off)
{
	Dl_info di;
	ck_assert(dladdr((void *)(uintptr_t)alloc_here, &di) != 0);
	ck_assert_str_eq(module, program_invocation_short_name);
	return (uintptr_t)di.dli_fbase + off;
}

static bool within(uintptr_t a, const void *fn)
{
	return a >= (uintptr_t)fn && a < (uintptr_t)fn + FN_SPAN;
}

/* Assert that the child's stderr is exactly the violation line for a write
 * at addr into the object [obj, obj+size) of pool name, allocated by
 * alloc_here() and written by poke(). */
static void assert_report(const struct test_child *c, const char *name, const void *addr,
			  const void *obj, size_t size)
{
	char head[512];
	snprintf(head, sizeof(head),
		 "pmalloc[%d]: write to protected pool \"%s\" at %p: offset %zu in %zu-byte "
		 "object %p allocated at ", (int)c->pid, name, addr,
		 (size_t)((const char *)addr - (const char *)obj), size, obj);
	ck_assert_msg(strncmp(c->err, head, strlen(head)) == 0,
		      "report\n  \"%s\"\ndoes not start with\n  \"%s\"", c->err, head);
	const char *s = c->err + strlen(head);
	char module[256];
	uintptr_t site_off, ip, ip_off;
	ck_assert_msg(parse_location(&s, ';', module, sizeof(module), &site_off),
		      "no allocation site in \"%s\"", c->err);
	uintptr_t site = program_address(module, site_off);
	ck_assert_msg(within(site, (const void *)(uintptr_t)alloc_here),
		      "allocation site %#" PRIxPTR " is not in alloc_here() at %p", site,
		      (void *)(uintptr_t)alloc_here);
	int used = 0;
	ck_assert_msg(sscanf(s, "; ip 0x%" SCNxPTR " (%n", &ip, &used) == 1 && used > 0,
		      "no ip in \"%s\"", c->err);
	s += used;
	ck_assert_msg(parse_location(&s, ')', module, sizeof(module), &ip_off),
		      "no ip location in \"%s\"", c->err);
	ck_assert_uint_eq(program_address(module, ip_off), ip);
	ck_assert_msg(within(ip, (const void *)(uintptr_t)poke),
		      "ip %#" PRIxPTR " is not in poke() at %p", ip, (void *)(uintptr_t)poke);
	ck_assert_str_eq(s, "); enforce: killed by SIGSEGV\n");
}

/* A pool with one protected object, created in the test process; the
 * child that writes into it inherits it. */
struct target {
	struct pmalloc_pool *pool;
	char *obj;
	size_t size;           /* usable size the report must give */
	size_t offset;         /* where the child writes */
};

static void make_target(struct target *t, struct pmalloc_pool *pool, size_t request,
			size_t usable, size_t offset)
{
	ck_assert_ptr_nonnull(pool);
	ck_assert_ptr_nonnull(pmalloc(pool, 10));        /* the target is not first */
	t->pool = pool;
	t->obj = alloc_here(pool, request);
	ck_assert_ptr_nonnull(t->obj);
	memset(t->obj, 'c', request);
	pmalloc_protect_pool(pool);
	t->size = usable;
	t->offset = offset;
}

static void write_target(void *arg)
{
	const struct target *t = arg;
	poke(t->obj + t->offset, 'X');
}

START_TEST(test_write_to_unnamed_pool_is_reported_and_killed)
{
	struct target t;
	make_target(&t, pmalloc_create_pool(), 40, 48, 13);
	struct test_child c;
	test_run_child(write_target, &t, &c);
	assert_killed_by_segv(&c);
	assert_report(&c, "(unnamed)", t.obj + 13, t.obj, 48);
}
END_TEST

START_TEST(test_write_to_named_pool_names_it)
{
	struct target t;
	make_target(&t, pmalloc_create_named_pool("config", 0), 100, 112, 111);
	struct test_child c;
	test_run_child(write_target, &t, &c);
	assert_killed_by_segv(&c);
	assert_report(&c, "config", t.obj + 111, t.obj, 112);
}
END_TEST

START_TEST(test_report_keeps_a_copy_of_a_long_name)
{
	char name[100];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	struct target t;
	make_target(&t, pmalloc_create_named_pool(name, 0), 16, 16, 0);
	char expected[64];
	memcpy(expected, name, 63);
	expected[63] = '\0';
	memset(name, 'x', sizeof(name) - 1);             /* the pool kept its own copy */
	struct test_child c;
	test_run_child(write_target, &t, &c);
	assert_killed_by_segv(&c);
	assert_report(&c, expected, t.obj, t.obj, 16);
}
END_TEST

START_TEST(test_write_into_large_object_is_reported)
{
	struct target t;
	size_t size = (size_t)8 << 20;
	make_target(&t, pmalloc_create_named_pool("big", 0), size, size, (size_t)5 << 20);
	struct test_child c;
	test_run_child(write_target, &t, &c);
	assert_killed_by_segv(&c);
	assert_report(&c, "big", t.obj + ((size_t)5 << 20), t.obj, size);
}
END_TEST

/* ---- every other SIGSEGV ---------------------------------------------- */

static void deref_null(void *arg)
{
	(void)arg;
	pmalloc_protect_pool(pmalloc_create_pool());
	TEST_FORCE_WRITE((int *)NULL, 1);
}

START_TEST(test_null_dereference_dies_silently)
{
	struct test_child c;
	test_run_child(deref_null, NULL, &c);
	assert_silent_segv(&c);
}
END_TEST

static sigjmp_buf recover;
static volatile sig_atomic_t recover_armed;
static volatile sig_atomic_t handler_runs;
static void *volatile handler_addr;
static volatile int handler_code;

/* The program's own recovery: back to sigsetjmp when armed, else a marker
 * on stderr and exit 3, either way something the library must not cause
 * for a pool write. */
static void program_recovers(void)
{
	if (recover_armed) {
		recover_armed = 0;
		siglongjmp(recover, 1);
	}
	static const char marker[] = "program handler ran\n";
	if (write(STDERR_FILENO, marker, sizeof(marker) - 1) < 0)
		_exit(4);
	_exit(3);
}

static void program_siginfo_handler(int sig, siginfo_t *si, void *uctx)
{
	(void)sig;
	(void)uctx;
	handler_runs++;
	handler_addr = si->si_addr;
	handler_code = si->si_code;
	program_recovers();
}

static void program_plain_handler(int sig)
{
	(void)sig;
	handler_runs++;
	program_recovers();
}

static void install_program_handler(bool siginfo)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (siginfo) {
		sa.sa_sigaction = program_siginfo_handler;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = program_plain_handler;
	}
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
}

/* A PROT_NONE page outside every pool: an access fault (SEGV_ACCERR) that
 * is not the library's business. */
static char *guard_page(void)
{
	void *p = mmap(NULL, (size_t)getpagesize(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(p != MAP_FAILED);
	return p;
}

START_TEST(test_siginfo_handler_is_chained_for_other_faults)
{
	install_program_handler(true);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	ck_assert_ptr_nonnull(pmalloc(pool, 10));
	pmalloc_protect_pool(pool);
	char *guard = guard_page();
	handler_runs = 0;
	recover_armed = 1;
	if (sigsetjmp(recover, 1) == 0) {
		TEST_FORCE_WRITE(guard, 1);
		ck_abort_msg("write to a PROT_NONE page did not fault");
	}
	ck_assert_int_eq(handler_runs, 1);
	ck_assert_ptr_eq(handler_addr, guard);
	ck_assert_int_eq(handler_code, SEGV_ACCERR);
	recover_armed = 1;
	if (sigsetjmp(recover, 1) == 0) {
		TEST_FORCE_WRITE((int *)NULL, 1);
		ck_abort_msg("NULL dereference did not fault");
	}
	ck_assert_int_eq(handler_runs, 2);
	ck_assert_ptr_eq(handler_addr, NULL);
	ck_assert_int_eq(handler_code, SEGV_MAPERR);
	pmalloc_destroy_pool(pool);
}
END_TEST

START_TEST(test_plain_handler_is_chained_for_other_faults)
{
	install_program_handler(false);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	ck_assert_ptr_nonnull(pmalloc(pool, 10));
	pmalloc_protect_pool(pool);
	char *guard = guard_page();
	handler_runs = 0;
	recover_armed = 1;
	if (sigsetjmp(recover, 1) == 0) {
		TEST_FORCE_WRITE(guard, 1);
		ck_abort_msg("write to a PROT_NONE page did not fault");
	}
	ck_assert_int_eq(handler_runs, 1);
	recover_armed = 1;
	if (sigsetjmp(recover, 1) == 0) {
		TEST_FORCE_WRITE((int *)NULL, 1);
		ck_abort_msg("NULL dereference did not fault");
	}
	ck_assert_int_eq(handler_runs, 2);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* A crash handler that reports and returns, installed with SA_RESETHAND so
 * that the fault, executed again, kills the process (a common idiom): it
 * must run once, then the default action must end the process. */
static void report_and_return(int sig, siginfo_t *si, void *uctx)
{
	(void)sig;
	(void)si;
	(void)uctx;
	static const char line[] = "crash handler\n";
	if (write(STDERR_FILENO, line, sizeof(line) - 1) < 0)
		_exit(4);
}

static void fault_with_resethand_handler(void *arg)
{
	(void)arg;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = report_and_return;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	if (sigaction(SIGSEGV, &sa, NULL) != 0)
		_exit(5);
	pmalloc_protect_pool(pmalloc_create_pool());
	alarm(2);                    /* a handler run again and again ends here */
	TEST_FORCE_WRITE((int *)NULL, 1);
	_exit(3);
}

START_TEST(test_resethand_handler_runs_once_then_default_kills)
{
	struct test_child c;
	test_run_child(fault_with_resethand_handler, NULL, &c);
	ck_assert_msg(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGSEGV,
		      "expected death by SIGSEGV after one handler run, got %s (status 0x%x) "
		      "after %zu handler runs", WIFSIGNALED(c.status) ?
		      strsignal(WTERMSIG(c.status)) : "an exit", c.status,
		      c.err_total / strlen("crash handler\n"));
	ck_assert_str_eq(c.err, "crash handler\n");
}
END_TEST

/* The program's handler, installed before the first pool, would recover
 * from the fault or exit 3; a pool write must kill the process instead. */
static void assert_handler_not_run_for_pool_write(bool siginfo)
{
	install_program_handler(siginfo);
	struct target t;
	make_target(&t, pmalloc_create_named_pool("guarded", 0), 32, 32, 5);
	handler_runs = 0;
	struct test_child c;
	test_run_child(write_target, &t, &c);
	assert_killed_by_segv(&c);
	assert_report(&c, "guarded", t.obj + 5, t.obj, 32);
}

START_TEST(test_siginfo_handler_is_not_run_for_pool_writes)
{
	assert_handler_not_run_for_pool_write(true);
}
END_TEST

START_TEST(test_plain_handler_is_not_run_for_pool_writes)
{
	assert_handler_not_run_for_pool_write(false);
}
END_TEST

static void raise_segv(void *arg)
{
	(void)arg;
	pmalloc_protect_pool(pmalloc_create_pool());
	raise(SIGSEGV);
	_exit(3);
}

START_TEST(test_raised_segv_with_default_action_kills)
{
	struct test_child c;
	test_run_child(raise_segv, NULL, &c);
	assert_silent_segv(&c);
}
END_TEST

static void kill_self_segv(void *arg)
{
	(void)arg;
	pmalloc_protect_pool(pmalloc_create_pool());
	kill(getpid(), SIGSEGV);
	_exit(3);
}

START_TEST(test_sent_segv_with_default_action_kills)
{
	struct test_child c;
	test_run_child(kill_self_segv, NULL, &c);
	assert_silent_segv(&c);
}
END_TEST

START_TEST(test_sent_segv_is_ignored_when_ignored)
{
	ck_assert(signal(SIGSEGV, SIG_IGN) != SIG_ERR);
	struct pmalloc_pool *pool = pmalloc_create_pool();
	ck_assert_ptr_nonnull(pmalloc(pool, 10));
	pmalloc_protect_pool(pool);
	ck_assert_int_eq(kill(getpid(), SIGSEGV), 0);
	ck_assert_int_eq(raise(SIGSEGV), 0);
	/* Still alive, and the ignored disposition is intact. */
	ck_assert_int_eq(kill(getpid(), SIGSEGV), 0);
	pmalloc_destroy_pool(pool);
}
END_TEST

/* Deep enough to overflow any stack; the depth is opaque to the compiler. */
static volatile unsigned long overflow_depth = ~0UL;

static __attribute__((noinline)) int recurse(volatile char *prev, unsigned long depth)
{
	volatile char frame[1024];
	frame[0] = prev ? prev[0] : 1;
	if (depth == 0)
		return frame[0];
	return recurse(frame, depth - 1) + frame[1023];
}

static void overflow_stack(void *arg)
{
	(void)arg;
	stack_t ss = { .ss_size = (size_t)sysconf(_SC_SIGSTKSZ) };
	ss.ss_sp = malloc(ss.ss_size);
	sigaltstack(&ss, NULL);
	pmalloc_protect_pool(pmalloc_create_pool());
	recurse(NULL, overflow_depth);
}

START_TEST(test_stack_overflow_with_sigaltstack_kills)
{
	struct test_child c;
	test_run_child(overflow_stack, NULL, &c);
	assert_silent_segv(&c);
}
END_TEST

/* ---- alternate stacks ------------------------------------------------- */

#define ALT_FILL 0xa5

struct alt_case {
	struct target t;
	unsigned char *altstack;     /* shared with the parent, to see it used */
	size_t altstack_size;
	bool program_handler;        /* the program's own SIGSEGV handler, SA_ONSTACK */
};

static void program_segv_handler(int sig)
{
	(void)sig;
	_exit(6);                    /* must not run for a pool write */
}

static void *thread_write_on_small_altstack(void *arg)
{
	struct alt_case *ac = arg;
	stack_t ss = { .ss_sp = ac->altstack, .ss_size = ac->altstack_size };
	if (sigaltstack(&ss, NULL) != 0)
		_exit(4);
	if (ac->program_handler) {
		struct sigaction sa = { .sa_handler = program_segv_handler, .sa_flags = SA_ONSTACK };
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSEGV, &sa, NULL) != 0)
			_exit(7);
	}
	poke(ac->t.obj + ac->t.offset, 'X');
	return NULL;
}

static void write_from_thread(void *arg)
{
	pthread_t tid;
	if (pthread_create(&tid, NULL, thread_write_on_small_altstack, arg) != 0)
		_exit(5);
	pthread_join(tid, NULL);
	_exit(3);
}

static void alt_case_run(size_t size, bool program_handler, struct alt_case *ac, struct test_child *c)
{
	ac->altstack_size = size;
	ac->program_handler = program_handler;
	ac->altstack = mmap(NULL, ac->altstack_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(ac->altstack != MAP_FAILED);
	memset(ac->altstack, ALT_FILL, ac->altstack_size);
	make_target(&ac->t, pmalloc_create_named_pool("alt", 0), 64, 64, 63);
	test_run_child(write_from_thread, ac, c);
	assert_killed_by_segv(c);
	assert_report(c, "alt", ac->t.obj + 63, ac->t.obj, 64);
}

/* Bytes of the alternate stack the handler left untouched at its low end. */
static size_t altstack_untouched(const struct alt_case *ac)
{
	size_t low = 0;
	while (low < ac->altstack_size && ac->altstack[low] == ALT_FILL)
		low++;
	return low;
}

START_TEST(test_pool_write_on_small_sigaltstack_is_reported)
{
	struct alt_case ac;
	struct test_child c;
	alt_case_run((size_t)sysconf(_SC_SIGSTKSZ), true, &ac, &c);
	/* The handler ran there (the stack grows down from the top; its low
	 * end stays untouched when the handler fits). */
	size_t low = altstack_untouched(&ac);
	ck_assert_msg(low < ac.altstack_size && ac.altstack_size - low > 1024,
		      "the alternate stack was not used by the handler");
	ck_assert_msg(low > 0, "the handler used all %zu bytes of the alternate stack",
		      ac.altstack_size);
}
END_TEST

/* 7 KiB: room for the kernel's signal frame (3.3 KiB with AVX-512) and the
 * report, not for a stack walk: the line comes, the walk is skipped. */
START_TEST(test_pool_write_on_7k_sigaltstack_is_reported)
{
	struct alt_case ac;
	struct test_child c;
	alt_case_run(7 * 1024, true, &ac, &c);
	size_t low = altstack_untouched(&ac);
	ck_assert_msg(low < ac.altstack_size, "the alternate stack was not used by the handler");
	ck_assert_msg(low > 0, "the handler used all %zu bytes of the alternate stack",
		      ac.altstack_size);
}
END_TEST

/* 2 KiB, smaller than the kernel's signal frame here: the program has no
 * SIGSEGV handler of its own that asks for the alternate stack, so the
 * shim's runs on the thread's stack, and reports. */
START_TEST(test_pool_write_on_2k_sigaltstack_is_reported)
{
	struct alt_case ac;
	struct test_child c;
	alt_case_run(2 * 1024, false, &ac, &c);
	ck_assert_uint_eq(altstack_untouched(&ac), ac.altstack_size);
}
END_TEST

/* ---- blocked signals -------------------------------------------------- */

enum block_how { BLOCK_PTHREAD_SIGMASK, BLOCK_SIGPROCMASK, BLOCK_ATTR, BLOCK_SIGBLOCK };

struct block_case {
	struct target t;
	enum block_how how;
};

static void *thread_write_with_all_blocked(void *arg)
{
	struct block_case *bc = arg;
	sigset_t all;
	sigfillset(&all);
	if (bc->how == BLOCK_PTHREAD_SIGMASK && pthread_sigmask(SIG_BLOCK, &all, NULL) != 0)
		_exit(4);
	if (bc->how == BLOCK_SIGPROCMASK && sigprocmask(SIG_SETMASK, &all, NULL) != 0)
		_exit(4);
	if (bc->how == BLOCK_SIGBLOCK) {
		int (*block)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "sigblock");
		if (!block)
			_exit(4);
		block(~0);
	}
	poke(bc->t.obj + bc->t.offset, 'X');
	return NULL;
}

static void write_from_blocking_thread(void *arg)
{
	struct block_case *bc = arg;
	pthread_attr_t attr;
	pthread_t tid;
	pthread_attr_init(&attr);
	if (bc->how == BLOCK_ATTR) {
		sigset_t all;
		sigfillset(&all);
		if (pthread_attr_setsigmask_np(&attr, &all) != 0)
			_exit(4);
	}
	if (pthread_create(&tid, &attr, thread_write_with_all_blocked, arg) != 0)
		_exit(5);
	pthread_join(tid, NULL);
	_exit(3);
}

static void blocked_case(enum block_how how)
{
	struct block_case bc = { .how = how };
	make_target(&bc.t, pmalloc_create_named_pool("blocked", 0), 32, 32, 5);
	struct test_child c;
	test_run_child(write_from_blocking_thread, &bc, &c);
	assert_killed_by_segv(&c);
	assert_report(&c, "blocked", bc.t.obj + 5, bc.t.obj, 32);
}

START_TEST(test_write_from_thread_blocking_all_signals_is_reported)
{
	blocked_case(BLOCK_PTHREAD_SIGMASK);
}
END_TEST

START_TEST(test_write_after_sigprocmask_full_is_reported)
{
	blocked_case(BLOCK_SIGPROCMASK);
}
END_TEST

START_TEST(test_write_from_thread_created_blocked_is_reported)
{
	blocked_case(BLOCK_ATTR);
}
END_TEST

START_TEST(test_write_after_sigblock_is_reported)
{
	blocked_case(BLOCK_SIGBLOCK);
}
END_TEST

/* A mask that blocks everything still reads back as asked for the other
 * signals, and SIGSEGV is not in it. */
START_TEST(test_full_mask_keeps_other_signals_blocked)
{
	sigset_t all, now, old;
	sigfillset(&all);
	ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &all, &old), 0);
	ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
	ck_assert_int_eq(sigismember(&now, SIGSEGV), 0);
	ck_assert_int_eq(sigismember(&now, SIGUSR1), 1);
	ck_assert_int_eq(sigismember(&now, SIGTERM), 1);
	ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
}
END_TEST

/* A handler's mask may not block SIGSEGV either: a pool write inside a
 * handler installed with a full mask is reported. */
static struct target handler_target;

static void write_in_handler(int sig)
{
	(void)sig;
	poke(handler_target.obj + handler_target.offset, 'X');
}

static void write_from_full_mask_handler(void *arg)
{
	(void)arg;
	struct sigaction sa = { .sa_handler = write_in_handler };
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		_exit(4);
	raise(SIGUSR1);
	_exit(3);
}

START_TEST(test_write_in_handler_with_full_mask_is_reported)
{
	make_target(&handler_target, pmalloc_create_named_pool("handler", 0), 32, 32, 1);
	struct test_child c;
	test_run_child(write_from_full_mask_handler, NULL, &c);
	assert_killed_by_segv(&c);
	assert_report(&c, "handler", handler_target.obj + 1, handler_target.obj, 32);
}
END_TEST

/* ---- kernel writes ---------------------------------------------------- */

START_TEST(test_read_into_protected_buffer_fails_with_efault)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *buf = pmalloc(pool, 64);
	ck_assert_ptr_nonnull(buf);
	memset(buf, 'o', 64);
	pmalloc_protect_pool(pool);
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], "attacker data", 13), 13);
	errno = 0;
	ck_assert_int_eq(read(fds[0], buf, 64), -1);
	ck_assert_int_eq(errno, EFAULT);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(buf[i], 'o');
	/* The process lives on and the data is still in the pipe. */
	char ok[16];
	ck_assert_int_eq(read(fds[0], ok, sizeof(ok)), 13);
	ck_assert_mem_eq(ok, "attacker data", 13);
	close(fds[0]);
	close(fds[1]);
	pmalloc_destroy_pool(pool);
}
END_TEST

static Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");

	TCase *report = test_case(s, "report", 30);
	TEST_ADD(report, test_write_to_unnamed_pool_is_reported_and_killed,
		 test_write_to_named_pool_names_it, test_report_keeps_a_copy_of_a_long_name,
		 test_write_into_large_object_is_reported);

	TCase *other = test_case(s, "other faults", 30);
	TEST_ADD(other, test_null_dereference_dies_silently,
		 test_siginfo_handler_is_chained_for_other_faults,
		 test_plain_handler_is_chained_for_other_faults,
		 test_resethand_handler_runs_once_then_default_kills,
		 test_siginfo_handler_is_not_run_for_pool_writes,
		 test_plain_handler_is_not_run_for_pool_writes, test_raised_segv_with_default_action_kills,
		 test_sent_segv_with_default_action_kills, test_sent_segv_is_ignored_when_ignored,
		 test_stack_overflow_with_sigaltstack_kills);

	TCase *alt = test_case(s, "altstack", 0);
	TEST_ADD(alt, test_pool_write_on_small_sigaltstack_is_reported,
		 test_pool_write_on_7k_sigaltstack_is_reported, test_pool_write_on_2k_sigaltstack_is_reported);

	TCase *blocked = test_case(s, "blocked signals", 0);
	TEST_ADD(blocked, test_write_from_thread_blocking_all_signals_is_reported,
		 test_write_after_sigprocmask_full_is_reported,
		 test_write_from_thread_created_blocked_is_reported, test_write_after_sigblock_is_reported,
		 test_full_mask_keeps_other_signals_blocked, test_write_in_handler_with_full_mask_is_reported);

	TCase *kernel = test_case(s, "kernel writes", 0);
	TEST_ADD(kernel, test_read_into_protected_buffer_fails_with_efault);
	return s;
}

int main(void)
{
	test_no_core_files();
	return test_run_suite(fault_suite());
}
