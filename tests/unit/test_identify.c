/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_identify.c - daemon/pmallocd/identify.c, pmallocd's identification worker:
 * what it reads about a client, and that every job it finishes comes back
 * to a loop that sleeps on its eventfd - the loop's two ways of taking
 * results (woken by the eventfd, or after another source's work) never
 * leave a finished job without a wake-up; a comm the HELLO told is kept,
 * not read; the cgroup's path is the same read or known by its id, and
 * the cache of those paths keeps only what fits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cgroup_cache.h"
#include "identify.h"
#include "testutil.h"

static struct identify *q;

static void setup(void)
{
	ck_assert_int_eq(identify_start(&q), 0);
}

static void teardown(void)
{
	identify_stop(q);
	q = NULL;
}

/* Put back every job in list; how many. */
static int put_all(struct identify_job *list)
{
	int n = 0;

	while (list) {
		struct identify_job *next = list->next;

		identify_job_put(q, list);
		list = next;
		n++;
	}
	return n;
}

/* As the loop sleeps: on the eventfd only.  Fails when it stays silent
 * for 5 s while jobs are out. */
static struct identify_job *wait_woken(void)
{
	struct pollfd p = { .fd = identify_fd(q), .events = POLLIN };

	ck_assert_msg(poll(&p, 1, 5000) == 1, "jobs out, and no wake-up from the worker in 5 s");
	return identify_take(q, true);
}

START_TEST(test_identifies_its_peer)
{
	struct identify_job *j = identify_job_get(q), *back = NULL;
	char exe[PATH_MAX];
	ssize_t n;
	int sv[2];

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	j->owner = &sv;
	j->fd = sv[0];
	j->pid = getpid();
	identify_submit(q, j);
	while (!back)
		back = wait_woken();
	ck_assert_ptr_eq(back, j);
	ck_assert_ptr_null(back->next);
	ck_assert_ptr_eq(back->owner, &sv);
	ck_assert_int_eq(back->r, 0);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	ck_assert_str_eq(back->exe, exe);
	ck_assert_str_eq(back->comm, "test_identify");
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(back->uids[i], getuid());
		ck_assert_uint_eq(back->gids[i], getgid());
	}
	ck_assert_uint_gt(back->seen, 0);
	identify_job_put(q, back);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* One identification of this process, the comm told if given. */
static struct identify_job *identify_self(const char *comm, int sv[2])
{
	struct identify_job *j = identify_job_get(q), *back = NULL;

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	j->owner = sv;
	j->fd = sv[0];
	j->pid = getpid();
	j->comm_given = comm != NULL;
	if (comm)
		snprintf(j->comm, sizeof(j->comm), "%s", comm);
	identify_submit(q, j);
	while (!back)
		back = wait_woken();
	ck_assert_ptr_eq(back, j);
	ck_assert_int_eq(back->r, 0);
	return back;
}

/* The loop identifies a HELLO itself only while the worker waits
 * (server.c): idle once started, idle again once the worker has handed the
 * job back and waits; and without a worker, idle. */
START_TEST(test_idle)
{
	int sv[2], tries = 0;

	ck_assert(identify_idle(NULL));
	ck_assert(identify_idle(q));
	/* Busy from the submit, unless the worker was quicker than this
	 * thread and is asleep again already (its job in the done list): not
	 * asserted, a race the worker may win (1 run in 6 here). */
	identify_job_put(q, identify_self(NULL, sv));
	while (!identify_idle(q) && tries++ < 5000)
		usleep(1000);
	ck_assert_msg(identify_idle(q), "the worker gave its job back and is still busy after 5 s");
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_comm_told)
{
	int sv[2];
	struct identify_job *j = identify_self("told-name", sv);

	ck_assert_str_eq(j->comm, "told-name");
	identify_job_put(q, j);
	close(sv[0]);
	close(sv[1]);
	/* The next job, told nothing, reads it. */
	j = identify_self(NULL, sv);
	ck_assert_str_eq(j->comm, "test_identify");
	identify_job_put(q, j);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* The path /proc/self/cgroup gives for systemd's hierarchy: the unified
 * line's where cgroup_cache_by_id(), else name=systemd's first. */
static void expected_cgroup(char *ret, size_t size)
{
	char text[4096], *named = NULL, *unified = NULL, *save = NULL;
	FILE *f = fopen("/proc/self/cgroup", "re");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3) == 0)
			unified = line + 3;
		else if (strstr(line, ":name=systemd:"))
			named = strstr(line, ":name=systemd:") + 14;
	}
	snprintf(ret, size, "%s", cgroup_cache_by_id() && unified ? unified : named ? named : unified ? unified : "");
}

START_TEST(test_cgroup_read_then_known)
{
	char want[PROC_CGROUP_MAX];
	int sv[2];

	cgroup_cache_clear();
	expected_cgroup(want, sizeof(want));
	for (int round = 0; round < 2; round++) {
		struct identify_job *j = identify_self(NULL, sv);

		ck_assert_str_eq(j->cgroup, want);
		identify_job_put(q, j);
		close(sv[0]);
		close(sv[1]);
	}
}
END_TEST

START_TEST(test_cache_bounds)
{
	char path[CGROUP_CACHE_PATH + 8], out[CGROUP_CACHE_PATH];

	cgroup_cache_clear();
	if (!cgroup_cache_by_id()) {
		/* Legacy layout: nothing is kept. */
		cgroup_cache_put(7, "/a.service");
		ck_assert(!cgroup_cache_get(7, out, sizeof(out)));
		return;
	}
	cgroup_cache_put(0, "/zero.service");
	ck_assert(!cgroup_cache_get(0, out, sizeof(out)));
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[CGROUP_CACHE_PATH] = '\0';         /* one byte too long to keep */
	cgroup_cache_put(7, path);
	ck_assert(!cgroup_cache_get(7, out, sizeof(out)));
	path[CGROUP_CACHE_PATH - 1] = '\0';     /* the longest kept */
	cgroup_cache_put(7, path);
	ck_assert(cgroup_cache_get(7, out, sizeof(out)));
	ck_assert_str_eq(out, path);
	ck_assert(!cgroup_cache_get(7, out, 3));  /* the caller's buffer too small */
	ck_assert(!cgroup_cache_get(8, out, sizeof(out)));
	/* Its slot's next id replaces it. */
	cgroup_cache_put(7 + CGROUP_CACHE, "/b.service");
	ck_assert(!cgroup_cache_get(7, out, sizeof(out)));
	ck_assert(cgroup_cache_get(7 + CGROUP_CACHE, out, sizeof(out)));
	ck_assert_str_eq(out, "/b.service");
	cgroup_cache_clear();
}
END_TEST

/* A process gone before it is identified: the job comes back failed. */
START_TEST(test_gone)
{
	struct identify_job *j = identify_job_get(q), *back = NULL;

	j->fd = -1;
	j->pid = INT_MAX;                /* above pid_max: never a process */
	identify_submit(q, j);
	while (!back)
		back = wait_woken();
	ck_assert_int_lt(back->r, 0);
	identify_job_put(q, back);
}
END_TEST

/* The loop takes results two ways: after another source's work (not
 * woken) and when the eventfd wakes it.  A result the worker queues while
 * the loop takes without being woken must still wake it: here the loop
 * takes unwoken until some results are back, then only sleeps on the
 * eventfd, thousands of times, with jobs that fail in microseconds (a
 * vanished process) so results arrive in the middle of takes.  Before the
 * eventfd was reset ahead of the take, a result queued between the take
 * and the reset lost its wake-up, and so did all that followed: clients
 * at the end of a burst went unanswered. */
START_TEST(test_no_result_left_asleep)
{
	for (int round = 0; round < 3000; round++) {
		int out = 0, back = 0, first = 1 + round % (IDENTIFY_QUEUE - 1);
		struct identify_job *j;

		while ((j = identify_job_get(q))) {
			j->fd = -1;
			j->pid = INT_MAX;
			identify_submit(q, j);
			out++;
		}
		ck_assert_int_eq(out, IDENTIFY_QUEUE);
		while (back < first)
			back += put_all(identify_take(q, false));
		while (back < out)
			back += put_all(wait_woken());
	}
}
END_TEST

static Suite *identify_suite(void)
{
	Suite *s = suite_create("identify");
	TCase *tc = tcase_create("worker");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_identifies_its_peer);
	tcase_add_test(tc, test_idle);
	tcase_add_test(tc, test_gone);
	tcase_add_test(tc, test_no_result_left_asleep);
	tcase_add_test(tc, test_comm_told);
	tcase_add_test(tc, test_cgroup_read_then_known);
	tcase_add_test(tc, test_cache_bounds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(identify_suite());
}
