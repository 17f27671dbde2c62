/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_ro.c - shim/sys/ro.c, the one list of the shim's read-only pages,
 * built with the real kernel door (os.c): every listed page frozen at
 * once and really read-only after; on a simulated 64 KiB-page kernel a
 * page that fits only 4 KiB pages is named, never left writable unsaid,
 * while RO_PAGE-sized ones (the heap's table is one) still fit on
 * kernels with 4 KiB and 64 KiB pages alike; arming's freezes held and
 * done together at the release.  Each test runs in a fork of its own (the
 * list is frozen once per process).
 */
#include "testutil.h"
#include "os.h"
#include "ro.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#define SIM_64K 65536u

/* Two pages as the shim's own state has them (RO_PAGE-aligned), and a
 * 64 KiB-aligned one (what RO_PAGE is on the kernels with 64 KiB pages). */
static union { unsigned char b[RO_PAGE]; } at_arm __attribute__((aligned(RO_PAGE)));
static union { unsigned char b[RO_PAGE]; } by_owner __attribute__((aligned(RO_PAGE)));
static union { unsigned char b[SIM_64K]; } big __attribute__((aligned(SIM_64K)));

START_TEST(freeze_all_on_this_kernel)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("at arm", &at_arm, sizeof(at_arm), false), 0);
	ck_assert_int_eq(ro_register("by owner", &by_owner, sizeof(by_owner), true), 0);
	ck_assert_uint_eq(ro_count(), 2);
	at_arm.b[0] = 1;
	const char *left = NULL;
	ck_assert_int_eq(ro_freeze_all(false, &left), 0);
	ck_assert_ptr_null(left);
	/* Frozen: the list takes no more, and the page reads as before. */
	ck_assert_int_eq(ro_register("late", &big, sizeof(big), false), -EBUSY);
	ck_assert_int_eq(at_arm.b[0], 1);
	/* The owner's page is its owner's to freeze: still writable here. */
	by_owner.b[0] = 2;
	ck_assert_int_eq(by_owner.b[0], 2);
}
END_TEST

/* What freeze_all froze is read-only for real: a write faults. */
START_TEST(frozen_page_faults)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("at arm", &at_arm, sizeof(at_arm), false), 0);
	const char *left = NULL;
	ck_assert_int_eq(ro_freeze_all(false, &left), 0);
	TEST_FORCE_WRITE(&at_arm.b[1], 7);
}
END_TEST

START_TEST(register_refuses_a_part_page)
{
	ck_assert_int_eq(ro_register("half", at_arm.b + 64, 64, false), -EINVAL);
	ck_assert_int_eq(ro_register("empty", &at_arm, 0, false), -EINVAL);
	ck_assert_uint_eq(ro_count(), 0);
}
END_TEST

/* A kernel with 64 KiB pages, simulated: a RO_PAGE region is frozen where
 * it fits (arm64's RO_PAGE is 64 KiB: always), and where it does not
 * (x86-64's 4 KiB RO_PAGE on a 64 KiB kernel) it is named, by owner or
 * not, while every page that fits is frozen all the same. */
START_TEST(simulated_64k_pages)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("big", &big, sizeof(big), false), 0);
	ck_assert_int_eq(ro_register("by owner", &by_owner, sizeof(by_owner), true), 0);
	const char *left = NULL;
	int r = ro_freeze_all_page(SIM_64K, false, &left);
	if (RO_PAGE % SIM_64K == 0) {
		ck_assert_int_eq(r, 0);
		ck_assert_ptr_null(left);
	} else {
		ck_assert_int_eq(r, -EOPNOTSUPP);
		ck_assert_ptr_nonnull(left);
		ck_assert_str_eq(left, "by owner");
	}
}
END_TEST

START_TEST(simulated_64k_big_page_faults)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("big", &big, sizeof(big), false), 0);
	const char *left = NULL;
	int r = ro_freeze_all_page(SIM_64K, false, &left);
	/* The list's own page is RO_PAGE: on x86-64 it too is named. */
	if (RO_PAGE % SIM_64K == 0)
		ck_assert_int_eq(r, 0);
	else
		ck_assert_str_eq(left, "list of read-only pages");
	TEST_FORCE_WRITE(&big.b[SIM_64K - 1], 7);
}
END_TEST

/* The same list on this kernel's 4 KiB pages (x86-64): everything fits. */
START_TEST(simulated_4k_pages)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("at arm", &at_arm, sizeof(at_arm), false), 0);
	ck_assert_int_eq(ro_register("by owner", &by_owner, sizeof(by_owner), true), 0);
	ck_assert_int_eq(ro_register("big", &big, sizeof(big), false), 0);
	const char *left = NULL;
	ck_assert_int_eq(ro_freeze_all_page(4096, false, &left), 0);
	ck_assert_ptr_null(left);
}
END_TEST

/* Arming's held freezes (ro_hold .. ro_release): a listed page's freeze
 * is put off, the page writable until the release, read-only after;
 * adjacent pages go in one call (not counted here: startup_cost.sh counts
 * the start-up's calls).  What is not listed is frozen at once. */
static union { unsigned char b[2][RO_PAGE]; } pair __attribute__((aligned(RO_PAGE)));

static void hold_pair(void)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("first", pair.b[0], RO_PAGE, true), 0);
	ck_assert_int_eq(ro_register("second", pair.b[1], RO_PAGE, true), 0);
	ro_hold();
	ck_assert_int_eq(ro_freeze(pair.b[1], RO_PAGE), 0);
	ck_assert_int_eq(ro_freeze(pair.b[0], RO_PAGE), 0);
	ck_assert(ro_held(pair.b[0], RO_PAGE));
	ck_assert(!ro_held(&at_arm, sizeof(at_arm)));
	/* Put off: still writable. */
	TEST_FORCE_WRITE(&pair.b[0][0], 1);
	TEST_FORCE_WRITE(&pair.b[1][0], 2);
	const char *left = NULL;
	ck_assert_int_eq(ro_release(&left), 0);
	ck_assert_ptr_null(left);
	ck_assert(!ro_held(pair.b[0], RO_PAGE));
	ck_assert_int_eq(pair.b[0][0], 1);
	ck_assert_int_eq(pair.b[1][0], 2);
}

START_TEST(held_until_release)
{
	hold_pair();
}
END_TEST

START_TEST(released_first_faults)
{
	hold_pair();
	TEST_FORCE_WRITE(&pair.b[0][1], 7);
}
END_TEST

START_TEST(released_second_faults)
{
	hold_pair();
	TEST_FORCE_WRITE(&pair.b[1][RO_PAGE - 1], 7);
}
END_TEST

/* A held freeze with its owner's lock (ro_freeze_locked): the lock is
 * taken only by the release, around the freeze (the page still writable
 * when the lock is taken, as another thread's open would find it; read-only
 * after), once for two pages of one run that name the same lock. */
static int lock_calls, unlock_calls, writable_at_lock;

static void test_lock(void)
{
	lock_calls++;
	pair.b[0][5] = 9;
	writable_at_lock = pair.b[0][5] == 9;
}

static void test_unlock(void)
{
	unlock_calls++;
}

START_TEST(held_locked_released_under_lock)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("first", pair.b[0], RO_PAGE, true), 0);
	ck_assert_int_eq(ro_register("second", pair.b[1], RO_PAGE, true), 0);
	ro_hold();
	ck_assert_int_eq(ro_freeze_locked(pair.b[0], RO_PAGE, test_lock, test_unlock), 0);
	ck_assert_int_eq(ro_freeze_locked(pair.b[1], RO_PAGE, test_lock, test_unlock), 0);
	ck_assert_int_eq(lock_calls, 0);
	const char *left = NULL;
	ck_assert_int_eq(ro_release(&left), 0);
	ck_assert_int_eq(lock_calls, 1);
	ck_assert_int_eq(unlock_calls, 1);
	ck_assert(writable_at_lock);
	ck_assert_int_eq(pair.b[0][5], 9);
	TEST_FORCE_WRITE(&pair.b[1][0], 7);   /* read-only now */
}
END_TEST

/* A page the list does not hold is frozen at once, held or not. */
START_TEST(unlisted_frozen_at_once)
{
	ck_assert_int_eq(os_init(), 0);
	ro_hold();
	ck_assert_int_eq(ro_freeze(&by_owner, sizeof(by_owner)), 0);
	ck_assert(!ro_held(&by_owner, sizeof(by_owner)));
	TEST_FORCE_WRITE(&by_owner.b[0], 7);
}
END_TEST

/* Not holding: ro_freeze is the freeze itself. */
START_TEST(not_held_frozen_at_once)
{
	ck_assert_int_eq(os_init(), 0);
	ck_assert_int_eq(ro_register("at arm", &at_arm, sizeof(at_arm), false), 0);
	ck_assert_int_eq(ro_freeze(&at_arm, sizeof(at_arm)), 0);
	TEST_FORCE_WRITE(&at_arm.b[0], 7);
}
END_TEST

static Suite *ro_suite(void)
{
	Suite *s = suite_create("ro");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, freeze_all_on_this_kernel);
	tcase_add_test_raise_signal(tc, frozen_page_faults, SIGSEGV);
	tcase_add_test(tc, register_refuses_a_part_page);
	tcase_add_test(tc, simulated_64k_pages);
	tcase_add_test_raise_signal(tc, simulated_64k_big_page_faults, SIGSEGV);
	tcase_add_test(tc, simulated_4k_pages);
	tcase_add_test(tc, held_until_release);
	tcase_add_test_raise_signal(tc, released_first_faults, SIGSEGV);
	tcase_add_test_raise_signal(tc, released_second_faults, SIGSEGV);
	tcase_add_test_raise_signal(tc, held_locked_released_under_lock, SIGSEGV);
	tcase_add_test_raise_signal(tc, unlisted_frozen_at_once, SIGSEGV);
	tcase_add_test_raise_signal(tc, not_held_frozen_at_once, SIGSEGV);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(ro_suite());
}
