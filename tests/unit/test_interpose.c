/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_interpose.c - the interposition as a user meets it: an unmodified
 * program (tests/progs/ip_*.c, built -O0 -g, not stripped) is run with
 * LD_PRELOAD=libpmalloc_shim.so and a policy file written here, and what it
 * prints, its stderr and how it ends are checked.  One test per behaviour:
 * sites (static, in a dlopen'ed library, in a library loaded where another
 * was, through a wrapper, strdup), the allocator family on pool objects,
 * max_bytes, errno, each kind of trigger, fork, threads, the program's own
 * SIGSEGV handlers, audit mode (with a store across two pages, with the
 * program's own SIGTRAP disposition), broken and non-matching policies.
 *
 * Crash cases are asserted on the terminating signal and on the exact
 * report line (regex.h, with the reported address checked against the
 * object and offset).  Programs run by fork + execve with a fixed
 * environment (no daemon: PMALLOC_SOCKET names a path that does not exist),
 * stdout and stderr read through pipes with a deadline.
 *
 * PMALLOC_BUILD names the build directory (make check sets it; default
 * "build").
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAX (256 * 1024)
#define RUN_DEADLINE_MS 5000

/* ---- the per-test scratch directory and policy file ---- */

static char scratch[PATH_MAX];
static char conf_path[PATH_MAX + 32];
static char no_socket[PATH_MAX + 32];

/* Unchecked fixture: runs in the runner's process once per TCase, so the
 * directory goes away even when a test fails (Check ends a failed test's
 * process without running its teardown or atexit handlers).  The tests of a
 * TCase run one after another, each writing its own policy file. */
static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(scratch, sizeof(scratch), "%s/pmalloc-ip.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(scratch));
	snprintf(conf_path, sizeof(conf_path), "%s/pmalloc.conf", scratch);
	snprintf(no_socket, sizeof(no_socket), "%s/no-daemon.sock", scratch);
}

static void teardown(void)
{
	unlink(conf_path);
	rmdir(scratch);
}

static void write_conf(const char *text)
{
	FILE *f = fopen(conf_path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* A policy named "ip" for program prog with one pool; pool_body is what
 * goes inside the pool's braces after its name. */
static void write_policy(const char *prog, const char *extra, const char *pool, const char *pool_body)
{
	char text[4096];
	snprintf(text, sizeof(text),
		 "version = 1;\n"
		 "policies = (\n"
		 "  { name = \"ip\"; match = { exe = [ \"*/%s\" ]; };%s\n"
		 "    pools = ( { name = \"%s\"; %s } );\n"
		 "  }\n"
		 ");\n",
		 prog, extra ? extra : "", pool, pool_body);
	write_conf(text);
}

/* ---- running a program ---- */

static const char *build_dir(void)
{
	static char dir[PATH_MAX];
	if (!dir[0]) {
		const char *b = getenv("PMALLOC_BUILD");
		if (!b || !*b)
			b = "build";
		ck_assert_msg(realpath(b, dir) != NULL, "build directory %s: %s", b, strerror(errno));
	}
	return dir;
}

/* The path of rel in the build directory, which must exist.  Allocated and
 * never freed: each test is a short-lived process of its own. */
static const char *built(const char *rel)
{
	char *p;
	ck_assert_int_ge(asprintf(&p, "%s/%s", build_dir(), rel), 0);
	ck_assert_msg(access(p, F_OK) == 0, "%s is missing: run make %s", p, rel);
	return p;
}

struct run {
	pid_t pid;
	int status;
	char out[OUT_MAX];
	char err[OUT_MAX];
	size_t out_len, err_len;
};

static struct run R;      /* one result at a time; big, so not on the stack */

/* Append "NAME=VALUE" to env, replacing an entry of the same NAME; a value
 * of NULL (given as "NAME") removes it. */
static void env_set(const char **env, size_t *n, const char *entry)
{
	size_t len = strcspn(entry, "=");
	for (size_t i = 0; i < *n; i++)
		if (strncmp(env[i], entry, len) == 0 && env[i][len] == '=') {
			env[i] = env[--*n];
			break;
		}
	if (entry[len] == '=')
		env[(*n)++] = entry;
	env[*n] = NULL;
}

static void drain(int *fd, char *buf, size_t *len)
{
	char tmp[4096];
	ssize_t k = read(*fd, tmp, sizeof(tmp));
	if (k > 0) {
		size_t room = OUT_MAX - 1 - *len;
		size_t take = (size_t)k < room ? (size_t)k : room;
		memcpy(buf + *len, tmp, take);
		*len += take;
		buf[*len] = '\0';
	} else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
		close(*fd);
		*fd = -1;
	}
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Run build/progs/PROG with args (ended by a typed NULL, which run() and
 * run_env() add) under the shim and the scratch policy file; env_extra ("NAME=VALUE", or "NAME" to drop it) may
 * change the environment.  Fills R.
 */
static void run_args(const char *const *env_extra, const char *prog, ...)
{
	char *argv[16];
	size_t argc = 0;
	char rel[PATH_MAX], preload[3 * PATH_MAX], conf[2 * PATH_MAX], sock[2 * PATH_MAX];
	snprintf(rel, sizeof(rel), "progs/%s", prog);
	argv[argc++] = strdup(built(rel));
	va_list ap;
	va_start(ap, prog);
	for (const char *a; (a = va_arg(ap, const char *)) && argc < 15;)
		argv[argc++] = strdup(a);
	va_end(ap);
	argv[argc] = NULL;

	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", built("libpmalloc_shim.so"));
	snprintf(conf, sizeof(conf), "PMALLOC_CONF=%s", conf_path);
	snprintf(sock, sizeof(sock), "PMALLOC_SOCKET=%s", no_socket);
	const char *env[32] = { 0 };
	char *envp[32];
	size_t n = 0;
	env_set(env, &n, "PATH=/usr/local/bin:/usr/bin:/bin");
	env_set(env, &n, "LC_ALL=C");
	env_set(env, &n, preload);
	env_set(env, &n, conf);
	env_set(env, &n, sock);
	for (size_t i = 0; env_extra && env_extra[i] && n < 30; i++)
		env_set(env, &n, env_extra[i]);

	for (size_t i = 0; i <= n; i++)
		envp[i] = env[i] ? strdup(env[i]) : NULL;

	int po[2], pe[2];
	ck_assert_int_eq(pipe2(po, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(pe, O_CLOEXEC), 0);
	memset(&R, 0, sizeof(R));
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* No core files: the crashes are expected. */
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	R.pid = pid;
	int fo = po[0], fe = pe[0];
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool timed_out = false;
	while (fo >= 0 || fe >= 0) {
		long left = RUN_DEADLINE_MS - ms_since(&t0);
		if (left <= 0) {
			timed_out = true;
			kill(pid, SIGKILL);
			break;
		}
		struct pollfd p[2] = { { fo, POLLIN, 0 }, { fe, POLLIN, 0 } };
		int r = poll(p, 2, (int)left);
		if (r < 0 && errno != EINTR)
			break;
		if (fo >= 0 && p[0].revents)
			drain(&fo, R.out, &R.out_len);
		if (fe >= 0 && p[1].revents)
			drain(&fe, R.err, &R.err_len);
	}
	if (fo >= 0)
		close(fo);
	if (fe >= 0)
		close(fe);
	ck_assert_int_eq(waitpid(pid, &R.status, 0), pid);
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	for (size_t i = 0; i < n; i++)
		free(envp[i]);
	ck_assert_msg(!timed_out, "%s did not finish within %d ms\nstdout:\n%s\nstderr:\n%s", prog,
		      RUN_DEADLINE_MS, R.out, R.err);
}

/* The argument lists end with a typed NULL, added here. */
#define run_env(...) run_args(__VA_ARGS__, (const char *)NULL)
#define run(...) run_args(NULL, __VA_ARGS__, (const char *)NULL)

/* ---- assertions ---- */

/* Appended to a failure message: what the program printed. */
#define SHOW "\n--- stdout ---\n%s--- stderr ---\n%s--------------"
#define OUTPUT R.out, R.err

static void expect_exit(int code)
{
	ck_assert_msg(WIFEXITED(R.status) && WEXITSTATUS(R.status) == code,
		      "expected exit %d, got %s %d" SHOW, code,
		      WIFEXITED(R.status) ? "exit" : "signal",
		      WIFEXITED(R.status) ? WEXITSTATUS(R.status) : WTERMSIG(R.status), OUTPUT);
}

static void expect_signal(int sig)
{
	ck_assert_msg(WIFSIGNALED(R.status) && WTERMSIG(R.status) == sig,
		      "expected death by signal %d, got %s %d" SHOW, sig,
		      WIFEXITED(R.status) ? "exit" : "signal",
		      WIFEXITED(R.status) ? WEXITSTATUS(R.status) : WTERMSIG(R.status), OUTPUT);
}

static void expect_stdout(const char *want)
{
	ck_assert_msg(strcmp(R.out, want) == 0, "stdout differs; expected:\n%s" SHOW, want, OUTPUT);
}

static void expect_stderr(const char *want)
{
	ck_assert_msg(strcmp(R.err, want) == 0, "stderr differs; expected:\n%s" SHOW, want, OUTPUT);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Line i (0-based) of text into buf; false when there is none. */
static bool line_at(const char *text, size_t i, char *buf, size_t len)
{
	for (; i > 0; i--) {
		text = strchr(text, '\n');
		if (!text)
			return false;
		text++;
	}
	if (!*text)
		return false;
	size_t n = strcspn(text, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(buf, text, n);
	buf[n] = '\0';
	return true;
}

/* Does the whole of line match the extended regex re?  Captures into m. */
static bool line_matches(const char *line, const char *re, regmatch_t *m, size_t nm)
{
	regex_t rx;
	int r = regcomp(&rx, re, REG_EXTENDED);
	ck_assert_msg(r == 0, "bad regex %s", re);
	r = regexec(&rx, line, nm, m, 0);
	regfree(&rx);
	return r == 0;
}

/* How many lines of text match re. */
static size_t count_matching(const char *text, const char *re)
{
	char line[2048];
	size_t n = 0;
	for (size_t i = 0; line_at(text, i, line, sizeof(line)); i++)
		n += line_matches(line, re, NULL, 0);
	return n;
}

/* s with the regex metacharacters escaped. */
static const char *re_quote(const char *s)
{
	static char buf[2][PATH_MAX * 2];
	static int next;
	char *o = buf[next++ % 2], *p = o;
	for (; *s && p < o + sizeof(buf[0]) - 2; s++) {
		if (strchr(".[]()*+?{}|^$\\", *s))
			*p++ = '\\';
		*p++ = *s;
	}
	*p = '\0';
	return o;
}

struct report {
	pid_t pid;
	const char *pool;
	unsigned long offset;
	unsigned long size;          /* object size */
	const char *site;            /* function that allocated it */
	const char *prog;            /* module of the faulting instruction */
	const char *verdict;         /* "enforce: killed by SIGSEGV" or "audit: write allowed" */
};

/* Line i of stderr is the shim's report for rep, and its address is the
 * object's start plus the offset. */
static void expect_report_line(size_t i, const struct report *rep)
{
	char re[1024], line[2048];
	snprintf(re, sizeof(re),
		 "^pmalloc\\[%d\\]: write to protected pool \"%s\" at 0x([0-9a-f]+): offset %lu in %lu-byte "
		 "object 0x([0-9a-f]+) allocated at %s\\+0x[0-9a-f]+; ip 0x[0-9a-f]+ \\(%s\\+0x[0-9a-f]+\\); "
		 "policy \"ip\"; %s$",
		 (int)rep->pid, rep->pool, rep->offset, rep->size, rep->site, rep->prog, rep->verdict);
	ck_assert_msg(line_at(R.err, i, line, sizeof(line)), "no stderr line %zu for the report" SHOW, i, OUTPUT);
	regmatch_t m[3];
	ck_assert_msg(line_matches(line, re, m, 3), "stderr line %zu is not the report\n  want /%s/\n  got  %s" SHOW,
		      i, re, line, OUTPUT);
	unsigned long addr = strtoul(line + m[1].rm_so, NULL, 16);
	unsigned long obj = strtoul(line + m[2].rm_so, NULL, 16);
	ck_assert_msg(addr == obj + rep->offset, "address %#lx is not object %#lx + %lu", addr, obj, rep->offset);
}

/* stderr is exactly the one report line. */
static void expect_only_report(const struct report *rep)
{
	ck_assert_msg(count_lines(R.err) == 1 && R.err[R.err_len - 1] == '\n',
		      "expected exactly one line on stderr" SHOW, OUTPUT);
	expect_report_line(0, rep);
}

/* Line i of stderr is audit mode's count at exit of the writes it let
 * through unreported (a site is reported once per process). */
static void expect_audit_count_line(size_t i, unsigned writes, unsigned sites)
{
	char want[256], line[2048];
	snprintf(want, sizeof(want),
		 "pmalloc[%d]: audit: %u later writes of %u sites reported once were let through unreported",
		 (int)R.pid, writes, sites);
	ck_assert_msg(line_at(R.err, i, line, sizeof(line)), "no stderr line %zu for the count" SHOW, i, OUTPUT);
	ck_assert_msg(strcmp(line, want) == 0, "stderr line %zu is not the count\n  want %s\n  got  %s" SHOW, i,
		      want, line, OUTPUT);
}

#define ENFORCE "enforce: killed by SIGSEGV"
#define AUDIT "audit: write allowed"
#define LISTEN "protect = [ \"on-call:listen\" ]; max_bytes = 16777216;"

/* ---- sites ---- */

START_TEST(test_static_function_is_a_site)
{
	write_policy("ip_static", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run("ip_static");
	expect_exit(0);
	expect_stdout("before listen: secret protected 0\n"
		      "after listen: secret protected 1, scratch protected 0\n"
		      "secret is secret-0123456789\n");
	expect_stderr("");

	run("ip_static", "write");
	expect_signal(SIGSEGV);
	expect_stdout("before listen: secret protected 0\n"
		      "after listen: secret protected 1, scratch protected 0\n");
	expect_only_report(&(struct report){ R.pid, "secrets", 5, 32, "make_secret", "ip_static", ENFORCE });
}
END_TEST

START_TEST(test_site_in_dlopened_library)
{
	const char *plugin = built("progs/libip_plugin.so");
	write_policy("ip_dlopen", NULL, "plugin", "sites = [ \"libip_plugin.so*:plugin_init\" ]; " LISTEN);
	run("ip_dlopen", plugin);
	expect_exit(0);
	expect_stdout("plugin_init: struct 1, name 1, table 1\n"
		      "plugin_scratch 0, main 0\n"
		      "name alpha, table[3] 9\n"
		      "name is now alpha\n");
	expect_stderr("");

	run("ip_dlopen", plugin, "write");
	expect_signal(SIGSEGV);
	expect_only_report(&(struct report){ R.pid, "plugin", 1, 16, "plugin_init", "ip_dlopen", ENFORCE });
}
END_TEST

/* Routing decisions belong to the library that was loaded, not to its
 * addresses: a library unloaded and another loaded in its place (PAM, NSS,
 * module reloads) must each be routed by their own rules. */
START_TEST(test_library_loaded_where_a_site_library_was)
{
	const char *plugin = built("progs/libip_plugin.so"), *twin = built("progs/libip_twin.so");
	write_policy("ip_reload", NULL, "plugin",
		     "sites = [ \"libip_plugin.so*:plugin_init\" ]; protect = [ \"manual\" ]; max_bytes = 16777216;");
	run("ip_reload", plugin, plugin);
	expect_exit(0);
	expect_stdout("libip_plugin.so: objects protected 1 1 1\n"
		      "libip_plugin.so (same address): objects protected 1 1 1\n");

	/* An unnamed library where the site library was: its objects are heap. */
	run("ip_reload", plugin, twin);
	expect_exit(0);
	expect_stdout("libip_plugin.so: objects protected 1 1 1\n"
		      "libip_twin.so (same address): objects protected 0 0 0\n");

	/* The site library where an unnamed one was: its objects are pool. */
	run("ip_reload", twin, plugin);
	expect_exit(0);
	expect_stdout("libip_twin.so: objects protected 0 0 0\n"
		      "libip_plugin.so (same address): objects protected 1 1 1\n");
	expect_stderr("");
}
END_TEST

START_TEST(test_wrapper_charges_its_caller)
{
	write_policy("ip_wrapper", NULL, "cfg", "sites = [ \"load_config\" ]; wrappers = [ \"xmalloc\" ]; " LISTEN);
	run("ip_wrapper");
	expect_exit(0);
	expect_stdout("config 1, request 0, late request 0\nconfig: port=8080 | GET /\n");
	expect_stderr("");

	/* Another caller's xmalloc() object is ordinary heap. */
	run("ip_wrapper", "write-request");
	expect_exit(0);
	expect_stdout("config 1, request 0, late request 0\nconfig: port=8080 | GPT /\n");
	expect_stderr("");

	run("ip_wrapper", "write-config");
	expect_signal(SIGSEGV);
	expect_only_report(&(struct report){ R.pid, "cfg", 8, 48, "load_config", "ip_wrapper", ENFORCE });
}
END_TEST

/* Wrappers several levels deep (nginx's region pools, redis's zmalloc and
 * sds), named by function: the first caller outside them is the site. */
#define WRAPCHAIN_WRAPPERS "wrappers = [ \"ngx_palloc\", \"ngx_palloc_block\", \"ngx_palloc_large\", " \
	"\"ngx_memalign\", \"zmalloc\", \"ztrymalloc_usable\", \"sdsnewlen\", \"s_malloc_usable\" ]; "
#define WRAPCHAIN_SITES "sites = [ \"load_conf\", \"load_commands\", \"load_names\" ]; "
START_TEST(test_wrapper_chains)
{
	write_policy("ip_wrapchain", NULL, "conf", WRAPCHAIN_SITES WRAPCHAIN_WRAPPERS LISTEN);
	run("ip_wrapchain");
	expect_exit(0);
	expect_stdout("conf 1 1 1 1\nrequest 0 0 0 0\nlate conf 1 1 1 1\nlate request 0 0 0 0\n"
		      "server_name learn get localhost\n");
	expect_stderr("");

	run("ip_wrapchain", "write-request");
	expect_exit(0);
	expect_stderr("");

	run("ip_wrapchain", "write-conf");
	expect_signal(SIGSEGV);
	expect_only_report(&(struct report){ R.pid, "conf", 0, 16, "load_names", "ip_wrapchain", ENFORCE });

	/* take = "until-trigger": after the first listen(), the heap. */
	write_policy("ip_wrapchain", NULL, "conf", WRAPCHAIN_SITES WRAPCHAIN_WRAPPERS
		     "take = \"until-trigger\"; " LISTEN);
	run("ip_wrapchain");
	expect_exit(0);
	expect_stdout("conf 1 1 1 1\nrequest 0 0 0 0\nlate conf 0 0 0 0\nlate request 0 0 0 0\n"
		      "server_name learn get localhost\n");
	expect_stderr("");
}
END_TEST

/* Many allocations through wrappers, alternating between a site and a
 * function no rule names: after the unwinder confirmed a wrapper call's
 * unwind rule, its caller is read off the stack (frames.c); a wrapper
 * whose frame varies (a variable-length array) is unwound every time.
 * Every object is charged to its own caller either way. */
START_TEST(test_wrapper_callers_read_off_the_stack)
{
	write_policy("ip_wrapframes", NULL, "conf",
		     "sites = [ \"load_conf\" ]; wrappers = [ \"xalloc\", \"xalloc_outer\", \"valloc_pad\" ]; " LISTEN);
	run("ip_wrapframes");
	expect_exit(0);
	expect_stdout("conf 40 40\nrequest 0 0\n");
	expect_stderr("");
}
END_TEST

START_TEST(test_strdup_and_strndup_charge_their_caller)
{
	static const char *out = "strdup 1, strndup 1, main strdup 0, main strndup 0\n"
				 "\"administrator\" \"localhost\" (9) \"administrator\" \"loca\"\n";
	write_policy("ip_strdup", NULL, "names", "sites = [ \"load_names\" ]; " LISTEN);
	run("ip_strdup");
	expect_exit(0);
	char want[512];
	snprintf(want, sizeof(want), "%sdone\n", out);
	expect_stdout(want);
	expect_stderr("");

	run("ip_strdup", "write-strdup");
	expect_signal(SIGSEGV);
	expect_stdout(out);
	expect_only_report(&(struct report){ R.pid, "names", 2, 16, "load_names", "ip_strdup", ENFORCE });

	run("ip_strdup", "write-strndup");
	expect_signal(SIGSEGV);
	expect_only_report(&(struct report){ R.pid, "names", 9, 16, "load_names", "ip_strdup", ENFORCE });
}
END_TEST

START_TEST(test_rule_matching_nothing_is_reported)
{
	write_policy("ip_static", NULL, "secrets",
		     "sites = [ \"make_secret\", \"no_such_function_xyz\" ]; wrappers = [ \"no_such_wrapper\" ]; " LISTEN);
	run_env((const char *[]){ "PMALLOC_DEBUG=1", NULL }, "ip_static");
	expect_exit(0);
	expect_stdout("before listen: secret protected 0\n"
		      "after listen: secret protected 1, scratch protected 0\n"
		      "secret is secret-0123456789\n");
	char re[256];
	snprintf(re, sizeof(re), "^pmalloc\\[%d\\]: site rule \"no_such_function_xyz\" matches no function", (int)R.pid);
	ck_assert_msg(count_matching(R.err, re) == 1, "the unmatched site rule is not reported once" SHOW, OUTPUT);
	snprintf(re, sizeof(re), "^pmalloc\\[%d\\]: wrapper rule \"no_such_wrapper\" matches no function", (int)R.pid);
	ck_assert_msg(count_matching(R.err, re) == 1, "the unmatched wrapper rule is not reported once" SHOW, OUTPUT);
	ck_assert_msg(count_matching(R.err, "rule \"make_secret\" matches no") == 0,
		      "a rule that matched is reported as matching nothing" SHOW, OUTPUT);

	/* Without PMALLOC_DEBUG, not a word. */
	run("ip_static");
	expect_exit(0);
	expect_stderr("");
}
END_TEST

/* ---- the allocator family on pool objects ---- */

START_TEST(test_realloc_and_free_of_pool_objects)
{
	write_policy("ip_realloc", NULL, "cfg", "sites = [ \"cfg_alloc\", \"cfg_resize\", \"cfg_resize_array\" ]; " LISTEN);
	run("ip_realloc");
	expect_exit(0);
	expect_stdout("usable size of a 10-byte pool object: 16\n"
		      "after realloc to 100: usable 112\n"
		      "free before protect: accepted, memory not reused\n"
		      "realloc to 0 before protect: NULL\n"
		      "reallocarray overflow: NULL, errno ENOMEM\n"
		      "protected: a3 1, g 1, arr2 1, b 1, heap copy 0\n"
		      "usable size of a protected 30-byte object: 32\n"
		      "free after protect: accepted\n"
		      "realloc (not a site) of a protected object: moved, copy protected 0, old still protected 1 and intact 1\n"
		      "realloc (site) of a protected object: moved, copy protected 0, writable\n"
		      "realloc to 0 after protect: NULL, old intact 1\n"
		      "after a second listen: site copy protected 1, heap copy protected 0\n"
		      "ok\n");
	expect_stderr("");
}
END_TEST

START_TEST(test_calloc_is_zeroed)
{
	write_policy("ip_calloc", NULL, "cfg", "sites = [ \"cfg_dirty\", \"cfg_calloc\" ]; " LISTEN);
	run("ip_calloc");
	expect_exit(0);
	expect_stdout("calloc(1, 1): zeroed\n"
		      "calloc(3, 7): zeroed\n"
		      "calloc(100, 40): zeroed\n"
		      "calloc(1, 4096): zeroed\n"
		      "calloc(1, 300000): zeroed\n"
		      "calloc overflow: NULL, errno ENOMEM\n"
		      "protected: 1 1 1 1 1\n");
	expect_stderr("");
}
END_TEST

START_TEST(test_aligned_allocators_from_a_site)
{
	write_policy("ip_align", NULL, "cfg", "sites = [ \"make_aligned\" ]; " LISTEN);
	run("ip_align");
	expect_exit(0);
	expect_stdout("posix_memalign(24): EINVAL\n"
		      "posix_memalign(64, 100): aligned yes, usable enough, protected 1\n"
		      "aligned_alloc(256, 512): aligned yes, usable enough, protected 1\n"
		      "memalign(4096, 10): aligned yes, usable enough, protected 1\n"
		      "valloc(4096, 100): aligned yes, usable enough, protected 1\n"
		      "pvalloc(4096, 4096): aligned yes, usable enough, protected 1\n"
		      "posix_memalign(32, 0): aligned yes, usable enough, protected 1\n"
		      "aligned_alloc(65536, 16): aligned yes, usable enough, protected 1\n"
		      "memalign(16, 24): aligned yes, usable enough, protected 1\n");
	expect_stderr("");
}
END_TEST

/* An object bigger than the pool's next span but below the dedicated-span
 * threshold must still get room for all of itself. */
START_TEST(test_object_larger_than_first_span)
{
	write_policy("ip_large", NULL, "tables", "sites = [ \"make_table\", \"make_aligned_table\" ]; " LISTEN);
	run("ip_large");
	expect_exit(0);
	expect_stdout("table of 100000 bytes\n"
		      "table of 70000 bytes aligned to 65536: aligned\n"
		      "table of 200000 bytes\n"
		      "intact: 1 1 1\n"
		      "protected: 1 1 1\n");
	expect_stderr("");
}
END_TEST

START_TEST(test_max_bytes_overflows_to_heap)
{
	write_policy("ip_maxbytes", NULL, "cache",
		     "sites = [ \"cache_entry\" ]; protect = [ \"on-call:listen\" ]; max_bytes = 10000;");
	run_env((const char *[]){ "PMALLOC_DEBUG=1", NULL }, "ip_maxbytes");
	expect_exit(0);
	char line[512];
	regmatch_t m[3];
	ck_assert(line_at(R.out, 0, line, sizeof(line)));
	ck_assert_msg(line_matches(line, "^pool entries ([0-9]+) \\(([0-9]+) bytes\\), heap entries [0-9]+; "
				   "pool first: yes; intact: yes$", m, 3), "unexpected summary" SHOW, OUTPUT);
	long entries = strtol(line + m[1].rm_so, NULL, 10);
	ck_assert_msg(entries >= 1 && entries * 1000 <= 10000, "%ld entries of 1000 bytes under a 10000-byte cap", entries);
	ck_assert(line_at(R.out, 1, line, sizeof(line)));
	ck_assert_str_eq(line, "late entry protected 0");
	char re[256];
	snprintf(re, sizeof(re),
		 "^pmalloc\\[%d\\]: pool \"cache\" reached max_bytes: further allocations go to the heap$", (int)R.pid);
	ck_assert_msg(count_matching(R.err, re) == 1, "the cap is not said exactly once" SHOW, OUTPUT);
	ck_assert_msg(count_matching(R.err, "max_bytes:") == 1, "the cap is said more than once" SHOW, OUTPUT);

	run("ip_maxbytes");
	expect_exit(0);
	expect_stderr("");
}
END_TEST

/* ---- triggers ---- */

START_TEST(test_after_duration_trigger)
{
	write_policy("ip_after", NULL, "tokens",
		     "sites = [ \"make_token\" ]; protect = [ \"after:200ms\" ]; max_bytes = 16777216;");
	run("ip_after");
	expect_exit(0);
	expect_stdout("at start: protected 0, write ok\n"
		      "protected after the delay (not early)\n"
		      "token Token-abcdef\n");
	expect_stderr("");

	run("ip_after", "write");
	expect_signal(SIGSEGV);
	expect_stdout("at start: protected 0, write ok\nprotected after the delay (not early)\n");
	expect_only_report(&(struct report){ R.pid, "tokens", 3, 32, "make_token", "ip_after", ENFORCE });
}
END_TEST

START_TEST(test_manual_trigger)
{
	static const char *out = "before: protected 0\n"
				 "pmalloc_protect_named(\"keys\") = 0; protected 1\n"
				 "pmalloc_protect_named(\"no-such-pool\") = -1, errno ENOENT\n"
				 "again, nothing new: 0\n"
				 "new key protected 0\n";
	write_policy("ip_manual", NULL, "keys", "sites = [ \"make_key\" ]; protect = [ \"manual\" ]; max_bytes = 16777216;");
	run("ip_manual");
	expect_exit(0);
	char want[512];
	snprintf(want, sizeof(want), "%sdone\n", out);
	expect_stdout(want);
	expect_stderr("");

	run("ip_manual", "write");
	expect_signal(SIGSEGV);
	expect_stdout(out);
	expect_only_report(&(struct report){ R.pid, "keys", 40, 64, "make_key", "ip_manual", ENFORCE });
}
END_TEST

START_TEST(test_fork_trigger_protects_both_processes)
{
	write_policy("ip_fork", NULL, "state", "sites = [ \"make_state\" ]; protect = [ \"on-call:fork\" ]; max_bytes = 16777216;");
	run("ip_fork");
	expect_exit(0);
	char re[256], line[256];
	regmatch_t m[2];
	snprintf(re, sizeof(re), "^parent %d: protected 0 before fork$", (int)R.pid);
	ck_assert_msg(line_at(R.out, 0, line, sizeof(line)) && line_matches(line, re, NULL, 0), "line 1" SHOW, OUTPUT);
	ck_assert_msg(line_at(R.out, 1, line, sizeof(line)) &&
		      line_matches(line, "^child ([0-9]+): protected 1$", m, 2), "the child is not protected" SHOW, OUTPUT);
	ck_assert(line_at(R.out, 2, line, sizeof(line)));
	ck_assert_msg(strstr(line, "exited 0") != NULL, "the child did not exit 0" SHOW, OUTPUT);
	ck_assert(line_at(R.out, 3, line, sizeof(line)));
	ck_assert_str_eq(line, "parent: protected 1");
	expect_stderr("");

	run("ip_fork", "write");
	expect_signal(SIGSEGV);
	ck_assert_msg(line_at(R.out, 1, line, sizeof(line)) &&
		      line_matches(line, "^child ([0-9]+): protected 1$", m, 2), "the child is not protected" SHOW, OUTPUT);
	pid_t child = (pid_t)strtol(line + m[1].rm_so, NULL, 10);
	ck_assert_int_ne(child, R.pid);
	char want[256];
	snprintf(want, sizeof(want), "child %d killed by signal %d", (int)child, SIGSEGV);
	ck_assert(line_at(R.out, 2, line, sizeof(line)));
	ck_assert_str_eq(line, want);
	ck_assert_msg(count_lines(R.err) == 2, "expected two reports" SHOW, OUTPUT);
	expect_report_line(0, &(struct report){ child, "state", 3, 32, "make_state", "ip_fork", ENFORCE });
	expect_report_line(1, &(struct report){ R.pid, "state", 4, 32, "make_state", "ip_fork", ENFORCE });
}
END_TEST

START_TEST(test_threads_allocate_while_trigger_fires)
{
	write_policy("ip_threads", NULL, "shared",
		     "sites = [ \"thread_alloc\" ]; protect = [ \"on-call:listen\" ]; max_bytes = 67108864;");
	for (int i = 0; i < 3; i++) {
		run("ip_threads");
		expect_exit(0);
		expect_stdout("threads 4; objects before enough, after enough\n"
			      "overlapping 0, not zero 0, before listen but writable 0, after listen but read-only 0\n"
			      "ok\n");
		expect_stderr("");
	}
}
END_TEST

/* The shim's own copies (strdup, strndup, realloc of a pool object) into
 * fresh pool objects, while another thread protects the pool over and
 * over: every copy completes, none is reported as the program's write. */
START_TEST(test_shim_copies_race_protect)
{
	write_policy("ip_fillrace", NULL, "names",
		     "sites = [ \"load_names\" ]; protect = [ \"manual\" ]; max_bytes = 268435456;");
	for (int i = 0; i < 3; i++) {
		run("ip_fillrace");
		expect_exit(0);
		expect_stdout("ok: 2700 copies\n");
		expect_stderr("");
	}
}
END_TEST

/* ---- the program's own SIGSEGV handler ---- */

static const struct report secret_report = { 0, "secrets", 7, 48, "make_secret", "ip_sigsegv", ENFORCE };

/* setproctitle() rewrites argv[0]: the report still names the program by
 * the path read at start-up. */
START_TEST(test_report_names_retitled_program)
{
	write_policy("ip_title", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run("ip_title");
	expect_signal(SIGSEGV);
	ck_assert_msg(strncmp(R.out, "retitled: ", 10) == 0 && !strstr(R.out, "ip_title"),
		      "the program did not retitle itself" SHOW, OUTPUT);
	expect_only_report(&(struct report){ R.pid, "secrets", 7, 48, "make_secret", "ip_title", ENFORCE });
}
END_TEST

START_TEST(test_own_handler_sigaction_after_startup)
{
	write_policy("ip_sigsegv", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run("ip_sigsegv", "sigaction");
	expect_signal(SIGSEGV);
	expect_stdout("sigaction() query: ours\nhandled (1)\nsecret protected 1\n");
	struct report rep = secret_report;
	rep.pid = R.pid;
	expect_only_report(&rep);
}
END_TEST

START_TEST(test_own_handler_sigaction_before_startup)
{
	char preload[5 * PATH_MAX];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s ", built("libpmalloc_shim.so"));
	strcat(preload, built("progs/libip_sigfirst.so"));
	write_policy("ip_sigsegv", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run_env((const char *[]){ preload, NULL }, "ip_sigsegv", "early");
	expect_signal(SIGSEGV);
	expect_stdout("early handler installed before the shim: yes\n"
		      "sigaction() query: not checked\n"
		      "handled (1)\n"
		      "secret protected 1\n");
	struct report rep = secret_report;
	rep.pid = R.pid;
	expect_only_report(&rep);
}
END_TEST

START_TEST(test_own_handler_signal)
{
	write_policy("ip_sigsegv", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run("ip_sigsegv", "signal");
	expect_signal(SIGSEGV);
	expect_stdout("sigaction() query: ours\nhandled (1)\nsecret protected 1\n");
	struct report rep = secret_report;
	rep.pid = R.pid;
	expect_only_report(&rep);
}
END_TEST

/* SA_RESETHAND: the handler runs once, then the default action applies. */
START_TEST(test_own_handler_resethand)
{
	write_policy("ip_sigsegv", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run_env((const char *[]){ "LD_PRELOAD", NULL }, "ip_sigsegv", "resethand");
	expect_signal(SIGSEGV);            /* the program's expectation holds without the shim */
	expect_stdout("sigaction() query: not checked\nresethand handler\n");

	run("ip_sigsegv", "resethand");
	expect_signal(SIGSEGV);
	expect_stdout("sigaction() query: not checked\nresethand handler\n");
	expect_stderr("");
}
END_TEST

/* SA_NODEFER: SIGSEGV is not blocked in the handler, so a handler left
 * with longjmp (no mask restore) leaves it deliverable. */
START_TEST(test_own_handler_nodefer)
{
	write_policy("ip_sigsegv", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run_env((const char *[]){ "LD_PRELOAD", NULL }, "ip_sigsegv", "nodefer");
	expect_exit(0);
	expect_stdout("sigaction() query: not checked\nhandled 2\n");

	run("ip_sigsegv", "nodefer");
	expect_exit(0);
	expect_stdout("sigaction() query: not checked\nhandled 2\n");
	expect_stderr("");
}
END_TEST

/* ---- modes and policies ---- */

START_TEST(test_audit_mode_reports_and_allows)
{
	write_policy("ip_audit", " mode = \"audit\";", "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run("ip_audit");
	expect_exit(0);
	expect_stdout("protected 1\nafter the writes: SEcret; still protected 1\n");
	/* Once per site and process: the first write reported, the second
	 * counted (its page left open), the count said at exit. */
	ck_assert_msg(count_lines(R.err) == 2, "expected a report and the count" SHOW, OUTPUT);
	expect_report_line(0, &(struct report){ R.pid, "secrets", 0, 32, "make_secret", "ip_audit", AUDIT });
	expect_audit_count_line(1, 1, 1);
}
END_TEST

/* Audit mode single-steps the write with SIGTRAP: a program that handles or
 * ignores SIGTRAP itself must neither take the shim's traps nor lose the
 * re-protection. */
START_TEST(test_audit_mode_with_programs_sigtrap_disposition)
{
	write_policy("ip_audit", " mode = \"audit\";", "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	static const char *const modes[] = { "sigtrap", "sigtrap-ign" };
	for (size_t i = 0; i < 2; i++) {
		run("ip_audit", modes[i]);
		expect_exit(0);
		expect_stdout(i == 0 ? "protected 1\nafter the writes: SEcret; still protected 1\n"
				       "the program's SIGTRAP handler ran 0 times\n"
				     : "protected 1\nafter the writes: SEcret; still protected 1\n");
		ck_assert_msg(count_lines(R.err) == 2, "expected a report and the count (%s)" SHOW, modes[i], OUTPUT);
		expect_report_line(0, &(struct report){ R.pid, "secrets", 0, 32, "make_secret", "ip_audit", AUDIT });
		expect_audit_count_line(1, 1, 1);
	}
}
END_TEST

/* One store that touches two protected pages (an unaligned word, or the
 * edge of a vector store in memcpy) is still only reported in audit mode. */
START_TEST(test_audit_mode_write_across_two_pages)
{
	write_policy("ip_audit", " mode = \"audit\";", "tables", "sites = [ \"make_table\" ]; " LISTEN);
	run("ip_audit", "straddle");
	expect_exit(0);
	expect_stdout("protected 1 1; write at offset 4092\n"
		      "after the write: 1122334455667788; still protected 1 1\n");
	ck_assert_msg(count_lines(R.err) >= 1, "no report" SHOW, OUTPUT);
	expect_report_line(0, &(struct report){ R.pid, "tables", 4092, 12288, "make_table", "ip_audit", AUDIT });
	char re[256];
	snprintf(re, sizeof(re), "^pmalloc\\[%d\\]: write to protected pool \"tables\" .*; policy \"ip\"; " AUDIT "$",
		 (int)R.pid);
	ck_assert_msg(count_matching(R.err, re) == count_lines(R.err),
		      "every line must be an audit report" SHOW, OUTPUT);
}
END_TEST

static void expect_unprotected_run(void)
{
	expect_exit(0);
	expect_stdout("before listen: secret protected 0\n"
		      "after listen: secret protected 0, scratch protected 0\n"
		      "secret is secreX-0123456789\n");
}

static void expect_one_policy_error(unsigned line, const char *msg_re)
{
	char re[PATH_MAX * 2 + 256];
	snprintf(re, sizeof(re), "^pmalloc: %s:%u: %s \\(running unprotected\\)$", re_quote(conf_path), line, msg_re);
	char got[2048];
	ck_assert_msg(count_lines(R.err) == 1 && line_at(R.err, 0, got, sizeof(got)) && line_matches(got, re, NULL, 0),
		      "expected exactly one line /%s/ on stderr" SHOW, re, OUTPUT);
}

START_TEST(test_broken_policy_syntax_error)
{
	write_conf("version = 1;\n"
		   "policies = ( { name = \"ip\"; match = { exe = [ \"*/ip_static\" ]; };\n"
		   "  pools = ( { name = \"secrets\"; sites = [ \"make_secret\" ; protect = [ \"on-call:listen\" ]; } ); } );\n");
	run("ip_static", "write");
	expect_unprotected_run();
	expect_one_policy_error(3, "[^ ].*");
}
END_TEST

START_TEST(test_broken_policy_unknown_key)
{
	write_conf("version = 1;\n"
		   "policies = ( { name = \"ip\"; match = { exe = [ \"*/ip_static\" ]; };\n"
		   "  pools = ( { name = \"secrets\"; sites = [ \"make_secret\" ];\n"
		   "    colour = \"red\"; protect = [ \"on-call:listen\" ]; } ); } );\n");
	run("ip_static", "write");
	expect_unprotected_run();
	expect_one_policy_error(4, "unknown key .*colour.*");
}
END_TEST

START_TEST(test_no_matching_policy_is_silent)
{
	write_policy("not-this-program", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run("ip_static", "write");
	expect_unprotected_run();
	expect_stderr("");
}
END_TEST

/* An allocator in the executable precedes the shim: the shim's own
 * strdup & co. allocate from it (its free() aborts on anything else). */
START_TEST(test_allocator_in_the_executable)
{
	write_policy("not-this-program", NULL, "secrets", "sites = [ \"make_secret\" ]; " LISTEN);
	run("ip_ownmalloc");
	expect_exit(0);
	expect_stdout("ok\n");
	expect_stderr("");
}
END_TEST

START_TEST(test_errno_preserved)
{
	write_policy("ip_errno", NULL, "cfg", "sites = [ \"cfg_load\" ]; " LISTEN);
	run("ip_errno");
	expect_exit(0);
	expect_stdout("errno preserved\n");
	expect_stderr("");
	/* The debug lines must not cost errno either. */
	run_env((const char *[]){ "PMALLOC_DEBUG=1", NULL }, "ip_errno");
	expect_exit(0);
	expect_stdout("errno preserved\n");
}
END_TEST

static TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);
	return tc;
}

int main(void)
{
	Suite *s = suite_create("interpose");
	TCase *tc = tcase(s, "sites");
	tcase_add_test(tc, test_static_function_is_a_site);
	tcase_add_test(tc, test_site_in_dlopened_library);
	tcase_add_test(tc, test_library_loaded_where_a_site_library_was);
	tcase_add_test(tc, test_wrapper_charges_its_caller);
	tcase_add_test(tc, test_wrapper_chains);
	tcase_add_test(tc, test_wrapper_callers_read_off_the_stack);
	tcase_add_test(tc, test_strdup_and_strndup_charge_their_caller);
	tcase_add_test(tc, test_rule_matching_nothing_is_reported);

	tc = tcase(s, "allocator family");
	tcase_add_test(tc, test_realloc_and_free_of_pool_objects);
	tcase_add_test(tc, test_calloc_is_zeroed);
	tcase_add_test(tc, test_aligned_allocators_from_a_site);
	tcase_add_test(tc, test_object_larger_than_first_span);
	tcase_add_test(tc, test_max_bytes_overflows_to_heap);
	tcase_add_test(tc, test_errno_preserved);

	tc = tcase(s, "triggers");
	tcase_add_test(tc, test_after_duration_trigger);
	tcase_add_test(tc, test_manual_trigger);
	tcase_add_test(tc, test_fork_trigger_protects_both_processes);
	tcase_add_test(tc, test_threads_allocate_while_trigger_fires);
	tcase_add_test(tc, test_shim_copies_race_protect);

	tc = tcase(s, "program's SIGSEGV handler");
	tcase_add_test(tc, test_report_names_retitled_program);
	tcase_add_test(tc, test_own_handler_sigaction_after_startup);
	tcase_add_test(tc, test_own_handler_sigaction_before_startup);
	tcase_add_test(tc, test_own_handler_signal);
	tcase_add_test(tc, test_own_handler_resethand);
	tcase_add_test(tc, test_own_handler_nodefer);

	tc = tcase(s, "modes and policies");
	tcase_add_test(tc, test_audit_mode_reports_and_allows);
	tcase_add_test(tc, test_audit_mode_write_across_two_pages);
	tcase_add_test(tc, test_audit_mode_with_programs_sigtrap_disposition);
	tcase_add_test(tc, test_broken_policy_syntax_error);
	tcase_add_test(tc, test_broken_policy_unknown_key);
	tcase_add_test(tc, test_no_matching_policy_is_silent);
	tcase_add_test(tc, test_allocator_in_the_executable);

	return test_run_suite(s);
}
