/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_violation_fmt.c - common/proto/violation_fmt.c, the one formatter of a
 * violation record: the same record gives the stderr line and the journal
 * fields expected (the shim's entry, and pmallocd's with what only it
 * knows); hostile names are escaped everywhere, so a name can neither
 * start a new field nor a new line; fmt_printf's subset.
 */
#include <inttypes.h>
#include <string.h>

#include "violation_fmt.h"
#include "testutil.h"

static struct pmw_report rec;
static char out[8192];

static void set(char *dst, size_t size, const char *s)
{
	memset(dst, 0, size);
	memcpy(dst, s, strlen(s) < size - 1 ? strlen(s) : size - 1);
}
#define SET(field, s) set((field), sizeof(field), (s))

/* A write at offset 8 of a 32-byte object, by main+0x10 of /usr/bin/demo,
 * called from libc. */
static void setup(void)
{
	memset(&rec, 0, sizeof(rec));
	SET(rec.policy, "demo");
	SET(rec.pool, "config");
	rec.mode = PMW_MODE_ENFORCE;
	rec.generation = 3;
	rec.address = 0x7f0000001008;
	rec.object_start = 0x7f0000001000;
	rec.object_size = 32;
	rec.offset = 8;
	SET(rec.object_site, "make_config+0x1c");
	rec.fault_ip = 0x555500001010;
	SET(rec.exe, "/usr/bin/demo");
	rec.n_modules = 2;
	SET(rec.modules[0].path, "/usr/bin/demo");
	rec.modules[0].base = 0x555500000000;
	SET(rec.modules[1].path, "/lib/x86_64-linux-gnu/libc.so.6");
	rec.modules[1].base = 0x7f1000000000;
	rec.n_frames = 3;
	rec.frames[0] = (struct pmw_frame){ .ip = 0x555500001010, .offset = 0x1010, .module = 0 };
	rec.frames[1] = (struct pmw_frame){ .ip = 0x7f1000029d90, .offset = 0x29d90, .module = 1 };
	rec.frames[2] = (struct pmw_frame){ .ip = 0x99, .module = PMW_NO_MODULE };
}

static const char *line(void)
{
	struct fmt f;
	fmt_init(&f, out, sizeof(out));
	violation_fmt_line(&f, &rec);
	return fmt_cstr(&f);
}

static const char *fields(const struct violation_shown *s)
{
	struct fmt f;
	fmt_init(&f, out, sizeof(out));
	violation_fmt_fields(&f, &rec, s);
	return fmt_cstr(&f);
}

START_TEST(test_line)
{
	ck_assert_str_eq(line(), "write to protected pool \"config\" at 0x7f0000001008: offset 8 in 32-byte object "
			 "0x7f0000001000 allocated at make_config+0x1c; ip 0x555500001010 (demo+0x1010); "
			 "policy \"demo\"; enforce: killed by SIGSEGV\n");
	rec.mode = PMW_MODE_AUDIT;
	rec.cause = PMW_CAUSE_KERNEL;
	SET(rec.kernel_call, "read");
	rec.object_start = 0;
	rec.policy[0] = '\0';
	ck_assert_str_eq(line(), "write to protected pool \"config\" at 0x7f0000001008: not inside an object; "
			 "ip 0x555500001010 (demo+0x1010) by the kernel in read(2); audit: write allowed\n");
	rec.cause = PMW_CAUSE_OTHER_THREAD;
	rec.fault_ip = 0;
	ck_assert_str_eq(line(), "write to protected pool \"config\" at 0x7f0000001008: not inside an object; "
			 "ip unknown (changed while the page was open for another audited write); "
			 "audit: write allowed\n");
	ck_assert_int_eq(violation_priority(&rec), 4);
}
END_TEST

/* The shim's own entry: everything from the record. */
START_TEST(test_fields_shim)
{
	struct violation_shown s = { .pid = 42, .generation = rec.generation };
	SET(rec.fault_symbol, "main+0x10");
	ck_assert_int_eq(violation_priority(&rec), 2);
	ck_assert_str_eq(fields(&s),
			 "MESSAGE=pmalloc: PID 42 (/usr/bin/demo) wrote to protected pool \"config\" of policy "
			 "\"demo\" at 0x7f0000001008 (offset 8 in 32-byte object allocated at make_config+0x1c), "
			 "ip 0x555500001010 in main+0x10; process killed (enforce)\n"
			 "PMALLOC_POLICY=demo\nPMALLOC_POOL=config\nPMALLOC_MODE=enforce\n"
			 "PMALLOC_ADDRESS=0x7f0000001008\nPMALLOC_OFFSET=8\nPMALLOC_OBJECT_SIZE=32\n"
			 "PMALLOC_OBJECT_START=0x7f0000001000\nPMALLOC_OBJECT_SITE=make_config+0x1c\n"
			 "PMALLOC_FAULT_IP=0x555500001010\nPMALLOC_FAULT_SYMBOL=main+0x10\n"
			 "PMALLOC_FAULT_MODULE=/usr/bin/demo\nPMALLOC_FAULT_OFFSET=0x1010\n"
			 "PMALLOC_BACKTRACE=demo+0x1010 < libc.so.6+0x29d90 < 0x99\n"
			 "PMALLOC_EXE=/usr/bin/demo\nPMALLOC_GENERATION=3\n"
			 "PMALLOC_SIGNAL=11\nPMALLOC_SIGNAL_NAME=SIGSEGV\n");
}
END_TEST

/* pmallocd's: the kernel's pid and exe, its generation and symbols, in
 * place of the record's; no object; audit; a kernel write. */
START_TEST(test_fields_daemon)
{
	struct violation_shown s = { .pid = 7, .generation = 9, .exe = "/opt/real", .fault_symbol = "f+0x2",
				     .backtrace = "demo+0x1010 (f+0x2) [abcd]" };
	rec.object_start = 0;
	rec.mode = PMW_MODE_AUDIT;
	rec.cause = PMW_CAUSE_KERNEL;
	SET(rec.kernel_call, "recvmsg");
	SET(rec.exe, "/claimed/by/the/report");
	ck_assert_str_eq(fields(&s),
			 "MESSAGE=pmalloc: PID 7 (/opt/real) wrote to protected pool \"config\" of policy \"demo\" "
			 "at 0x7f0000001008 (not inside a known object), ip 0x555500001010 in f+0x2 by the kernel "
			 "in recvmsg(2); write allowed (audit)\n"
			 "PMALLOC_POLICY=demo\nPMALLOC_POOL=config\nPMALLOC_MODE=audit\n"
			 "PMALLOC_ADDRESS=0x7f0000001008\nPMALLOC_OBJECT_SITE=make_config+0x1c\n"
			 "PMALLOC_FAULT_IP=0x555500001010\nPMALLOC_FAULT_SYMBOL=f+0x2\n"
			 "PMALLOC_FAULT_MODULE=/usr/bin/demo\nPMALLOC_FAULT_OFFSET=0x1010\n"
			 "PMALLOC_BACKTRACE=demo+0x1010 (f+0x2) [abcd]\nPMALLOC_KERNEL_CALL=recvmsg\n"
			 "PMALLOC_EXE=/opt/real\nPMALLOC_GENERATION=9\n");
}
END_TEST

/* A write found after another thread's audited write: no instruction. */
START_TEST(test_fields_other_thread)
{
	struct violation_shown s = { .pid = 5, .generation = 3 };
	rec.mode = PMW_MODE_AUDIT;
	rec.cause = PMW_CAUSE_OTHER_THREAD;
	rec.fault_ip = 0;
	rec.n_frames = 0;
	ck_assert_str_eq(fields(&s),
			 "MESSAGE=pmalloc: PID 5 (/usr/bin/demo) wrote to protected pool \"config\" of policy "
			 "\"demo\" at 0x7f0000001008 (offset 8 in 32-byte object allocated at make_config+0x1c), "
			 "ip unknown (changed while the page was open for another audited write); "
			 "write allowed (audit)\n"
			 "PMALLOC_POLICY=demo\nPMALLOC_POOL=config\nPMALLOC_MODE=audit\n"
			 "PMALLOC_ADDRESS=0x7f0000001008\nPMALLOC_OFFSET=8\nPMALLOC_OBJECT_SIZE=32\n"
			 "PMALLOC_OBJECT_START=0x7f0000001000\nPMALLOC_OBJECT_SITE=make_config+0x1c\n"
			 "PMALLOC_FAULT_IP=0x0\nPMALLOC_EXE=/usr/bin/demo\nPMALLOC_GENERATION=3\n");
}
END_TEST

/* Names from a hostile record: escaped, never a new field or line. */
START_TEST(test_hostile)
{
	struct violation_shown s = { .pid = 1 };
	SET(rec.pool, "p\nPMALLOC_MODE=audit");
	SET(rec.policy, "q\"\x1b[2J\xe2\x80\xae");
	SET(rec.object_site, "s\\x0a\n");
	SET(rec.fault_symbol, "\r\x7f");
	SET(rec.exe, "/bin/\x01x");
	SET(rec.modules[0].path, "/lib/evil\nPMALLOC_POOL=x");
	const char *t = fields(&s);
	int lines = 0;
	for (const char *p = t; *p; p++) {
		ck_assert_msg(*(const unsigned char *)p >= 0x20 || *p == '\n', "raw control byte in %s", t);
		lines += *p == '\n';
	}
	ck_assert_int_eq(lines, 18);
	ck_assert_ptr_null(strstr(t, "\nPMALLOC_MODE=audit"));
	ck_assert_ptr_nonnull(strstr(t, "\nPMALLOC_POOL=p\\x0aPMALLOC_MODE=audit\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nPMALLOC_POLICY=q\"\\x1b[2J\\u202e\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nPMALLOC_OBJECT_SITE=s\\\\x0a\\x0a\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nPMALLOC_FAULT_SYMBOL=\\x0d\\x7f\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nPMALLOC_EXE=/bin/\\x01x\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nPMALLOC_FAULT_MODULE=/lib/evil\\x0aPMALLOC_POOL=x\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nPMALLOC_BACKTRACE=evil\\x0aPMALLOC_POOL=x+0x1010 < "));
	ck_assert_ptr_nonnull(strstr(t, "MESSAGE=pmalloc: PID 1 (/bin/\\x01x) wrote to protected pool "
				    "\"p\\x0aPMALLOC_MODE=audit\" of policy \"q\"\\x1b[2J\\u202e\""));
	t = line();
	ck_assert_ptr_nonnull(strstr(t, "pool \"p\\x0aPMALLOC_MODE=audit\" at "));
	ck_assert_ptr_nonnull(strstr(t, "(evil\\x0aPMALLOC_POOL=x+0x1010)"));
	ck_assert_ptr_eq(strchr(t, '\n'), t + strlen(t) - 1);   /* one line */
}
END_TEST

/* A module index past n_modules (a hostile record the daemon passed on)
 * reads no module: the frame is its address. */
START_TEST(test_frame_bounds)
{
	struct fmt f;
	struct pmw_frame fr = { .ip = 0x1234, .offset = 4, .module = 5 };
	fmt_init(&f, out, sizeof(out));
	violation_fmt_frame(&f, &rec, &fr);
	ck_assert_str_eq(fmt_cstr(&f), "0x1234");
}
END_TEST

START_TEST(test_printf)
{
	struct fmt f;
	char small[8];
	const char *volatile none = NULL;   /* NULL is "", as text_escape says */
	fmt_init(&f, out, sizeof(out));
	fmt_printf(&f, "%d %d %u %lu %llx %zu %" PRIx64 " %% %s|%s", -5, 0, 7u, 8ul, 0xabcull, (size_t)9,
		   (uint64_t)0xffffffffffffffffull, "a\tb", none);
	ck_assert_str_eq(fmt_cstr(&f), "-5 0 7 8 abc 9 ffffffffffffffff % a\\x09b|");
	/* Truncated, never past the buffer, always terminable. */
	fmt_init(&f, small, sizeof(small));
	fmt_printf(&f, "%s and more", "longer than eight");
	ck_assert_uint_le(fmt_len(&f), sizeof(small) - 1);
	ck_assert_uint_eq(strlen(fmt_cstr(&f)), fmt_len(&f));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("violation_fmt");
	TCase *tc = tcase_create("violation_fmt");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_line);
	tcase_add_test(tc, test_fields_shim);
	tcase_add_test(tc, test_fields_daemon);
	tcase_add_test(tc, test_fields_other_thread);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_frame_bounds);
	tcase_add_test(tc, test_printf);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
