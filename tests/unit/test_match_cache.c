/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_match_cache.c - daemon/pmallocd/match_cache.c: through the cache,
 * every (exe, comm, uid) gets what policy_set_match() gives it, the first
 * time and again; an entry never answers for inputs that differ in any of
 * the three, nor for another generation of the policy set; exe paths too
 * long to keep are matched every time; a full table only replaces entries.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "match_cache.h"
#include "testutil.h"

static const char conf_a[] =
	"version = 1;\n"
	"policies = (\n"
	"  { name = \"by-comm\"; match = { exe = [ \"*/srv\" ]; comm = [ \"worker\" ]; };\n"
	"    pools = ( { name = \"p\"; sites = [ \"f\" ]; protect = [ \"manual\" ]; } ); },\n"
	"  { name = \"by-uid\"; match = { exe = [ \"*/srv\" ]; uid = [ 1000 ]; };\n"
	"    pools = ( { name = \"p\"; sites = [ \"f\" ]; protect = [ \"manual\" ]; } ); },\n"
	"  { name = \"any-srv\"; match = { exe = [ \"/usr/*/srv*\" ]; };\n"
	"    pools = ( { name = \"p\"; sites = [ \"f\" ]; protect = [ \"manual\" ]; } ); }\n"
	");\n";
/* The same globs, another order: other answers for the same inputs. */
static const char conf_b[] =
	"version = 1;\n"
	"policies = (\n"
	"  { name = \"any-srv\"; match = { exe = [ \"/usr/*/srv*\" ]; };\n"
	"    pools = ( { name = \"p\"; sites = [ \"f\" ]; protect = [ \"manual\" ]; } ); },\n"
	"  { name = \"by-comm\"; match = { exe = [ \"*/srv\" ]; comm = [ \"worker\" ]; };\n"
	"    pools = ( { name = \"p\"; sites = [ \"f\" ]; protect = [ \"manual\" ]; } ); }\n"
	");\n";

static struct config *load(const char *text, uint64_t generation)
{
	char path[] = "/tmp/test_match_cache.XXXXXX", err[512];
	struct config *c = NULL;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ck_assert_msg(config_read(path, false, &c, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	c->generation = generation;
	return c;
}

/* The cache's answer, twice (a miss, then a hit), against the matcher's. */
static void same(const struct config *c, const char *exe, const char *comm, uid_t uid)
{
	const struct policy *want = policy_set_match(c->set, exe, comm, uid);

	for (int round = 0; round < 2; round++) {
		const struct policy *got = (const struct policy *)1;
		int idx = match_cache_policy(c, exe, comm, uid, &got);

		ck_assert_msg(got == want, "%s %s %u, round %d: %s, want %s", exe, comm, (unsigned)uid, round,
			      got ? got->name : "none", want ? want->name : "none");
		ck_assert_int_eq(idx, config_policy_index(c, want));
	}
}

START_TEST(test_answers_as_the_matcher)
{
	struct config *a = load(conf_a, 1);

	same(a, "/usr/sbin/srv", "worker", 0);
	same(a, "/usr/sbin/srv", "worke", 0);        /* comm differs by a byte */
	same(a, "/usr/sbin/srv", "workers", 0);
	same(a, "/usr/sbin/srv", "master", 1000);    /* uid decides */
	same(a, "/usr/sbin/srv", "master", 1001);
	same(a, "/usr/sbin/srv2", "worker", 1000);   /* exe differs at the end */
	same(a, "/opt/sbin/srv", "x", 0);
	same(a, "/usr/sbin/srvworker", "", 0);      /* the same bytes, split elsewhere */
	same(a, "/usr/sbin/srv", "workerx", 0);
	same(a, "/nothing", "worker", 1000);
	/* Each again, now that all are in: still the matcher's answers. */
	same(a, "/usr/sbin/srv", "worker", 0);
	same(a, "/usr/sbin/srv", "master", 1000);
	same(a, "/usr/sbin/srv", "master", 1001);
	same(a, "/nothing", "worker", 1000);
	match_cache_done();
	config_free(a);
}
END_TEST

START_TEST(test_generation_forgets)
{
	struct config *a = load(conf_a, 1), *b = load(conf_b, 2), *a3 = load(conf_a, 3);
	const struct policy *p;

	ck_assert_int_eq(match_cache_policy(a, "/usr/sbin/srv", "worker", 0, &p), 0);
	ck_assert_str_eq(p->name, "by-comm");
	/* A reload: same inputs, the new set's answer, from the new set. */
	ck_assert_int_eq(match_cache_policy(b, "/usr/sbin/srv", "worker", 0, &p), 0);
	ck_assert_str_eq(p->name, "any-srv");
	ck_assert_ptr_eq(p, &b->set->policies[0]);
	same(b, "/opt/srv", "master", 1000);
	ck_assert_int_eq(match_cache_policy(a3, "/usr/sbin/srv", "worker", 0, &p), 0);
	ck_assert_ptr_eq(p, &a3->set->policies[0]);
	ck_assert_int_eq(match_cache_policy(a3, "/opt/srv", "master", 1000, &p), 1);
	ck_assert_str_eq(p->name, "by-uid");
	match_cache_done();
	config_free(a);
	config_free(b);
	config_free(a3);
}
END_TEST

START_TEST(test_long_and_many)
{
	struct config *a = load(conf_a, 1);
	char exe[MATCH_CACHE_EXE + 64];

	/* An exe longer than an entry holds: matched each time, right. */
	memset(exe, 'd', sizeof(exe));
	memcpy(exe, "/usr/", 5);
	strcpy(exe + sizeof(exe) - 5, "/srv");
	same(a, exe, "worker", 0);
	same(a, exe, "master", 1000);
	exe[MATCH_CACHE_EXE - 1] = '\0';             /* just too long */
	same(a, exe, "worker", 0);
	/* Many more inputs than entries: the ones pushed out are matched
	 * again, every answer stays the matcher's. */
	for (int round = 0; round < 2; round++)
		for (unsigned int i = 0; i < 4 * MATCH_CACHE; i++) {
			char e[64];

			snprintf(e, sizeof(e), i % 2 ? "/usr/bin/srv%u" : "/x/%u/srv", i);
			same(a, e, i % 3 ? "worker" : "other", i % 5 ? 1000 : 0);
		}
	match_cache_done();
	config_free(a);
}
END_TEST

TEST_MAIN("match_cache", test_answers_as_the_matcher, test_generation_forgets, test_long_and_many)
