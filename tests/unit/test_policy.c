/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_policy.c - the policy file: every refusal with its exact
 * "FILE:LINE: message", defaults, matching, the compiled policy image (the
 * round trip model -> image -> accessors, and every malformed image
 * refused by policy_image_validate), durations.  Fixtures are written to a temporary
 * directory by the tests themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "policy.h"
#include "policy_image.h"

#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

#define TMPDIR_TEMPLATE "/tmp/test_policy.XXXXXX"
static char tmpdir[sizeof(TMPDIR_TEMPLATE)];
static char conf_path[sizeof(tmpdir) + 16];

/* Unchecked fixture: runs in the parent, so every forked test shares it. */
static void tmpdir_setup(void)
{
	memcpy(tmpdir, TMPDIR_TEMPLATE, sizeof(tmpdir));
	if (!mkdtemp(tmpdir))
		abort();
	snprintf(conf_path, sizeof(conf_path), "%s/t.conf", tmpdir);
}

static void tmpdir_teardown(void)
{
	unlink(conf_path);
	rmdir(tmpdir);
}

static void write_conf_len(const char *text, size_t len)
{
	int fd = open(conf_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

/* Loads text through a real file, as pmallocd and the shim do. */
static int load(const char *text, struct policy_set **ret, char *err, size_t errlen)
{
	write_conf_len(text, strlen(text));
	int r = policy_set_load_file(conf_path, ret, err, errlen);
	unlink(conf_path);
	return r;
}

static struct policy_set *load_ok(const char *text)
{
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;
	int r = load(text, &set, err, sizeof(err));

	ck_assert_msg(r == 0, "refused (%d): %s", r, err);
	ck_assert_ptr_nonnull(set);
	return set;
}

static void expect_error(int r, const char *err, int want_r, int line, const char *msg)
{
	char want[POLICY_ERR_MAX + 64];

	if (line > 0)
		snprintf(want, sizeof(want), "%s:%d: %s", conf_path, line, msg);
	else
		snprintf(want, sizeof(want), "%s: %s", conf_path, msg);
	ck_assert_int_eq(r, want_r);
	ck_assert_str_eq(err, want);
}

/* ---- fragments whose line numbers the refusal table counts on ---- */

/* A policy group opens on line 3; its keys start on line 4. */
#define P_HEAD "version = 1;\n" "policies = (\n" "  {\n"
#define P_NAME "    name = \"p\";\n"
#define P_MATCH "    match = { exe = [ \"*/x\" ]; };\n"
#define P_POOLS "    pools = ( { name = \"a\"; sites = [ \"f\" ]; } );\n"
#define P_TAIL "  }\n" ");\n"
/* A pool group opens on line 7, its name is on line 8, its other keys
 * start on line 9. */
#define POOL_HEAD P_HEAD P_NAME P_MATCH "    pools = (\n" "      {\n" "        name = \"a\";\n"
#define POOL_SITES "        sites = [ \"f\" ];\n"
#define POOL_TAIL "      }\n" "    );\n" P_TAIL

/* A policy whose match is line 5, and a pool with one extra key on line 10. */
#define MATCH(m) P_HEAD P_NAME "    match = " m ";\n" P_POOLS P_TAIL
#define POOL_KEY(k) POOL_HEAD POOL_SITES "        " k ";\n" POOL_TAIL
#define DAEMON_KEY(k) "version = 1;\n" "daemon = {\n" "  " k ";\n" "};\n"

#define A10 "aaaaaaaaaa"
#define A60 A10 A10 A10 A10 A10 A10
#define A63 A60 "aaa"
#define A100 A10 A10 A10 A10 A10 A10 A10 A10 A10 A10
#define A255 A100 A100 A10 A10 A10 A10 A10 "aaaaa"

#define ON_CALL_LIST "on-call takes one of listen, accept, accept4, epoll_wait, epoll_pwait, " \
	"poll, ppoll, select, pselect, setuid, setgid, setresuid, setresgid, seteuid, setegid, " \
	"chroot, pthread_create, fork, daemon, execve, epoll_pwait2, sigsuspend, sigwaitinfo, " \
	"sigtimedwait, pause, sigwait"
#define DURATION_RULE "the duration must be an integer > 0 with unit ms, s, m or h, at most 24h"

struct refusal {
	const char *what;
	const char *text;
	int line;                    /* 0: "FILE: message" */
	const char *msg;
};

static const struct refusal refusals[] = {
	/* libconfig's own errors, with libconfig's line */
	{ "syntax error", DAEMON_KEY("socket = "), 3,
	  "syntax error: expected NAME = VALUE; (strings in double quotes, lists in ( ), arrays in [ ], "
	  "groups in { }; a ';' or ',' missing or a bracket left open before here?)" },
	{ "unquoted string", DAEMON_KEY("socket = run"), 3,
	  "syntax error: a string value must be in double quotes (name = \"demo\";)" },
	{ "key given twice", "version = 1;\nversion = 1;\n", 2, "duplicate setting name" },
	/* what libconfig would let through silently */
	{ "unknown top-level key", "version = 1;\nverison = 2;\n", 2,
	  "unknown key \"verison\" in the top level" },
	{ "unknown daemon key", DAEMON_KEY("sockt = \"/x\""), 3, "unknown key \"sockt\" in daemon" },
	{ "unknown policy key", P_HEAD P_NAME P_MATCH "    modes = \"audit\";\n" P_POOLS P_TAIL, 6,
	  "unknown key \"modes\" in a policy" },
	{ "unknown match key",
	  P_HEAD P_NAME "    match = {\n      exe = [ \"*\" ];\n      user = [ 0 ];\n    };\n"
	  P_POOLS P_TAIL, 7, "unknown key \"user\" in match" },
	{ "unknown pool key", POOL_KEY("max_size = 5"), 10, "unknown key \"max_size\" in a pool" },
	{ "integer wrapping to 0", MATCH("{ uid = [ 4294967296 ]; }"), 5,
	  "integer 4294967296 out of range (a value above 2147483647 needs the suffix L)" },
	{ "integer wrapping to negative", POOL_KEY("max_bytes = 2147483648"), 10,
	  "integer 2147483648 out of range (a value above 2147483647 needs the suffix L)" },
	{ "hex integer wrapping to 1", "version = 0x100000001;\n", 1,
	  "integer 0x100000001 out of range (a value above 2147483647 needs the suffix L)" },
	{ "64-bit integer saturating", POOL_KEY("max_bytes = 9223372036854775808L"), 10,
	  "integer 9223372036854775808L out of range" },
	{ "string where no value goes", DAEMON_KEY("socket \"/x\""), 3, "syntax error" },
	{ "stray string over two lines", "version = 1;\ndaemon = {\n  socket = 1 \"a\nb\";\n};\n", 4,
	  "syntax error" },
	{ "unterminated string", "version = 1;\ndaemon = { socket = \"/x;\n};\n", 2,
	  "unterminated string" },
	{ "the first error wins", "version = 1;\ndaemon = {\n  socket = ;\n  report_burst = 4294967296;\n};\n",
	  3, "syntax error" },
	{ "nesting too deep", "version = 1;\nx = ((((((((((((((((((((((((((((((((( 1 )))))))))))))))))))))))))))))))));\n",
	  2, "nested deeper than 32 levels" },
	{ "@include", "version = 1;\n  @include \"/etc/passwd\"\n", 2, "@include is not supported" },
	{ "unterminated comment", "version = 1;\n/* policies = ();\n\n", 2, "unterminated comment" },
	{ "\\x00 in a string", "version = 1;\ndaemon = { socket = \"/a\\x00b\"; };\n", 2,
	  "\\x00 in a string" },
	/* version */
	{ "version missing", "daemon = { };\n", 0, "missing \"version = 1;\"" },
	{ "version 2", "version = 2;\n", 1, "version 2 is not supported (this pmalloc reads version 1)" },
	{ "version 0", "\nversion = 0;\n", 2, "version 0 is not supported (this pmalloc reads version 1)" },
	{ "version a string", "version = \"1\";\n", 1, "version must be an integer, not a string" },
	{ "version a float", "version = 1.0;\n", 1, "version must be an integer, not a float" },
	/* daemon */
	{ "daemon not a group", "version = 1;\ndaemon = ( );\n", 2,
	  "daemon must be a group { ... }, not a list" },
	{ "socket relative", DAEMON_KEY("socket = \"run/x.sock\""), 3,
	  "socket \"run/x.sock\" is not an absolute path" },
	{ "socket longer than sun_path", DAEMON_KEY("socket = \"/" A100 "aaaaaaa\""), 3,
	  "socket path is longer than 107 bytes" },
	{ "socket not a string", DAEMON_KEY("socket = 5"), 3, "socket must be a string, not an integer" },
	{ "socket with a control character", DAEMON_KEY("socket = \"/run/a\\nb\""), 3,
	  "socket path contains a control character" },
	{ "timeout a string", DAEMON_KEY("handshake_timeout_ms = \"100\""), 3,
	  "handshake_timeout_ms must be an integer, not a string" },
	{ "timeout negative", DAEMON_KEY("handshake_timeout_ms = -1"), 3,
	  "handshake_timeout_ms must not be negative" },
	{ "timeout 0", DAEMON_KEY("handshake_timeout_ms = 0"), 3,
	  "handshake_timeout_ms must be between 1 and 10000, not 0" },
	{ "timeout too long", DAEMON_KEY("handshake_timeout_ms = 10001"), 3,
	  "handshake_timeout_ms must be between 1 and 10000, not 10001" },
	{ "burst 0", DAEMON_KEY("report_burst = 0"), 3,
	  "report_burst must be between 1 and 1000000, not 0" },
	{ "burst an array", DAEMON_KEY("report_burst = [ 1 ]"), 3,
	  "report_burst must be an integer, not an array" },
	{ "burst a float", DAEMON_KEY("report_burst = 1.5"), 3,
	  "report_burst must be an integer, not a float" },
	{ "interval over a day", DAEMON_KEY("report_interval_s = 86401"), 3,
	  "report_interval_s must be between 1 and 86400, not 86401" },
	{ "interval a boolean", DAEMON_KEY("report_interval_s = true"), 3,
	  "report_interval_s must be an integer, not a boolean" },
	/* policies */
	{ "policies not a list", "version = 1;\npolicies = { };\n", 2,
	  "policies must be a list ( { ... }, ... ), not a group" },
	{ "policy not a group", "version = 1;\npolicies = (\n  5\n);\n", 3,
	  "each entry of policies must be a group { ... }, not an integer" },
	{ "policy without a name", P_HEAD P_MATCH P_POOLS P_TAIL, 3, "policy without a name" },
	{ "policy name with a space", P_HEAD "    name = \"my policy\";\n" P_MATCH P_POOLS P_TAIL, 4,
	  "bad policy name \"my policy\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "policy name empty", P_HEAD "    name = \"\";\n" P_MATCH P_POOLS P_TAIL, 4,
	  "bad policy name \"\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "policy name of 64 bytes", P_HEAD "    name = \"" A63 "b\";\n" P_MATCH P_POOLS P_TAIL, 4,
	  "bad policy name \"" A63 "b\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "policy name not a string", P_HEAD "    name = 5;\n" P_MATCH P_POOLS P_TAIL, 4,
	  "name must be a string, not an integer" },
	{ "duplicate policy name",
	  P_HEAD P_NAME P_MATCH P_POOLS "  },\n  {\n" P_NAME P_MATCH P_POOLS P_TAIL, 9,
	  "duplicate policy name \"p\" (first at line 3)" },
	{ "mode unknown", P_HEAD P_NAME P_MATCH "    mode = \"Enforce\";\n" P_POOLS P_TAIL, 6,
	  "mode must be \"enforce\", \"audit\" or \"learn\", not \"Enforce\"" },
	{ "mode not a string", P_HEAD P_NAME P_MATCH "    mode = 1;\n" P_POOLS P_TAIL, 6,
	  "mode must be a string, not an integer" },
	{ "protection unknown", P_HEAD P_NAME P_MATCH "    protection = \"mseal\";\n" P_POOLS P_TAIL, 6,
	  "protection must be \"mprotect\" or \"seal\", not \"mseal\"" },
	/* match */
	{ "match missing", P_HEAD P_NAME P_POOLS P_TAIL, 3, "policy \"p\" without match" },
	{ "match empty", MATCH("{ }"), 5,
	  "match is empty: give exe, comm or uid (a policy without them would match nothing)" },
	{ "match not a group", MATCH("[ \"*/x\" ]"), 5, "match must be a group { ... }, not an array" },
	{ "exe empty", MATCH("{ exe = [ ]; }"), 5, "exe is empty (leave the key out instead)" },
	{ "exe a string", MATCH("{ exe = \"*/x\"; }"), 5, "exe must be an array [ ... ], not a string" },
	{ "exe a list", MATCH("{ exe = ( \"*/x\" ); }"), 5, "exe must be an array [ ... ], not a list" },
	{ "comm integers", MATCH("{ comm = [ 1 ]; }"), 5, "comm entries must be strings, not an integer" },
	{ "uid empty", MATCH("{ uid = [ ]; }"), 5, "uid is empty (leave the key out instead)" },
	{ "uid negative", MATCH("{ uid = [ 0, -1 ]; }"), 5, "uid must not be negative" },
	{ "uid a name", MATCH("{ uid = [ \"root\" ]; }"), 5, "uid entries must be integers, not a string" },
	{ "uid (uid_t)-1", MATCH("{ uid = [ 4294967295L ]; }"), 5,
	  "uid must be between 0 and 4294967294, not 4294967295" },
	/* globs */
	{ "glob empty", MATCH("{ exe = [ \"*/x\", \"\" ]; }"), 5, "exe \"\": glob is empty" },
	{ "glob over 255 bytes", MATCH("{ exe = [ \"" A255 "b\" ]; }"), 5,
	  "exe \"" A60 "aaaaa\"...: glob is longer than 255 bytes" },
	{ "glob with an unclosed [", MATCH("{ comm = [ \"foo[ab\" ]; }"), 5,
	  "comm \"foo[ab\": glob has an unbalanced '['" },
	{ "glob with an empty set []", MATCH("{ comm = [ \"x[]\" ]; }"), 5,
	  "comm \"x[]\": glob has an unbalanced '['" },
	{ "glob with an unclosed class", MATCH("{ comm = [ \"[[:alpha]\" ]; }"), 5,
	  "comm \"[[:alpha]\": glob has an unbalanced '['" },
	{ "glob with a trailing backslash", MATCH("{ comm = [ \"foo\\\\\" ]; }"), 5,
	  "comm \"foo\\\": glob ends in a lone '\\'" },
	{ "glob with a control character", MATCH("{ exe = [ \"a\\tb\" ]; }"), 5,
	  "exe \"a?b\": glob contains a control character" },
	/* pools */
	{ "pools missing", P_HEAD P_NAME P_MATCH P_TAIL, 3, "policy \"p\" without pools" },
	{ "pools empty", P_HEAD P_NAME P_MATCH "    pools = ( );\n" P_TAIL, 6,
	  "pools is empty (the policy would do nothing)" },
	{ "pools a group", P_HEAD P_NAME P_MATCH "    pools = { };\n" P_TAIL, 6,
	  "pools must be a list ( { ... }, ... ), not a group" },
	{ "pool not a group", P_HEAD P_NAME P_MATCH "    pools = ( \"a\" );\n" P_TAIL, 6,
	  "each entry of pools must be a group { ... }, not a string" },
	{ "pool without a name", P_HEAD P_NAME P_MATCH "    pools = (\n      {\n" POOL_SITES POOL_TAIL,
	  7, "pool without a name" },
	{ "pool name with a slash",
	  P_HEAD P_NAME P_MATCH "    pools = (\n      {\n        name = \"a/b\";\n" POOL_SITES POOL_TAIL,
	  8, "bad pool name \"a/b\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "duplicate pool name",
	  POOL_HEAD POOL_SITES "      },\n      {\n        name = \"a\";\n" POOL_SITES POOL_TAIL, 12,
	  "duplicate pool name \"a\" (first at line 7)" },
	{ "sites missing", POOL_HEAD POOL_TAIL, 7, "pool \"a\" without sites" },
	{ "sites empty", POOL_HEAD "        sites = [ ];\n" POOL_TAIL, 9,
	  "sites is empty (the pool would never be used)" },
	{ "sites a list", POOL_HEAD "        sites = ( \"f\" );\n" POOL_TAIL, 9,
	  "sites must be an array [ ... ], not a list" },
	{ "site with an empty object", POOL_HEAD "        sites = [ \"f\", \":foo\" ];\n" POOL_TAIL, 9,
	  "site \":foo\": empty OBJECT part" },
	{ "site with an empty function", POOL_HEAD "        sites = [ \"libfoo.so:\" ];\n" POOL_TAIL, 9,
	  "site \"libfoo.so:\": empty FUNCTION part" },
	{ "site with a bad object glob", POOL_HEAD "        sites = [ \"lib[foo:bar\" ];\n" POOL_TAIL, 9,
	  "site \"lib[foo:bar\": glob has an unbalanced '['" },
	{ "site with a bad function glob", POOL_HEAD "        sites = [ \"lib:f[\" ];\n" POOL_TAIL, 9,
	  "site \"lib:f[\": glob has an unbalanced '['" },
	{ "site on its own line", POOL_HEAD "        sites = [\n          \"f\",\n          \"g[\",\n"
	  "          \"h\"\n        ];\n" POOL_TAIL, 11, "site \"g[\": glob has an unbalanced '['" },
	{ "offset site without an object", POOL_HEAD "        sites = [ \"+0x1c9\" ];\n" POOL_TAIL, 9,
	  "site \"+0x1c9\": an offset site names its object (OBJECT-GLOB:+0xOFFSET)" },
	{ "offset without 0x", POOL_HEAD "        sites = [ \"prog:+1c9\" ];\n" POOL_TAIL, 9,
	  "site \"prog:+1c9\": an offset is +0x and 1 to 16 hex digits" },
	{ "offset without digits", POOL_HEAD "        sites = [ \"prog:+0x\" ];\n" POOL_TAIL, 9,
	  "site \"prog:+0x\": an offset is +0x and 1 to 16 hex digits" },
	{ "offset shorter than +0x (read past its end once)", POOL_HEAD "        sites = [ \"+f\" ];\n"
	  POOL_TAIL, 9, "site \"+f\": an offset is +0x and 1 to 16 hex digits" },
	{ "offset shorter than +0x, with an object", POOL_HEAD "        sites = [ \"prog:+\" ];\n"
	  POOL_TAIL, 9, "site \"prog:+\": an offset is +0x and 1 to 16 hex digits" },
	{ "offset over 64 bits", POOL_HEAD "        sites = [ \"prog:+0x10000000000000000\" ];\n" POOL_TAIL,
	  9, "site \"prog:+0x10000000000000000\": an offset is +0x and 1 to 16 hex digits" },
	{ "offset with junk", POOL_HEAD "        sites = [ \"prog:+0x1c9z\" ];\n" POOL_TAIL, 9,
	  "site \"prog:+0x1c9z\": an offset is +0x and 1 to 16 hex digits" },
	{ "build-id too short", POOL_HEAD "        sites = [ \"prog@abcd:+0x1\" ];\n" POOL_TAIL, 9,
	  "site \"prog@abcd:+0x1\": a build-id is 8 to 128 hex digits, an even count" },
	{ "build-id odd", POOL_HEAD "        sites = [ \"prog@abcdef012:+0x1\" ];\n" POOL_TAIL, 9,
	  "site \"prog@abcdef012:+0x1\": a build-id is 8 to 128 hex digits, an even count" },
	{ "build-id not hex", POOL_HEAD "        sites = [ \"prog@abcdef0g:+0x1\" ];\n" POOL_TAIL, 9,
	  "site \"prog@abcdef0g:+0x1\": a build-id is 8 to 128 hex digits, an even count" },
	{ "build-id without an object", POOL_HEAD "        sites = [ \"@abcdef01:+0x1\" ];\n" POOL_TAIL, 9,
	  "site \"@abcdef01:+0x1\": empty OBJECT part" },
	{ "wrapper with an object", POOL_KEY("wrappers = [ \"libc.so*:xmalloc\" ]"), 10,
	  "wrapper \"libc.so*:xmalloc\": a function glob, or OBJECT-GLOB:+0xOFFSET" },
	{ "wrapper by a bad offset", POOL_KEY("wrappers = [ \"nginx:+0x27z\" ]"), 10,
	  "wrapper \"nginx:+0x27z\": an offset is +0x and 1 to 16 hex digits" },
	{ "wrapper by offset without an object", POOL_KEY("wrappers = [ \":+0x277b2\" ]"), 10,
	  "wrapper \":+0x277b2\": an offset wrapper names its object (OBJECT-GLOB:+0xOFFSET)" },
	{ "wrapper by offset, short build-id", POOL_KEY("wrappers = [ \"nginx@abcd:+0x1\" ]"), 10,
	  "wrapper \"nginx@abcd:+0x1\": a build-id is 8 to 128 hex digits, an even count" },
	{ "wrapper empty", POOL_KEY("wrappers = [ \"\" ]"), 10, "wrapper \"\": glob is empty" },
	{ "protect a string", POOL_KEY("protect = \"manual\""), 10,
	  "protect must be an array [ ... ], not a string" },
	{ "on-call of an unknown function", POOL_KEY("protect = [ \"on-call:open\" ]"), 10,
	  "trigger \"on-call:open\": " ON_CALL_LIST },
	{ "on-call without a function", POOL_KEY("protect = [ \"on-call:\" ]"), 10,
	  "trigger \"on-call:\": " ON_CALL_LIST },
	{ "on-call in capitals", POOL_KEY("protect = [ \"on-call:Listen\" ]"), 10,
	  "trigger \"on-call:Listen\": " ON_CALL_LIST },
	{ "after over 24h", POOL_KEY("protect = [ \"after:25h\" ]"), 10,
	  "trigger \"after:25h\": " DURATION_RULE },
	{ "after 0", POOL_KEY("protect = [ \"manual\", \"after:0s\" ]"), 10,
	  "trigger \"after:0s\": " DURATION_RULE },
	{ "after without a unit", POOL_KEY("protect = [ \"after:2\" ]"), 10,
	  "trigger \"after:2\": " DURATION_RULE },
	{ "unknown trigger", POOL_KEY("protect = [ \"sometimes\" ]"), 10,
	  "unknown trigger \"sometimes\" (on-call:FUNCTION, on-wait, after:DURATION or manual)" },
	{ "max_bytes negative", POOL_KEY("max_bytes = -1"), 10, "max_bytes must not be negative" },
	{ "take unknown", POOL_KEY("take = \"later\""), 10,
	  "take must be \"always\" or \"until-trigger\", not \"later\"" },
	{ "take not a string", POOL_KEY("take = 1"), 10, "take must be a string, not an integer" },
	{ "roles empty", POOL_KEY("roles = [ ]"), 10,
	  "roles must be a non-empty list of role names (\"main\", \"child\", \"child.child\", "
	  "\"child.child.child\"); leave it out for every role" },
	{ "roles unknown", POOL_KEY("roles = [ \"worker\" ]"), 10,
	  "unknown role \"worker\" in roles (\"main\", \"child\", \"child.child\", \"child.child.child\")" },
	{ "roles twice", POOL_KEY("roles = [ \"child\", \"child\" ]"), 10, "role \"child\" is named twice in roles" },
	{ "max_bytes a string", POOL_KEY("max_bytes = \"16M\""), 10,
	  "max_bytes must be an integer, not a string" },
};

START_TEST(test_refused)
{
	const struct refusal *t = &refusals[_i];
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;
	int r = load(t->text, &set, err, sizeof(err));

	ck_assert_msg(r == -EINVAL, "%s: accepted or wrong error %d (%s)", t->what, r, err);
	ck_assert_ptr_null(set);
	expect_error(r, err, -EINVAL, t->line, t->msg);
}
END_TEST

/* ---- valid files ---- */

static const char spec_example[] =
	"version = 1;\n"
	"\n"
	"daemon = {\n"
	"  socket = \"/run/pmalloc/pmallocd.sock\";\n"
	"  handshake_timeout_ms = 100;   # how long a starting process waits for its policy\n"
	"  report_burst = 20;            # journal entries per process and site ...\n"
	"  report_interval_s = 10;       # ... per interval; the rest are counted and summarised\n"
	"};\n"
	"\n"
	"policies = (\n"
	"  {\n"
	"    name = \"demo\";                            # unique; journal field PMALLOC_POLICY\n"
	"    match = { exe = [ \"*/pmalloc-demo\" ]; };  # globs on the real executable path (/proc/PID/exe);\n"
	"                                              # optional: comm = [...], uid = [...]\n"
	"    mode = \"enforce\";                         # \"enforce\": the offending process dies with SIGSEGV\n"
	"                                              # \"audit\": the write is reported, then allowed\n"
	"    protection = \"mprotect\";                  # or \"seal\": mseal(2) on protect; pool memory is never released\n"
	"    pools = (\n"
	"      {\n"
	"        name = \"config\";                      # journal field PMALLOC_POOL\n"
	"        sites = [ \"parse_config\", \"libfoo.so*:foo_init_*\" ];\n"
	"                                              # [OBJECT-GLOB:]FUNCTION-GLOB: the function whose code\n"
	"                                              # called malloc & co; static functions of a binary with\n"
	"                                              # a symbol table count too\n"
	"        wrappers = [ \"xmalloc\", \"xstrdup\" ];  # allocation wrappers to look through to their caller\n"
	"        protect = [ \"on-call:listen\", \"after:2s\" ];\n"
	"                                              # triggers: on-call:FUNCTION (each call of that libc\n"
	"                                              # function protects what is new), after:DURATION\n"
	"                                              # (once, from process start), manual (API or pmallocctl)\n"
	"        max_bytes = 16777216;                 # cap; past it, allocations go to the ordinary heap\n"
	"      }\n"
	"    );\n"
	"  }\n"
	");\n"
	;

START_TEST(test_spec_example)
{
	struct policy_set *set = load_ok(spec_example);
	const struct policy *p;
	const struct policy_pool *pool;

	ck_assert_int_eq(set->version, 1);
	ck_assert_str_eq(set->daemon.socket, "/run/pmalloc/pmallocd.sock");
	ck_assert_uint_eq(set->daemon.handshake_timeout_ms, 100);
	ck_assert_uint_eq(set->daemon.report_burst, 20);
	ck_assert_uint_eq(set->daemon.report_interval_s, 10);
	ck_assert_uint_eq(set->n_policies, 1);
	p = &set->policies[0];
	ck_assert_str_eq(p->name, "demo");
	ck_assert_int_eq(p->line, 11);
	ck_assert_uint_eq(p->n_match_exe, 1);
	ck_assert_str_eq(p->match_exe[0], "*/pmalloc-demo");
	ck_assert_uint_eq(p->n_match_comm, 0);
	ck_assert_uint_eq(p->n_match_uid, 0);
	ck_assert_int_eq(p->mode, POLICY_MODE_ENFORCE);
	ck_assert_int_eq(p->protection, POLICY_PROT_MPROTECT);
	ck_assert_uint_eq(p->n_pools, 1);
	pool = &p->pools[0];
	ck_assert_str_eq(pool->name, "config");
	ck_assert_int_eq(pool->line, 19);
	ck_assert_uint_eq(pool->n_sites, 2);
	ck_assert_ptr_null(pool->sites[0].object);
	ck_assert_str_eq(pool->sites[0].function, "parse_config");
	ck_assert_str_eq(pool->sites[1].object, "libfoo.so*");
	ck_assert_str_eq(pool->sites[1].function, "foo_init_*");
	ck_assert_uint_eq(pool->n_wrappers, 2);
	ck_assert_str_eq(pool->wrappers[0], "xmalloc");
	ck_assert_str_eq(pool->wrappers[1], "xstrdup");
	ck_assert_uint_eq(pool->n_triggers, 2);
	ck_assert_int_eq(pool->triggers[0].kind, POLICY_TRIGGER_ON_CALL);
	ck_assert_int_eq(pool->triggers[0].call, POLICY_CALL_LISTEN);
	ck_assert_int_eq(pool->triggers[1].kind, POLICY_TRIGGER_AFTER);
	ck_assert_uint_eq(pool->triggers[1].after_ns, 2 * SEC);
	ck_assert_uint_eq(pool->max_bytes, 16777216);
	policy_set_free(set);
}
END_TEST

START_TEST(test_defaults)
{
	struct policy_set *set = load_ok(P_HEAD P_NAME P_MATCH P_POOLS P_TAIL);
	const struct policy *p = &set->policies[0];
	const struct policy_pool *pool = &p->pools[0];

	ck_assert_str_eq(set->daemon.socket, "/run/pmalloc/pmallocd.sock");
	ck_assert_uint_eq(set->daemon.handshake_timeout_ms, 100);
	ck_assert_uint_eq(set->daemon.report_burst, 20);
	ck_assert_uint_eq(set->daemon.report_interval_s, 10);
	ck_assert_int_eq(p->mode, POLICY_MODE_ENFORCE);
	ck_assert_int_eq(p->protection, POLICY_PROT_MPROTECT);
	ck_assert_uint_eq(pool->n_wrappers, 0);
	ck_assert_uint_eq(pool->n_triggers, 0);
	ck_assert_uint_eq(pool->max_bytes, 0);
	ck_assert_int_eq(pool->take, POLICY_TAKE_ALWAYS);
	policy_set_free(set);
}
END_TEST

/* take = "until-trigger" and the on-wait trigger: parsed, and carried by
 * the image the shim arms. */
START_TEST(test_take_on_wait)
{
	struct policy_set *set = load_ok(P_HEAD P_NAME P_MATCH
		"    pools = ( { name = \"p\"; sites = [ \"*\" ]; protect = [ \"on-wait\" ];\n"
		"                take = \"until-trigger\"; } );\n" P_TAIL);
	const struct policy_pool *pool = &set->policies[0].pools[0];
	ck_assert_int_eq(pool->take, POLICY_TAKE_UNTIL_TRIGGER);
	ck_assert_uint_eq(pool->n_triggers, 1);
	ck_assert_int_eq(pool->triggers[0].kind, POLICY_TRIGGER_ON_WAIT);
	void *img;
	size_t len;
	ck_assert_int_eq(policy_image_compile(set, &set->policies[0], &img, &len), 0);
	ck_assert_int_eq(policy_image_validate(img, len), 0);
	const struct pimg_header *h = img;
	ck_assert_uint_eq(pimg_pool(h, 0)->take, POLICY_TAKE_UNTIL_TRIGGER);
	ck_assert_uint_eq(pimg_pool_trigger(h, pimg_pool(h, 0), 0)->kind, POLICY_TRIGGER_ON_WAIT);
	ck_assert_uint_eq(h->loaded_us, 0);     /* the loader's to set */
	free(img);
	policy_set_free(set);
}
END_TEST

/* roles = [...]: parsed into role.h's mask, carried by the image; absent:
 * 0, every role. */
START_TEST(test_roles)
{
	struct policy_set *set = load_ok(P_HEAD P_NAME P_MATCH
		"    pools = ( { name = \"p\"; sites = [ \"*\" ]; roles = [ \"main\", \"child.child\" ]; },\n"
		"              { name = \"q\"; sites = [ \"f\" ]; } );\n" P_TAIL);
	ck_assert_uint_eq(set->policies[0].pools[0].roles, 1u << 0 | 1u << 2);
	ck_assert_uint_eq(set->policies[0].pools[1].roles, 0);
	void *img;
	size_t len;
	ck_assert_int_eq(policy_image_compile(set, &set->policies[0], &img, &len), 0);
	ck_assert_int_eq(policy_image_validate(img, len), 0);
	const struct pimg_header *h = img;
	ck_assert_uint_eq(pimg_pool(h, 0)->roles, 1u << 0 | 1u << 2);
	ck_assert_uint_eq(pimg_pool(h, 1)->roles, 0);
	free(img);
	policy_set_free(set);
}
END_TEST

START_TEST(test_no_policies)
{
	struct policy_set *set = load_ok("version = 1;\ndaemon = { report_burst = 5; };\n");

	ck_assert_uint_eq(set->n_policies, 0);
	ck_assert_uint_eq(set->daemon.report_burst, 5);
	ck_assert_uint_eq(set->daemon.report_interval_s, 10);
	ck_assert_ptr_null(policy_set_match(set, "/bin/true", "true", 0));
	policy_set_free(set);
}
END_TEST

static const char all_options[] =
	"version = 1;\n"
	"daemon = {\n"
	"  socket = \"/tmp/pm \\\"q\\\" \\\\ sock\";\n"
	"  handshake_timeout_ms = 250;\n"
	"  report_burst = 3;\n"
	"  report_interval_s = 60;\n"
	"};\n"
	"policies = (\n"
	"  {\n"
	"    name = \"web.server-1_x\";\n"
	"    match = {\n"
	"      exe = [ \"/usr/sbin/nginx\", \"*/we\\\"ird\\\\*\" ];\n"
	"      comm = [ \"nginx*\", \"[[:alpha:]]x[]!]\" ];\n"
	"      uid = [ 0L, 33L, 4294967294L ];\n"
	"    };\n"
	"    mode = \"audit\";\n"
	"    protection = \"seal\";\n"
	"    pools = (\n"
	"      {\n"
	"        name = \"tls\";\n"
	"        sites = [ \"/opt/a:b/libx.so:init_*\", \"libssl.so.*:SSL_CTX_*\", \"main\" ];\n"
	"        wrappers = [ \"x*alloc\" ];\n"
	"        protect = [ \"manual\", \"on-call:setresuid\", \"on-call:execve\", \"after:250ms\",\n"
	"                    \"after:90s\", \"after:5m\", \"after:24h\" ];\n"
	"        max_bytes = 9223372036854775807L;\n"
	"      },\n"
	"      {\n"
	"        name = \"empty-protect\";\n"
	"        sites = [ \"f\" ];\n"
	"        protect = [ ];\n"
	"        max_bytes = 0x10;\n"
	"      }\n"
	"    );\n"
	"  },\n"
	"  { name = \"second\"; match = { comm = [ \"x\" ]; }; pools = ( { name = \"a\"; sites = [ \"g\" ]; } ); }\n"
	");\n";

START_TEST(test_all_options)
{
	struct policy_set *set = load_ok(all_options);
	const struct policy *p = &set->policies[0];
	const struct policy_pool *tls = &p->pools[0], *empty = &p->pools[1];

	ck_assert_str_eq(set->daemon.socket, "/tmp/pm \"q\" \\ sock");
	ck_assert_uint_eq(set->daemon.handshake_timeout_ms, 250);
	ck_assert_uint_eq(set->daemon.report_burst, 3);
	ck_assert_uint_eq(set->daemon.report_interval_s, 60);
	ck_assert_uint_eq(set->n_policies, 2);
	ck_assert_str_eq(p->name, "web.server-1_x");
	ck_assert_str_eq(p->match_exe[1], "*/we\"ird\\*");
	ck_assert_uint_eq(p->n_match_comm, 2);
	ck_assert_uint_eq(p->n_match_uid, 3);
	ck_assert_uint_eq(p->match_uid[0], 0);
	ck_assert_uint_eq(p->match_uid[1], 33);
	ck_assert_uint_eq(p->match_uid[2], 4294967294u);
	ck_assert_int_eq(p->mode, POLICY_MODE_AUDIT);
	ck_assert_int_eq(p->protection, POLICY_PROT_SEAL);
	/* Split at the last ':': object paths may hold one. */
	ck_assert_str_eq(tls->sites[0].object, "/opt/a:b/libx.so");
	ck_assert_str_eq(tls->sites[0].function, "init_*");
	ck_assert_str_eq(tls->sites[1].object, "libssl.so.*");
	ck_assert_ptr_null(tls->sites[2].object);
	ck_assert_uint_eq(tls->n_triggers, 7);
	ck_assert_int_eq(tls->triggers[0].kind, POLICY_TRIGGER_MANUAL);
	ck_assert_int_eq(tls->triggers[1].call, POLICY_CALL_SETRESUID);
	ck_assert_int_eq(tls->triggers[2].call, POLICY_CALL_EXECVE);
	ck_assert_uint_eq(tls->triggers[3].after_ns, 250 * MS);
	ck_assert_uint_eq(tls->triggers[4].after_ns, 90 * SEC);
	ck_assert_uint_eq(tls->triggers[5].after_ns, 300 * SEC);
	ck_assert_uint_eq(tls->triggers[6].after_ns, 86400 * SEC);
	ck_assert_uint_eq(tls->max_bytes, UINT64_C(9223372036854775807));
	/* An empty protect list is valid: the pool is never protected automatically. */
	ck_assert_uint_eq(empty->n_triggers, 0);
	ck_assert_uint_eq(empty->max_bytes, 16);
	policy_set_free(set);
}
END_TEST

/* Every limit is inclusive: the largest accepted value of each. */
START_TEST(test_limits_inclusive)
{
	struct policy_set *set = load_ok(
		"version = 1;\n"
		"daemon = { socket = \"/" A100 "aaaaaa\"; handshake_timeout_ms = 10000;\n"
		"  report_burst = 1000000; report_interval_s = 86400; };\n"
		"policies = ( { name = \"" A63 "\"; match = { exe = [ \"" A255 "\" ]; uid = [ 2147483647 ]; };\n"
		"  pools = ( { name = \"" A63 "\"; sites = [ \"" A255 ":" A255 "\" ];\n"
		"              protect = [ \"after:24h\", \"after:1440m\", \"after:86400s\" ];\n"
		"              max_bytes = 2147483647; } ); } );\n");

	ck_assert_uint_eq(strlen(set->daemon.socket), 107);
	ck_assert_uint_eq(strlen(set->policies[0].name), 63);
	ck_assert_uint_eq(strlen(set->policies[0].match_exe[0]), 255);
	ck_assert_uint_eq(set->policies[0].match_uid[0], 2147483647u);
	ck_assert_uint_eq(set->policies[0].pools[0].max_bytes, 2147483647u);
	policy_set_free(set);
}
END_TEST

/* The pre-scan must not see through comments and strings. */
START_TEST(test_comments_and_strings_not_scanned)
{
	struct policy_set *set = load_ok(
		"# @include \"/etc/passwd\" and 4294967296\n"
		"version = 1; // 99999999999999999999\n"
		"daemon = { socket = \"/run/\" \"x.sock\"; };\n"
		"/* @include \"x\"\n   0x100000000 */\n"
		"policies = ( { name = \"p\"; match = { exe = [ \"*/app-4294967296@x\" ]; };\n"
		"  pools = ( { name = \"a\"; sites = [ \"f\" ]; } ); } );\n");

	ck_assert_str_eq(set->daemon.socket, "/run/x.sock");
	ck_assert_str_eq(set->policies[0].match_exe[0], "*/app-4294967296@x");
	policy_set_free(set);
}
END_TEST

static const char *shipped_conf(void)
{
	static char path[4096];
	const char *src = getenv("PMALLOC_SRC");

	if (src && *src) {
		snprintf(path, sizeof(path), "%s/conf/pmalloc.conf", src);
		return path;
	}
	/* From the source tree (make) or from tests/unit. */
	if (access("conf/pmalloc.conf", R_OK) == 0)
		return "conf/pmalloc.conf";
	return "../../conf/pmalloc.conf";
}

START_TEST(test_shipped_conf)
{
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;
	int r = policy_set_load_file(shipped_conf(), &set, err, sizeof(err));
	const struct policy_pool *pool;

	ck_assert_msg(r == 0, "%s: %s", shipped_conf(), err);
	ck_assert_uint_eq(set->n_policies, 1);
	ck_assert_str_eq(set->policies[0].name, "demo");
	ck_assert_str_eq(set->policies[0].match_exe[0], "*/pmalloc-demo");
	ck_assert_int_eq(set->policies[0].mode, POLICY_MODE_ENFORCE);
	ck_assert_int_eq(set->policies[0].protection, POLICY_PROT_MPROTECT);
	pool = &set->policies[0].pools[0];
	ck_assert_str_eq(pool->name, "config");
	ck_assert_uint_eq(pool->n_sites, 2);
	ck_assert_str_eq(pool->sites[0].function, "parse_config");
	ck_assert_str_eq(pool->sites[1].function, "load_settings");
	ck_assert_uint_eq(pool->n_wrappers, 2);
	ck_assert_str_eq(pool->wrappers[0], "xmalloc");
	ck_assert_str_eq(pool->wrappers[1], "xstrdup");
	ck_assert_uint_eq(pool->n_triggers, 2);
	ck_assert_int_eq(pool->triggers[0].call, POLICY_CALL_LISTEN);
	ck_assert_uint_eq(pool->triggers[1].after_ns, 2 * SEC);
	ck_assert_uint_eq(pool->max_bytes, 16777216);
	ck_assert_ptr_nonnull(policy_set_match(set, "/usr/bin/pmalloc-demo", "pmalloc-demo", 1000));
	ck_assert_ptr_null(policy_set_match(set, "/usr/bin/pmalloc-demo2", "pmalloc-demo2", 1000));
	policy_set_free(set);
}
END_TEST

/* ---- I/O and the string entry point ---- */

START_TEST(test_string_names_itself)
{
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;

	ck_assert_int_eq(policy_set_load_string("\nversion = 2;\n", "from-daemon", &set, err,
						sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "from-daemon:2: version 2 is not supported (this pmalloc reads version 1)");
	ck_assert_int_eq(policy_set_load_string(spec_example, "x", &set, err, sizeof(err)), 0);
	ck_assert_uint_eq(set->n_policies, 1);
	policy_set_free(set);
}
END_TEST

START_TEST(test_missing_file)
{
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;

	unlink(conf_path);
	expect_error(policy_set_load_file(conf_path, &set, err, sizeof(err)), err, -ENOENT, 0,
		     "cannot open: No such file or directory");
	ck_assert_ptr_null(set);
}
END_TEST

START_TEST(test_not_a_regular_file)
{
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;

	ck_assert_int_eq(mkdir(conf_path, 0700), 0);
	int r = policy_set_load_file(conf_path, &set, err, sizeof(err));
	rmdir(conf_path);
	expect_error(r, err, -EINVAL, 0, "not a regular file");
	ck_assert_ptr_null(set);
}
END_TEST

START_TEST(test_file_too_large)
{
	size_t n = 1024 * 1024 + 1;
	char *big = malloc(n + 1);
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;

	ck_assert_ptr_nonnull(big);
	memset(big, '\n', n);
	memcpy(big, "version = 1;", 12);
	big[n] = '\0';
	expect_error(load(big, &set, err, sizeof(err)), err, -EFBIG, 0, "larger than 1048576 bytes");
	ck_assert_int_eq(policy_set_load_string(big, "s", &set, NULL, 0), -EFBIG);
	ck_assert_ptr_null(set);
	free(big);
}
END_TEST

/* libconfig would stop reading at the NUL and accept what came before. */
START_TEST(test_nul_byte)
{
	static const char text[] = "version = 1;\n\0policies = ( 5 );\n";
	char err[POLICY_ERR_MAX] = "";
	struct policy_set *set = NULL;

	write_conf_len(text, sizeof(text) - 1);
	expect_error(policy_set_load_file(conf_path, &set, err, sizeof(err)), err, -EINVAL, 2,
		     "NUL byte in the file");
	ck_assert_ptr_null(set);
}
END_TEST

START_TEST(test_no_error_buffer)
{
	struct policy_set *set = NULL;

	ck_assert_int_eq(policy_set_load_string("version = 3;", "x", &set, NULL, 0), -EINVAL);
	ck_assert_int_eq(policy_set_load_string("version = ;", "x", &set, NULL, 0), -EINVAL);
	ck_assert_ptr_null(set);
	policy_set_free(NULL);
}
END_TEST

/* ---- matching ---- */

static const char match_conf[] =
	"version = 1;\n"
	"policies = (\n"
	"  { name = \"both\"; match = { exe = [ \"*/nginx\", \"*/httpd\" ]; comm = [ \"nginx*\" ]; };\n"
	"    pools = ( { name = \"a\"; sites = [ \"f\" ]; } ); },\n"
	"  { name = \"uid1000\"; match = { uid = [ 1000 ]; };\n"
	"    pools = ( { name = \"a\"; sites = [ \"f\" ]; } ); },\n"
	"  { name = \"bin\"; match = { exe = [ \"/usr/bin/*\" ]; };\n"
	"    pools = ( { name = \"a\"; sites = [ \"f\" ]; } ); },\n"
	"  { name = \"worker\"; match = { comm = [ \"worker\" ]; uid = [ 0, 33 ]; };\n"
	"    pools = ( { name = \"a\"; sites = [ \"f\" ]; } ); }\n"
	");\n";

static const char *match_name(const struct policy_set *set, const char *exe, const char *comm,
			      uid_t uid)
{
	const struct policy *p = policy_set_match(set, exe, comm, uid);
	return p ? p->name : "(none)";
}

START_TEST(test_match_exe)
{
	struct policy_set *set = load_ok(match_conf);

	ck_assert_str_eq(match_name(set, "/usr/local/bin/ls", "ls", 5), "(none)");
	ck_assert_str_eq(match_name(set, "/usr/bin/ls", "ls", 5), "bin");
	/* fnmatch without FNM_PATHNAME: '*' crosses '/'. */
	ck_assert_str_eq(match_name(set, "/usr/bin/sub/dir/ls", "ls", 5), "bin");
	ck_assert_str_eq(match_name(set, NULL, "ls", 5), "(none)");
	policy_set_free(set);
}
END_TEST

START_TEST(test_match_comm)
{
	struct policy_set *set = load_ok(match_conf);

	ck_assert_str_eq(match_name(set, "/opt/x", "worker", 33), "worker");
	ck_assert_str_eq(match_name(set, "/opt/x", "workers", 33), "(none)");
	ck_assert_str_eq(match_name(set, "/opt/x", NULL, 33), "(none)");
	policy_set_free(set);
}
END_TEST

START_TEST(test_match_uid)
{
	struct policy_set *set = load_ok(match_conf);

	ck_assert_str_eq(match_name(set, "/opt/x", "x", 1000), "uid1000");
	ck_assert_str_eq(match_name(set, "/opt/x", "x", 1001), "(none)");
	ck_assert_str_eq(match_name(set, "/opt/x", "worker", 0), "worker");
	ck_assert_str_eq(match_name(set, "/opt/x", "worker", 34), "(none)");
	policy_set_free(set);
}
END_TEST

/* Every criterion a policy gives must fit, any entry within one. */
START_TEST(test_match_all_criteria)
{
	struct policy_set *set = load_ok(match_conf);

	ck_assert_str_eq(match_name(set, "/usr/sbin/nginx", "nginx: worker", 5), "both");
	ck_assert_str_eq(match_name(set, "/usr/sbin/httpd", "nginx", 5), "both");
	ck_assert_str_eq(match_name(set, "/usr/sbin/nginx", "apache", 5), "(none)");
	ck_assert_str_eq(match_name(set, "/usr/sbin/lighttpd", "nginx", 5), "(none)");
	policy_set_free(set);
}
END_TEST

START_TEST(test_match_first_wins)
{
	struct policy_set *set = load_ok(match_conf);

	ck_assert_str_eq(match_name(set, "/usr/bin/ls", "ls", 1000), "uid1000");
	ck_assert_str_eq(match_name(set, "/usr/bin/ls", "worker", 0), "bin");
	policy_set_free(set);
}
END_TEST

/* The parser refuses such a policy; a model built otherwise must still not
 * match everything. */
START_TEST(test_match_no_criterion)
{
	struct policy pols[2] = { { .name = (char *)(uintptr_t)"nothing" },
				  { .name = (char *)(uintptr_t)"all-uids" } };
	uid_t uids[] = { 7 };
	struct policy_set set = { .version = 1, .policies = pols, .n_policies = 2 };

	pols[1].match_uid = uids;
	pols[1].n_match_uid = 1;
	ck_assert_str_eq(match_name(&set, "/bin/sh", "sh", 0), "(none)");
	ck_assert_str_eq(match_name(&set, "/bin/sh", "sh", 7), "all-uids");
	ck_assert_ptr_null(policy_set_match(NULL, "/bin/sh", "sh", 7));
}
END_TEST

/* ---- the round trip through the policy image ---- */

/* The string of an image equals the model's (both absent, or equal). */
static void assert_img_str(const struct pimg_header *h, struct pimg_str s, const char *want)
{
	const char *got = pimg_str(h, s);
	ck_assert_pstr_eq(got, want);
	if (got)
		ck_assert_uint_eq(s.len, strlen(want));
}

/* What the shim reads through the accessors is what the model says. */
static void assert_image_eq(const struct policy_set *set, const struct policy *a,
			    const struct pimg_header *h)
{
	ck_assert_str_eq(pimg_policy_name(h), a->name);
	ck_assert_int_eq(h->mode, a->mode);
	ck_assert_int_eq(h->protection, a->protection);
	ck_assert_uint_eq(h->report_burst, set->daemon.report_burst);
	ck_assert_uint_eq(h->report_interval_s, set->daemon.report_interval_s);
	ck_assert_uint_eq(h->n_pools, a->n_pools);
	for (size_t i = 0; i < a->n_pools; i++) {
		const struct policy_pool *pa = &a->pools[i];
		const struct pimg_pool *pb = pimg_pool(h, i);
		ck_assert_str_eq(pimg_pool_name(h, i), pa->name);
		ck_assert_uint_eq(pb->max_bytes, pa->max_bytes);
		ck_assert_uint_eq(pb->n_sites, pa->n_sites);
		for (size_t j = 0; j < pa->n_sites; j++) {
			const struct pimg_site *sb = pimg_pool_site(h, pb, j);
			assert_img_str(h, sb->object, pa->sites[j].object);
			assert_img_str(h, sb->function, pa->sites[j].function);
			assert_img_str(h, sb->build_id, pa->sites[j].build_id);
			ck_assert_int_eq((sb->flags & PIMG_SITE_BY_OFFSET) != 0, pa->sites[j].by_offset);
			ck_assert_uint_eq(sb->offset, pa->sites[j].offset);
		}
		ck_assert_uint_eq(pb->n_wrappers, pa->n_wrappers);
		for (size_t j = 0; j < pa->n_wrappers; j++)
			ck_assert_str_eq(pimg_pool_wrapper(h, pb, j), pa->wrappers[j]);
		ck_assert_uint_eq(pb->n_triggers, pa->n_triggers);
		for (size_t j = 0; j < pa->n_triggers; j++) {
			const struct pimg_trigger *tb = pimg_pool_trigger(h, pb, j);
			ck_assert_int_eq(tb->kind, pa->triggers[j].kind);
			if (tb->kind == POLICY_TRIGGER_ON_CALL)
				ck_assert_int_eq(tb->call, pa->triggers[j].call);
			if (tb->kind == POLICY_TRIGGER_AFTER)
				ck_assert_uint_eq(tb->after_ns, pa->triggers[j].after_ns);
		}
	}
}

/* An 8-byte aligned copy of policy i of text's image (free() it). */
static struct pimg_header *compile_policy(const char *text, size_t i, size_t *ret_len)
{
	struct policy_set *set = load_ok(text);
	void *img = NULL;
	ck_assert_uint_lt(i, set->n_policies);
	ck_assert_int_eq(policy_image_compile(set, &set->policies[i], &img, ret_len), 0);
	ck_assert_int_eq(policy_image_validate(img, *ret_len), 0);
	assert_image_eq(set, &set->policies[i], img);
	policy_set_free(set);
	return img;
}

static void assert_round_trip(const char *text)
{
	struct policy_set *set = load_ok(text);

	for (size_t i = 0; i < set->n_policies; i++) {
		void *img = NULL;
		size_t len = 0;
		ck_assert_int_eq(policy_image_compile(set, &set->policies[i], &img, &len), 0);
		ck_assert_uint_eq(len, ((const struct pimg_header *)img)->total_len);
		ck_assert_uint_eq(len % 8, 0);
		ck_assert_int_eq(policy_image_validate(img, len), 0);
		assert_image_eq(set, &set->policies[i], img);
		free(img);
	}
	policy_set_free(set);
}

START_TEST(test_round_trip_spec_example)
{
	assert_round_trip(spec_example);
}
END_TEST

/* Quotes and backslashes in strings, 64-bit values, every trigger kind. */
START_TEST(test_round_trip_all_options)
{
	assert_round_trip(all_options);
}
END_TEST

START_TEST(test_round_trip_match_policies)
{
	assert_round_trip(match_conf);
}
END_TEST

/* Offset sites, pinned or not: split, canonical (lower case), round trip. */
static const char offset_sites[] =
	"version = 1;\n"
	"policies = ( { name = \"o\"; match = { exe = [ \"*/nginx\" ]; };\n"
	"  pools = ( { name = \"conf\"; sites = [ \"nginx:+0x4A2B1\",\n"
	"    \"libfoo.so*@0123456789ABCDEF0123456789abcdef01234567:+0x0\", \"parse\" ]; } ); } );\n";

START_TEST(test_offset_sites)
{
	struct policy_set *set = load_ok(offset_sites);
	const struct policy_site *s = set->policies[0].pools[0].sites;

	ck_assert_str_eq(s[0].object, "nginx");
	ck_assert_str_eq(s[0].function, "+0x4a2b1");
	ck_assert_ptr_null(s[0].build_id);
	ck_assert(s[0].by_offset);
	ck_assert_uint_eq(s[0].offset, 0x4a2b1);
	ck_assert_str_eq(s[1].object, "libfoo.so*");
	ck_assert_str_eq(s[1].build_id, "0123456789abcdef0123456789abcdef01234567");
	ck_assert_str_eq(s[1].function, "+0x0");
	ck_assert_uint_eq(s[1].offset, 0);
	ck_assert(!s[2].by_offset);
	ck_assert_ptr_null(s[2].object);
	ck_assert_str_eq(s[2].function, "parse");
	policy_set_free(set);
	assert_round_trip(offset_sites);
}
END_TEST

/* A wrapper may be a call by offset: kept as written, for resolve.c. */
static const char offset_wrappers[] =
	"version = 1;\n"
	"policies = ( { name = \"o\"; match = { exe = [ \"*/nginx\" ]; };\n"
	"  pools = ( { name = \"conf\"; sites = [ \"*\" ];\n"
	"    wrappers = [ \"ngx_palloc\", \"nginx@0123456789ABCDEF:+0x277b2\", \"nginx:+0x278c5\" ]; } ); } );\n";

START_TEST(test_offset_wrappers)
{
	struct policy_set *set = load_ok(offset_wrappers);
	const struct policy_pool *pool = &set->policies[0].pools[0];

	ck_assert_uint_eq(pool->n_wrappers, 3);
	ck_assert_str_eq(pool->wrappers[0], "ngx_palloc");
	ck_assert_str_eq(pool->wrappers[1], "nginx@0123456789ABCDEF:+0x277b2");
	ck_assert_str_eq(pool->wrappers[2], "nginx:+0x278c5");
	policy_set_free(set);
	assert_round_trip(offset_wrappers);
}
END_TEST

/* ---- malformed images: policy_image_validate refuses each ---- */

/* A policy with every kind of record: two pools, sites of both kinds, a
 * wrapper, every trigger kind. */
static const char image_conf[] =
	"version = 1;\n"
	"policies = ( { name = \"img\"; match = { exe = [ \"*/x\" ]; }; mode = \"audit\";\n"
	"  protection = \"seal\";\n"
	"  pools = ( { name = \"a\"; sites = [ \"lib*.so:parse_*\", \"x@0123456789abcdef:+0x10\" ];\n"
	"      wrappers = [ \"xmalloc\" ]; protect = [ \"on-call:listen\", \"after:2s\", \"manual\" ];\n"
	"      max_bytes = 4096; },\n"
	"    { name = \"b\"; sites = [ \"*\" ]; } ); } );\n";

struct img_fixture {
	uint64_t buf[1024];          /* aligned room for the image */
	size_t len;
	struct pimg_header *h;
};

static void img_load(struct img_fixture *f)
{
	struct pimg_header *img = compile_policy(image_conf, 0, &f->len);
	ck_assert_uint_le(f->len, sizeof(f->buf));
	memcpy(f->buf, img, f->len);
	free(img);
	f->h = (struct pimg_header *)f->buf;
}

static void assert_refused(const struct img_fixture *f, const char *what)
{
	ck_assert_msg(policy_image_validate(f->buf, f->len) == -EPROTO, "accepted: %s", what);
}

/* Records of the fixture, writable for the tests. */
#define F_POOL(f, i) ((struct pimg_pool *)(uintptr_t)pimg_pool((f)->h, (i)))
#define F_SITE(f, i) ((struct pimg_site *)(uintptr_t)&pimg_sites((f)->h)[i])
#define F_TRIG(f, i) ((struct pimg_trigger *)(uintptr_t)&pimg_triggers((f)->h)[i])
#define F_STRINGS(f) ((char *)(uintptr_t)pimg_strings((f)->h))

START_TEST(test_image_round_trip_fixture)
{
	struct img_fixture f;
	img_load(&f);
	ck_assert_int_eq(policy_image_validate(f.buf, f.len), 0);
	ck_assert_uint_eq(f.h->n_pools, 2);
	ck_assert_uint_eq(f.h->n_sites, 3);
	ck_assert_uint_eq(f.h->n_wrappers, 1);
	ck_assert_uint_eq(f.h->n_triggers, 3);
	ck_assert_int_eq(f.h->mode, POLICY_MODE_AUDIT);
	ck_assert_int_eq(f.h->protection, POLICY_PROT_SEAL);
	const struct pimg_pool *a = pimg_pool(f.h, 0);
	ck_assert_str_eq(pimg_str(f.h, pimg_pool_site(f.h, a, 1)->build_id), "0123456789abcdef");
	ck_assert_str_eq(pimg_pool_wrapper(f.h, a, 0), "xmalloc");
	ck_assert_uint_eq(pimg_pool_trigger(f.h, a, 1)->after_ns, 2 * SEC);
	ck_assert_ptr_null(pimg_str(f.h, pimg_pool_site(f.h, pimg_pool(f.h, 1), 0)->object));
}
END_TEST

/* Every length short of the whole, whether the header says so or not. */
START_TEST(test_image_truncated)
{
	struct img_fixture f;
	img_load(&f);
	size_t whole = f.len;
	for (size_t n = 0; n < whole; n++) {
		ck_assert_msg(policy_image_validate(f.buf, n) == -EPROTO, "%zu of %zu bytes accepted", n, whole);
		f.h->total_len = (uint32_t)n;
		ck_assert_msg(policy_image_validate(f.buf, n) == -EPROTO, "%zu bytes, total_len %zu, accepted",
			      n, n);
		f.h->total_len = (uint32_t)whole;
	}
	ck_assert_int_eq(policy_image_validate(f.buf, whole + 8), -EPROTO);
	ck_assert_int_eq(policy_image_validate(NULL, whole), -EPROTO);
	/* Misaligned: records would be read unaligned. */
	memmove((char *)f.buf + 4, f.buf, whole);
	ck_assert_int_eq(policy_image_validate((char *)f.buf + 4, whole), -EPROTO);
}
END_TEST

START_TEST(test_image_bad_header)
{
	struct img_fixture f;
#define HDR_CASE(stmt) do { img_load(&f); stmt; assert_refused(&f, #stmt); } while (0)
	HDR_CASE(f.h->magic ^= 1);
	HDR_CASE(f.h->version = PIMG_VERSION + 1);
	HDR_CASE(f.h->reserved = 1);
	HDR_CASE(f.h->mode = POLICY_MODE_LEARN + 1);
	HDR_CASE(f.h->protection = POLICY_PROT_SEAL + 1);
	HDR_CASE(f.h->report_burst = 0);
	HDR_CASE(f.h->report_interval_s = 0);
	HDR_CASE(f.h->report_interval_s = 86401);
	HDR_CASE(f.h->n_pools = 0);
	HDR_CASE(f.h->n_pools = PIMG_POOLS_MAX + 1);
	HDR_CASE(f.h->n_pools = UINT32_MAX);
	HDR_CASE(f.h->n_sites = UINT32_MAX);
	HDR_CASE(f.h->n_sites += 1);
	HDR_CASE(f.h->n_wrappers -= 1);
	HDR_CASE(f.h->n_triggers += 1);
	HDR_CASE(f.h->strings_len += 8);
	HDR_CASE(f.h->strings_len = 0);
	HDR_CASE(f.h->name.off = PIMG_NONE);
	HDR_CASE(f.h->name.off = f.h->strings_len);
	HDR_CASE(f.h->name.off = UINT32_MAX - 1);
	HDR_CASE(f.h->name.len = UINT32_MAX);
	HDR_CASE(f.h->name.len += 1);            /* the NUL inside the string */
	HDR_CASE(f.h->name.len = 0);
#undef HDR_CASE
}
END_TEST

START_TEST(test_image_bad_records)
{
	struct img_fixture f;
#define REC_CASE(stmt) do { img_load(&f); stmt; assert_refused(&f, #stmt); } while (0)
	/* Slices: out of order, overlapping, past the end, empty. */
	REC_CASE(F_POOL(&f, 1)->first_site = 0);
	REC_CASE(F_POOL(&f, 0)->n_sites = 3);
	REC_CASE(F_POOL(&f, 1)->n_sites = 2);
	REC_CASE(F_POOL(&f, 1)->n_sites = UINT32_MAX);
	REC_CASE(F_POOL(&f, 0)->n_sites = 0; F_POOL(&f, 1)->first_site = 0; F_POOL(&f, 1)->n_sites = 3);
	REC_CASE(F_POOL(&f, 0)->n_wrappers = 2);
	REC_CASE(F_POOL(&f, 1)->first_wrapper = 0);
	REC_CASE(F_POOL(&f, 0)->n_triggers = UINT32_MAX);
	REC_CASE(F_POOL(&f, 1)->first_trigger = 2);
	REC_CASE(F_POOL(&f, 0)->max_bytes = (uint64_t)INT64_MAX + 1);
	REC_CASE(F_POOL(&f, 0)->take = POLICY_TAKE_UNTIL_TRIGGER + 1);
	REC_CASE(F_POOL(&f, 0)->roles = 1u << 4);           /* past the deepest role */
	/* Names: duplicate, bad characters, absent. */
	REC_CASE(F_POOL(&f, 1)->name = F_POOL(&f, 0)->name);
	REC_CASE(F_POOL(&f, 0)->name = pimg_pool_site(f.h, pimg_pool(f.h, 0), 0)->function);
	REC_CASE(F_POOL(&f, 0)->name.off = PIMG_NONE; F_POOL(&f, 0)->name.len = 0);
	/* Sites: flags, reserved, offsets of sites that are not, canonical text. */
	REC_CASE(F_SITE(&f, 0)->flags = 2);
	REC_CASE(F_SITE(&f, 0)->reserved = 1);
	REC_CASE(F_SITE(&f, 0)->offset = 1);
	REC_CASE(F_SITE(&f, 0)->build_id = F_SITE(&f, 1)->build_id);
	REC_CASE(F_SITE(&f, 0)->function.off = PIMG_NONE; F_SITE(&f, 0)->function.len = 0);
	REC_CASE(F_SITE(&f, 0)->object.len = 0);
	REC_CASE(F_SITE(&f, 0)->object.off = PIMG_NONE);     /* absent with a length */
	REC_CASE(F_SITE(&f, 1)->offset = 0x11);
	REC_CASE(F_SITE(&f, 1)->object.off = PIMG_NONE; F_SITE(&f, 1)->object.len = 0);
	REC_CASE(F_SITE(&f, 1)->build_id.len -= 1);          /* odd, and the NUL misses */
	REC_CASE(F_SITE(&f, 1)->flags = 0);
	REC_CASE(F_STRINGS(&f)[F_SITE(&f, 1)->build_id.off] = 'A');
	REC_CASE(F_STRINGS(&f)[F_SITE(&f, 1)->build_id.off] = 'g');
	/* Triggers: every enum and the fields that go with each kind. */
	REC_CASE(F_TRIG(&f, 0)->kind = POLICY_TRIGGER_ON_WAIT + 1);
	REC_CASE(F_TRIG(&f, 0)->call = POLICY_CALL__COUNT);
	REC_CASE(F_TRIG(&f, 0)->after_ns = 1);
	REC_CASE(F_TRIG(&f, 1)->after_ns = 0);
	REC_CASE(F_TRIG(&f, 1)->after_ns = UINT64_C(24) * 3600 * SEC + 1);
	REC_CASE(F_TRIG(&f, 1)->call = 1);
	REC_CASE(F_TRIG(&f, 2)->call = 1);
	REC_CASE(F_TRIG(&f, 2)->after_ns = 1);
	/* The string table: a NUL missing, a NUL or a control character inside. */
	REC_CASE(F_STRINGS(&f)[f.h->name.off + f.h->name.len] = 'x');
	REC_CASE(F_STRINGS(&f)[f.h->strings_len - 1] = 'x');
	REC_CASE(F_STRINGS(&f)[pimg_pool(f.h, 0)->name.off] = '\0');
	REC_CASE(F_STRINGS(&f)[F_SITE(&f, 0)->function.off] = '\n');
	REC_CASE(F_STRINGS(&f)[F_SITE(&f, 0)->function.off] = '\0');
	REC_CASE(((struct pimg_wrapper *)(uintptr_t)pimg_wrappers(f.h))[0].function.off = f.h->strings_len);
#undef REC_CASE
}
END_TEST

/* Compile: a model the parser cannot make is refused, so is a too large one. */
START_TEST(test_image_compile_refusals)
{
	struct policy_set *set = load_ok(image_conf);
	struct policy *p = &set->policies[0];
	void *img = NULL;
	size_t len = 0;

	p->mode = (enum policy_mode)7;
	ck_assert_int_eq(policy_image_compile(set, p, &img, &len), -EINVAL);
	p->mode = POLICY_MODE_ENFORCE;
	p->pools[0].triggers[0].call = POLICY_CALL__COUNT;
	ck_assert_int_eq(policy_image_compile(set, p, &img, &len), -EINVAL);
	p->pools[0].triggers[0].call = POLICY_CALL_LISTEN;
	size_t n_pools = p->n_pools;
	p->n_pools = PIMG_POOLS_MAX + 1;
	ck_assert_int_eq(policy_image_compile(set, p, &img, &len), -E2BIG);
	p->n_pools = n_pools;
	ck_assert_int_eq(policy_image_compile(set, NULL, &img, &len), -EINVAL);
	ck_assert_ptr_null(img);
	ck_assert_int_eq(policy_image_compile(set, p, &img, &len), 0);
	free(img);
	policy_set_free(set);
}
END_TEST

/* ---- durations and call names ---- */

START_TEST(test_duration_valid)
{
	static const struct { const char *s; uint64_t ns; } ok[] = {
		{ "1ms", MS }, { "250ms", 250 * MS }, { "2s", 2 * SEC }, { "1m", 60 * SEC },
		{ "1h", 3600 * SEC }, { "24h", 86400 * SEC }, { "1440m", 86400 * SEC },
		{ "86400000ms", 86400 * SEC }, { "007s", 7 * SEC },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t ns = 0;
		ck_assert_msg(policy_parse_duration(ok[i].s, &ns) == 0, "%s refused", ok[i].s);
		ck_assert_uint_eq(ns, ok[i].ns);
	}
}
END_TEST

START_TEST(test_duration_invalid)
{
	static const char *const bad[] = {
		"", "s", "0s", "0ms", "25h", "86401s", "1441m", "86400001ms", "2", "2 s", " 2s",
		"-1s", "+1s", "1.5s", "2S", "2sec", "1hm", "1d", "0x10s",
		"18446744073709551616ms", "99999999999999999999999h", "18446744073709551615h",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t ns = 12345;
		ck_assert_msg(policy_parse_duration(bad[i], &ns) == -EINVAL, "%s accepted", bad[i]);
		ck_assert_uint_eq(ns, 12345);   /* written only on success */
	}
	ck_assert_int_eq(policy_parse_duration(NULL, NULL), -EINVAL);
}
END_TEST

START_TEST(test_call_names)
{
	for (int c = 0; c < POLICY_CALL__COUNT; c++) {
		const char *name = policy_call_name((enum policy_call)c);
		ck_assert_ptr_nonnull(name);
		ck_assert_int_eq(policy_call_from_name(name), c);
	}
	ck_assert_str_eq(policy_call_name(POLICY_CALL_PTHREAD_CREATE), "pthread_create");
	ck_assert_ptr_null(policy_call_name(POLICY_CALL__COUNT));
	ck_assert_ptr_null(policy_call_name((enum policy_call)-1));
	ck_assert_int_eq(policy_call_from_name("open"), -1);
	ck_assert_int_eq(policy_call_from_name(""), -1);
	ck_assert_int_eq(policy_call_from_name(NULL), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy");
	TCase *tc;

	tc = tcase_create("refusals");
	tcase_add_unchecked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_loop_test(tc, test_refused, 0, (int)(sizeof(refusals) / sizeof(refusals[0])));
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_not_a_regular_file);
	tcase_add_test(tc, test_file_too_large);
	tcase_add_test(tc, test_nul_byte);
	tcase_add_test(tc, test_no_error_buffer);
	tcase_add_test(tc, test_string_names_itself);
	suite_add_tcase(s, tc);

	tc = tcase_create("valid");
	tcase_add_unchecked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_spec_example);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_take_on_wait);
	tcase_add_test(tc, test_roles);
	tcase_add_test(tc, test_no_policies);
	tcase_add_test(tc, test_all_options);
	tcase_add_test(tc, test_limits_inclusive);
	tcase_add_test(tc, test_comments_and_strings_not_scanned);
	tcase_add_test(tc, test_shipped_conf);
	suite_add_tcase(s, tc);

	tc = tcase_create("match");
	tcase_add_unchecked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_match_exe);
	tcase_add_test(tc, test_match_comm);
	tcase_add_test(tc, test_match_uid);
	tcase_add_test(tc, test_match_all_criteria);
	tcase_add_test(tc, test_match_first_wins);
	tcase_add_test(tc, test_match_no_criterion);
	suite_add_tcase(s, tc);

	tc = tcase_create("image");
	tcase_add_unchecked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_round_trip_spec_example);
	tcase_add_test(tc, test_round_trip_all_options);
	tcase_add_test(tc, test_round_trip_match_policies);
	tcase_add_test(tc, test_offset_sites);
	tcase_add_test(tc, test_offset_wrappers);
	tcase_add_test(tc, test_image_round_trip_fixture);
	tcase_add_test(tc, test_image_truncated);
	tcase_add_test(tc, test_image_bad_header);
	tcase_add_test(tc, test_image_bad_records);
	tcase_add_test(tc, test_image_compile_refusals);
	suite_add_tcase(s, tc);

	tc = tcase_create("durations");
	tcase_add_test(tc, test_duration_valid);
	tcase_add_test(tc, test_duration_invalid);
	tcase_add_test(tc, test_call_names);
	suite_add_tcase(s, tc);

	return test_run_suite(s);
}
