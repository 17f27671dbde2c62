/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testutil.h - small helpers shared by the Check unit tests. */
#ifndef PMALLOC_TESTUTIL_H
#define PMALLOC_TESTUTIL_H

#include <check.h>
#include <stdlib.h>

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

#endif
