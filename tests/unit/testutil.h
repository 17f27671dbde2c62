/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testutil.h - small helpers shared by the Check unit tests: a suite run,
 * a case of a table, a child run with its stderr captured (test_run_child). */
#ifndef PMALLOC_TESTUTIL_H
#define PMALLOC_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Keep a deliberate bad access from being optimised away. */
#define TEST_FORCE_WRITE(p, v) (*(volatile __typeof__(*(p)) *)(p) = (v))

/* Run the suite in fork mode (the default, forced here) and exit with its verdict. */
static inline int test_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* A case named NAME in suite S, with its timeout in seconds (0: Check's
 * default), and its tests added by TEST_ADD: one list a case, so that a
 * suite's registration reads as the table it is, not a line per test. */
static inline TCase *test_case(Suite *s, const char *name, int timeout)
{
	TCase *tc = tcase_create(name);
	if (timeout > 0)
		tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

static inline void test_add_all(TCase *tc, const TTest *const *tests, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
}

#define TEST_ADD(tc, ...)                                                  \
	test_add_all((tc), (const TTest *const[]){ __VA_ARGS__ },            \
		     sizeof((const TTest *const[]){ __VA_ARGS__ }) / sizeof(const TTest *))

/* A suite of one case, run: the whole main() of a small suite. */
#define TEST_MAIN(name, ...)                                               \
	int main(void)                                                      \
	{                                                                   \
		Suite *s_ = suite_create(name);                               \
		TEST_ADD(test_case(s_, name, 0), __VA_ARGS__);                  \
		return test_run_suite(s_);                                    \
	}

struct test_child {
	pid_t pid;
	int status;
	char err[8192];
	size_t err_len;              /* bytes kept in err */
	size_t err_total;            /* bytes the child wrote */
};

static inline void test_no_core_files(void)
{
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
}

/* Run fn(arg) in a child with stderr captured (the first 8 KiB kept, all
 * of it drained), no core file; the child exits 0 if fn returns. */
static inline void test_run_child(void (*fn)(void *), void *arg, struct test_child *c)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* Check's runner handles these by killing the whole test's
		 * process group; the child's own alarm must only end the child. */
		signal(SIGALRM, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		test_no_core_files();
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	c->pid = pid;
	c->err_len = 0;
	c->err_total = 0;
	for (;;) {
		char scratch[4096];
		size_t room = sizeof(c->err) - 1 - c->err_len;
		char *to = room ? c->err + c->err_len : scratch;
		ssize_t n = read(fds[0], to, room ? room : sizeof(scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (room)
			c->err_len += (size_t)n;
		c->err_total += (size_t)n;  /* all of it drained: the child never blocks */
	}
	c->err[c->err_len] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &c->status, 0), pid);
}

#endif
