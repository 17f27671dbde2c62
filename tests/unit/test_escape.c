/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_escape.c - common/proto/escape.h, the one escaping of untrusted text for
 * journal fields, log lines and terminals: what is kept, what is escaped
 * and how, and that a cut output never ends inside an escape or a UTF-8
 * character.
 */
#include <string.h>

#include "escape.h"
#include "testutil.h"

static const char *esc(const char *src, size_t size)
{
	static char buf[1024];
	size_t n;

	ck_assert_uint_le(size, sizeof(buf));
	memset(buf, 'Z', sizeof(buf));
	n = text_escape(buf, size, src);
	ck_assert_uint_eq(n, strlen(buf));
	ck_assert_uint_lt(n, size);
	return buf;
}

START_TEST(test_kept)
{
	ck_assert_str_eq(esc("/usr/sbin/sshd", 64), "/usr/sbin/sshd");
	ck_assert_str_eq(esc("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", 64),
			 "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
	ck_assert_str_eq(esc("", 8), "");
	ck_assert_str_eq(esc(NULL, 8), "");
}
END_TEST

START_TEST(test_controls)
{
	ck_assert_str_eq(esc("a\nsshd[1]: Accepted", 64), "a\\x0asshd[1]: Accepted");
	ck_assert_str_eq(esc("\x1b[2J\r\t\x7f", 64), "\\x1b[2J\\x0d\\x09\\x7f");
	ck_assert_str_eq(esc("back\\slash", 64), "back\\\\slash");
	/* An escape in the input stays distinguishable from one we made. */
	ck_assert_str_eq(esc("\\x0a", 64), "\\\\x0a");
}
END_TEST

START_TEST(test_invalid_utf8)
{
	ck_assert_str_eq(esc("a\xff" "b", 64), "a\\xffb");
	ck_assert_str_eq(esc("\xc0\xaf", 64), "\\xc0\\xaf");                 /* overlong '/' */
	ck_assert_str_eq(esc("\xe0\x80\xaf", 64), "\\xe0\\x80\\xaf");         /* overlong */
	ck_assert_str_eq(esc("\xed\xa0\x80", 64), "\\xed\\xa0\\x80");         /* surrogate */
	ck_assert_str_eq(esc("\xf4\x90\x80\x80", 64), "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
	ck_assert_str_eq(esc("\xe2\x80", 64), "\\xe2\\x80");                  /* cut short */
	ck_assert_str_eq(esc("\x80", 64), "\\x80");                           /* stray */
}
END_TEST

START_TEST(test_format_chars)
{
	ck_assert_str_eq(esc("evil\xe2\x80\xaetxt.exe", 64), "evil\\u202etxt.exe");   /* RLO */
	ck_assert_str_eq(esc("\xc2\x9b" "31m", 64), "\\u009b31m");                     /* C1 CSI */
	ck_assert_str_eq(esc("a\xe2\x80\x8b" "b\xef\xbb\xbf", 64), "a\\u200bb\\ufeff"); /* invisible */
	ck_assert_str_eq(esc("\xe2\x81\xa6x\xe2\x81\xa9", 64), "\\u2066x\\u2069");      /* isolates */
	ck_assert_str_eq(esc("\xe2\x80\xa8", 64), "\\u2028");                           /* line sep. */
	ck_assert_str_eq(esc("\xd8\x9c", 64), "\\u061c");                               /* ALM */
}
END_TEST

START_TEST(test_cut_whole)
{
	/* Room for "ab" and the NUL: the escape of \n does not fit, nothing of it is written. */
	ck_assert_str_eq(esc("ab\ncd", 3), "ab");
	ck_assert_str_eq(esc("ab\ncd", 6), "ab");
	ck_assert_str_eq(esc("ab\ncd", 7), "ab\\x0a");
	/* A UTF-8 character is whole or absent. */
	ck_assert_str_eq(esc("a\xe6\x97\xa5", 3), "a");
	ck_assert_str_eq(esc("a\xe6\x97\xa5", 5), "a\xe6\x97\xa5");
	ck_assert_str_eq(esc("a\\", 2), "a");
	ck_assert_str_eq(esc("abc", 1), "");
	ck_assert_uint_eq(text_escape(NULL, 0, "abc"), 0);
}
END_TEST

START_TEST(test_every_byte)
{
	/* Each byte alone: never a raw control byte or invalid UTF-8 in the output. */
	for (int b = 1; b < 256; b++) {
		char in[2] = { (char)b, 0 };
		const char *out = esc(in, ESCAPED_SIZE(1));

		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			ck_assert_msg(*p >= 0x20 && *p < 0x7f, "byte 0x%02x gave 0x%02x", b, *p);
	}
}
END_TEST

TEST_MAIN("escape", test_kept, test_controls, test_invalid_utf8, test_format_chars,
	  test_cut_whole, test_every_byte)
