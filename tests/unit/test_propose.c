/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_propose.c - propose's counting and choice
 * (daemon/pmallocctl/ctl_propose_set.c, ctl_propose_chain.c): frees before
 * the trigger told from frees after it (PMALLOC_TRIGGER_LIVE_*), which
 * contexts are clean, the sites and max_bytes that follow (what a site
 * frees before the trigger weighed over its contexts), and the coverage
 * lines, on contexts made up to the byte.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_propose_chain.h"
#include "ctl_propose_set.h"
#include "testutil.h"

/* An entry's counts as the journal gives them: OBJECTS, BYTES, what was
 * freed in all, and TRIGGER_LIVE (trig_objects < 0: the entry has none). */
static struct pcounts counts(uint64_t objects, uint64_t bytes, uint64_t freed_objects, uint64_t freed_bytes,
			     long trig_objects, uint64_t trig_bytes)
{
	struct pcounts c = {
		.objects = objects, .bytes = bytes, .live_objects = objects - freed_objects,
		.live_bytes = bytes - freed_bytes, .freed_objects = freed_objects, .freed_bytes = freed_bytes,
	};
	pcounts_split(&c, trig_objects >= 0, trig_objects >= 0 ? (uint64_t)trig_objects : 0, trig_bytes);
	return c;
}

START_TEST(test_split)
{
	static const struct {
		const char *what;
		uint64_t freed_objects, freed_bytes;
		long trig_objects;
		uint64_t trig_bytes, early_objects, early_bytes, served_objects;
	} t[] = {
		{ "6 freed, all before the trigger", 6, 600, 4, 400, 6, 600, 0 },
		{ "8 freed, 6 of them before the trigger", 8, 800, 4, 400, 6, 600, 2 },
		{ "no TRIGGER_LIVE fields (an older shim): every free while serving", 3, 300, -1, 0, 0, 0, 3 },
		{ "more live at the trigger than now: never more early than freed", 2, 200, 1, 100, 2, 200, 0 },
		{ "more live at the trigger than made: never below zero", 2, 200, 20, 2000, 0, 0, 2 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		/* Of 10 objects, 1000 bytes. */
		struct pcounts c = counts(10, 1000, t[i].freed_objects, t[i].freed_bytes, t[i].trig_objects,
					  t[i].trig_bytes);
		ck_assert_msg(c.early_objects == t[i].early_objects && c.early_bytes == t[i].early_bytes &&
				      c.served_objects == t[i].served_objects,
			      "%s: early %llu objects %llu bytes, served %llu", t[i].what,
			      (unsigned long long)c.early_objects, (unsigned long long)c.early_bytes,
			      (unsigned long long)c.served_objects);
	}
}
END_TEST

START_TEST(test_clean)
{
	struct pcounts c = counts(4, 400, 0, 0, 4, 400);
	ck_assert(pcounts_clean(&c));
	c.written = true;
	ck_assert(!pcounts_clean(&c));
	c = counts(4, 400, 0, 0, 4, 400);
	c.late_objects = 1;
	c.late_bytes = 16;
	ck_assert(!pcounts_clean(&c));
	/* Freed before the trigger: up to 8 times what stayed live. */
	c = counts(9, 900, 8, 800, 1, 100);
	ck_assert(pcounts_clean(&c));
	c = counts(10, 1000, 9, 900, 1, 100);
	ck_assert(!pcounts_clean(&c));
	/* Everything freed before the trigger: nothing to protect. */
	c = counts(3, 300, 3, 300, 0, 0);
	ck_assert(!pcounts_clean(&c));
	/* One free after the trigger is enough to leave it out. */
	c = counts(9, 900, 2, 200, 8, 800);
	ck_assert_uint_eq(c.served_objects, 1);
	ck_assert(!pcounts_clean(&c));
	/* The same frees without the TRIGGER_LIVE fields: served. */
	c = counts(9, 900, 1, 100, -1, 0);
	ck_assert(!pcounts_clean(&c));
	c = counts(0, 0, 0, 0, 0, 0);
	ck_assert(!pcounts_clean(&c));
	/* No overflow of 8 times a large count. */
	c = counts(2, UINT64_MAX - 16, 1, 16, 1, UINT64_MAX - 32);
	ck_assert(pcounts_clean(&c));
}
END_TEST

#define BID "0123456789abcdef"
#define FR(off, fn) "/srv/app@" BID "+0x" off "=" fn

/* The rendered pools and the total lines. */
static void render(struct pset *s, char **pools, char **total)
{
	size_t pl = 0, tl = 0;
	FILE *p = open_memstream(pools, &pl), *t = open_memstream(total, &tl);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(t);
	pset_render(s, 0, p, t);
	fclose(p);
	fclose(t);
}

START_TEST(test_render)
{
	struct pset *s = pset_new();
	ck_assert_ptr_nonnull(s);
	/* parse_config: 2 contexts through xalloc; one freed 3,000 of 4,000
	 * bytes before the trigger (a parser's scratch), one freed nothing. */
	struct pcounts a = counts(40, 4000, 30, 3000, 10, 1000), b = counts(5, 500, 0, 0, 5, 500);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("100", "parse_config") " "
				  FR("900", "main"), &a), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("110", "parse_config") " "
				  FR("900", "main"), &b), 0);
	/* load_table: kept 100 bytes of 1,000 (freed 900 before the trigger,
	 * more than 8 times what it kept): left out. */
	struct pcounts c = counts(10, 1000, 9, 900, 1, 100);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("200", "load_table") " "
				  FR("900", "main"), &c), 0);
	/* handle: freed after the trigger (a connection's buffer). */
	struct pcounts d = counts(4, 400, 2, 200, 4, 400);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("300", "handle") " "
				  FR("910", "main"), &d), 0);
	char *pools = NULL, *total = NULL;
	render(s, &pools, &total);
	ck_assert_msg(strstr(pools, "sites = [\n          \"app:parse_config\" ];"), "%s", pools);
	ck_assert_msg(strstr(pools, "wrappers = [\n          \"xalloc\" ];"), "%s", pools);
	ck_assert_msg(strstr(pools, "#   site \"app:parse_config\": 1500 bytes live in 2 contexts "
				    "(and 3000 freed before the trigger)\n"), "%s", pools);
	ck_assert_msg(!strstr(pools, "load_table\"") && !strstr(pools, "handle\""), "%s", pools);
	/* Protected: 1,500 live; unwritten: 1,500 + 100 + 200 (live at the end). */
	ck_assert_msg(strstr(total, "# protected: 1500 bytes live in 1 sites; unwritten at learning: 1800 bytes; "
				    "coverage 83.3%\n"), "%s", total);
	ck_assert_msg(strstr(total, "# left out: 0 bytes written, 0 bytes allocating while serving, "
				    "4100 bytes freed\n"), "%s", total);
	/* max_bytes: twice the 4,500 bytes the site allocated, in whole MiB. */
	ck_assert_msg(strstr(pools, "max_bytes = 1048576;"), "%s", pools);
	free(pools);
	free(total);

	/* The same chain from a second process that freed one of its objects
	 * after the trigger: the chain is no longer clean, nor its site. */
	struct pcounts a2 = counts(40, 4000, 31, 3100, 10, 1000);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("100", "parse_config") " "
				  FR("900", "main"), &a2), 0);
	render(s, &pools, &total);
	ck_assert_msg(!strstr(pools, "\"app:parse_config\""), "%s", pools);
	ck_assert_msg(strstr(pools, "\"app@" BID ":+0x110\""), "%s", pools);
	free(pools);
	free(total);
	pset_free(s);
}
END_TEST

START_TEST(test_max_bytes_counts_early)
{
	/* 600 KiB kept, 1.5 MiB freed before the trigger: the pool took 2.1 MiB
	 * and never reuses it; twice that, in whole MiB, is 5 MiB. */
	struct pset *s = pset_new();
	struct pcounts a = counts(2100, 2100 * 1024, 1500, 1500 * 1024, 600, 600 * 1024);
	ck_assert(pcounts_clean(&a));
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("20", "config_init") " " FR("900", "main"), &a), 0);
	char *pools = NULL, *total = NULL;
	render(s, &pools, &total);
	ck_assert_msg(strstr(pools, "max_bytes = 5242880;"), "%s", pools);
	ck_assert_msg(strstr(total, "# protected: 614400 bytes live in 1 sites; unwritten at learning: 614400 bytes; "
				    "coverage 100.0%\n"), "%s", total);
	free(pools);
	free(total);
	pset_free(s);
}
END_TEST

/* A dictionary filled at start-up: the call that adds an entry also makes
 * the bucket table, which it outgrew and freed before the trigger.  The
 * table's context kept nothing, yet its site is the entries' site, and the
 * pool takes the site as one: proposed while what the site freed before
 * the trigger is at most 8 times what it kept, not beyond. */
static struct pset *dict_set(uint64_t table_bytes)
{
	struct pset *s = pset_new();
	ck_assert_ptr_nonnull(s);
	/* The entries, all kept. */
	struct pcounts entries = counts(24, 2400, 0, 0, 24, 2400);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("50", "dict_add") " "
				  FR("100", "populate") " " FR("900", "main"), &entries), 0);
	/* The bucket tables, all freed before the trigger. */
	struct pcounts table = counts(3, table_bytes, 3, table_bytes, 0, 0);
	ck_assert(pcounts_safe(&table) && !pcounts_clean(&table));
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("60", "dict_expand") " "
				  FR("55", "dict_add") " " FR("100", "populate") " " FR("900", "main"), &table), 0);
	/* Other callers, clean, that make xalloc, dict_add and dict_expand
	 * wrappers; a connection's dictionary, freed while serving. */
	struct pcounts load = counts(1, 100, 0, 0, 1, 100), init = counts(1, 512, 0, 0, 1, 512);
	struct pcounts conn = counts(4, 400, 2, 200, 4, 400);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("50", "dict_add") " "
				  FR("200", "load") " " FR("900", "main"), &load), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("60", "dict_expand") " "
				  FR("55", "dict_add") " " FR("400", "init") " " FR("900", "main"), &init), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("50", "dict_add") " "
				  FR("300", "handle") " " FR("910", "main"), &conn), 0);
	return s;
}

START_TEST(test_site_weighs_early_together)
{
	struct pset *s = dict_set(96);
	char *pools = NULL, *total = NULL;
	render(s, &pools, &total);
	ck_assert_msg(strstr(pools, "#   site \"app:populate\": 2400 bytes live in 2 contexts "
				    "(and 96 freed before the trigger)\n"), "%s", pools);
	ck_assert_msg(strstr(pools, "\"dict_expand\"") && strstr(pools, "\"dict_add\""), "%s", pools);
	ck_assert_msg(!strstr(pools, "handle\""), "%s", pools);
	/* 2,400 + 100 + 512 of 3,012 unwritten (handle's 200 live too). */
	ck_assert_msg(strstr(total, "# protected: 3012 bytes live in 3 sites; unwritten at learning: 3212 bytes; "
				    "coverage 93.7%\n"), "%s", total);
	free(pools);
	free(total);
	pset_free(s);

	/* More than 8 times what the site kept: the site stays out. */
	s = dict_set(8 * 2400 + 16);
	render(s, &pools, &total);
	ck_assert_msg(!strstr(pools, "app:populate\""), "%s", pools);
	ck_assert_msg(strstr(total, "# protected: 612 bytes live in 2 sites;"), "%s", total);
	free(pools);
	free(total);
	pset_free(s);
}
END_TEST

/* Every site safe in role main only (the child wrote them): the element of
 * both roles has no site and is not written, and the wrappers it chose go
 * into the element that is (the shim looks through every pool's wrappers;
 * without them the main role's sites would never be the frame that
 * allocates, and nothing would be protected). */
START_TEST(test_wrappers_in_the_element_written)
{
	struct pset *s = pset_new();
	ck_assert_ptr_nonnull(s);
	/* parse_config's two calls of xalloc, in both roles: one never
	 * written, one written by the child only. */
	struct pcounts a = counts(5, 500, 0, 0, 5, 500), b = counts(4, 400, 0, 0, 4, 400);
	a.roles = b.roles = 1u << 0 | 1u << 1;     /* main and child */
	b.written = true;
	b.dirty_roles = 1u << 1;
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("100", "parse_config") " "
				  FR("900", "main"), &a), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("10", "xalloc") " " FR("110", "parse_config") " "
				  FR("900", "main"), &b), 0);
	char *pools = NULL, *total = NULL;
	render(s, &pools, &total);
	ck_assert_msg(strstr(pools, "the sites safe in role main only"), "%s", pools);
	ck_assert_msg(strstr(pools, "\"app:parse_config\""), "%s", pools);
	ck_assert_msg(strstr(pools, "roles = [ \"main\" ];"), "%s", pools);
	ck_assert_msg(strstr(pools, "wrappers = [\n          \"xalloc\" ];"), "%s", pools);
	free(pools);
	free(total);
	pset_free(s);
}
END_TEST

/* The shim's own code is never a site, nor looked through: what libc
 * allocates for a program's thread through the shim's pthread_create (ld.so
 * writes that TLS vector again) and for one of the shim's own threads (as
 * an older shim learned it) stays out; the program's own site beside them
 * is proposed. */
#define SHIM_FR(off, fn) "/usr/lib/libpmalloc_shim.so.0@" BID "+0x" off "=" fn
#define LD_FR(off, fn) "/lib64/ld-linux-x86-64.so.2@" BID "+0x" off "=" fn
#define LIBC_FR(off, fn) "/lib/libc.so.6@" BID "+0x" off "=" fn
START_TEST(test_never_a_site_in_the_shim)
{
	struct pset *s = pset_new();
	ck_assert_ptr_nonnull(s);
	struct pcounts dtv = counts(2, 576, 0, 0, 2, 576), timer = counts(1, 288, 0, 0, 1, 288),
		       conf = counts(3, 300, 0, 0, 3, 300), later = counts(1, 288, 0, 0, 1, 288);
	/* The loader's and libc's frames are passed by a written chain too (a
	 * thread the program makes while serving), as in a server's learning. */
	later.written = true;
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", LD_FR("10", "allocate_dtv") " " LIBC_FR("20",
				  "__pthread_create_2_1") " " SHIM_FR("30", "pthread_create") " " FR("300",
				  "handle") " " FR("930", "main"), &later), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", LD_FR("10", "allocate_dtv") " " LIBC_FR("20",
				  "__pthread_create_2_1") " " SHIM_FR("30", "pthread_create") " " FR("200",
				  "start_workers") " " FR("900", "main"), &dtv), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", LD_FR("10", "allocate_dtv") " " LIBC_FR("20",
				  "__pthread_create_2_1") " " SHIM_FR("40", "shim_thread") " " SHIM_FR("50", "listen") " "
				  FR("910", "main"), &timer), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("100", "parse_config") " " FR("920", "main"), &conf),
			 0);
	char *pools = NULL, *total = NULL;
	render(s, &pools, &total);
	ck_assert_msg(!strstr(pools, "libpmalloc_shim"), "%s", pools);
	ck_assert_msg(!strstr(pools, "libc.so.6:") && !strstr(pools, "ld-linux"), "%s", pools);
	ck_assert_msg(!strstr(pools, "start_workers") && !strstr(pools, "\"app:main\""), "%s", pools);
	ck_assert_msg(strstr(pools, "\"app:parse_config\""), "%s", pools);
	ck_assert_msg(strstr(total, "# protected: 300 bytes live in 1 sites;"), "%s", total);
	free(pools);
	free(total);
	pset_free(s);
}
END_TEST

/* What glibc allocates for itself is never proposed, nor is a glibc frame
 * ever a site: the name-service module records a start-up lookup made
 * (written when a later lookup first needs the module), the link map a
 * dlopen at start made; glibc's function that hands the caller what it
 * allocated (getdelim) is looked through to the program's frame. */
START_TEST(test_never_glibc_own_state)
{
	struct pset *s = pset_new();
	ck_assert_ptr_nonnull(s);
	struct pcounts nss = counts(5, 480, 0, 0, 5, 480), map = counts(1, 1200, 0, 0, 1, 1200),
		       line = counts(4, 256, 0, 0, 4, 256), conf = counts(3, 300, 0, 0, 3, 300);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", LIBC_FR("10", "__nss_module_allocate") " " LIBC_FR("20",
				  "__nss_action_parse") " " LIBC_FR("30", "__nss_database_get") " " LIBC_FR("40",
				  "getpwnam") " " FR("100", "parse_config") " " FR("900", "main"), &nss), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", LD_FR("50", "_dl_new_object") " " LD_FR("60",
				  "_dl_map_object") " " LIBC_FR("70", "__libc_dlopen_mode") " " FR("200", "load_module") " "
				  FR("910", "main"), &map), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", LIBC_FR("80", "__getdelim") " " FR("300", "read_lines")
				  " " FR("920", "main"), &line), 0);
	ck_assert_int_eq(pset_add(s, "learned", "on-wait", FR("110", "parse_config") " " FR("930", "main"), &conf),
			 0);
	char *pools = NULL, *total = NULL;
	render(s, &pools, &total);
	ck_assert_msg(!strstr(pools, "\"libc.so.6:") && !strstr(pools, "\"ld-linux"), "%s", pools);
	ck_assert_msg(!strstr(pools, "load_module") && !strstr(pools, "\"app:main\""), "%s", pools);
	ck_assert_msg(strstr(pools, "\"app:parse_config\"") && strstr(pools, "\"app:read_lines\""), "%s", pools);
	ck_assert_msg(strstr(pools, "\"__getdelim\""), "getdelim looked through: %s", pools);
	ck_assert_msg(strstr(total, "# protected: 556 bytes live in 2 sites; unwritten at learning: 556 bytes;"), "%s",
		      total);
	ck_assert_msg(strstr(total, "# left on the heap: 1680 bytes of the C library's and the loader's own state"),
		      "%s", total);
	free(pools);
	free(total);
	pset_free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("propose");
	TEST_ADD(test_case(s, "counts", 0), test_split, test_clean, test_render,
		 test_max_bytes_counts_early, test_site_weighs_early_together, test_wrappers_in_the_element_written,
		 test_never_a_site_in_the_shim, test_never_glibc_own_state);
	return test_run_suite(s);
}
