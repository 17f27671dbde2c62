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

#endif
