/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy.c - the policy file: read, validate, match (policy.h).
 *
 * Owns the policy model and every check a hostile policy file needs; the
 * one parse on a policy's way to a process (pmallocd's, or the shim's when
 * no daemon answers), whose model policy_image.c then compiles.
 * libconfig alone is not enough: it accepts unknown keys, wraps integer
 * literals silently (in 1.5, "4294967296" reads as 0, so a uid would become
 * root and a max_bytes cap would vanish), follows @include, accepts an
 * unterminated comment, stops at a NUL byte, and leaks memory on a string
 * that stands where its grammar has no place for one.  So the text is read
 * into memory here, pre-scanned for those traps, parsed by libconfig, and
 * every group is walked against a fixed list of keys before anything
 * reaches the model.
 *
 * Must never print or log (the caller reports err), never keep state between
 * calls, and never be called from a signal handler or while the shim
 * interposes (it allocates with malloc and calls libconfig).
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <libconfig.h>

#include "common.h"
#include "policy.h"
#include "role.h"

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* Bounds on what a file may ask for.  Far above any sane policy; they exist
 * so that a hostile file costs bounded memory and time (duplicate checks are
 * quadratic). */
#define FILE_MAX (1024 * 1024)
#define POLICIES_MAX 1024
#define POOLS_MAX 256
#define ENTRIES_MAX 1024
#define GLOB_MAX 255

#define DEFAULT_SOCKET POLICY_DEFAULT_SOCKET
#define DEFAULT_HANDSHAKE_TIMEOUT_MS 100
#define DEFAULT_REPORT_BURST 20
#define DEFAULT_REPORT_INTERVAL_S 10

#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S UINT64_C(1000000000)
#define DURATION_MAX_NS (24 * 3600 * NS_PER_S)

/* An unknown uid is never (uid_t)-1: that value means "unchanged" to
 * setresuid(2) and names no account. */
#define UID_MAX_VALID UINT64_C(4294967294)

static const char *const call_names[POLICY_CALL__COUNT] = {
	[POLICY_CALL_LISTEN] = "listen",
	[POLICY_CALL_ACCEPT] = "accept",
	[POLICY_CALL_ACCEPT4] = "accept4",
	[POLICY_CALL_EPOLL_WAIT] = "epoll_wait",
	[POLICY_CALL_EPOLL_PWAIT] = "epoll_pwait",
	[POLICY_CALL_POLL] = "poll",
	[POLICY_CALL_PPOLL] = "ppoll",
	[POLICY_CALL_SELECT] = "select",
	[POLICY_CALL_PSELECT] = "pselect",
	[POLICY_CALL_SETUID] = "setuid",
	[POLICY_CALL_SETGID] = "setgid",
	[POLICY_CALL_SETRESUID] = "setresuid",
	[POLICY_CALL_SETRESGID] = "setresgid",
	[POLICY_CALL_SETEUID] = "seteuid",
	[POLICY_CALL_SETEGID] = "setegid",
	[POLICY_CALL_CHROOT] = "chroot",
	[POLICY_CALL_PTHREAD_CREATE] = "pthread_create",
	[POLICY_CALL_FORK] = "fork",
	[POLICY_CALL_DAEMON] = "daemon",
	[POLICY_CALL_EXECVE] = "execve",
	[POLICY_CALL_EPOLL_PWAIT2] = "epoll_pwait2",
	[POLICY_CALL_SIGSUSPEND] = "sigsuspend",
	[POLICY_CALL_SIGWAITINFO] = "sigwaitinfo",
	[POLICY_CALL_SIGTIMEDWAIT] = "sigtimedwait",
	[POLICY_CALL_PAUSE] = "pause",
	[POLICY_CALL_SIGWAIT] = "sigwait",
};
static_assert(POLICY_CALL__COUNT <= 32, "a call is a bit of a 32-bit mask");

static const char *const take_names[] = {
	[POLICY_TAKE_ALWAYS] = "always",
	[POLICY_TAKE_UNTIL_TRIGGER] = "until-trigger",
};

const char *policy_take_name(enum policy_take t)
{
	return (unsigned int)t < ARRAY_SIZE(take_names) ? take_names[t] : "always";
}

const char *policy_call_name(enum policy_call c)
{
	if ((unsigned int)c >= POLICY_CALL__COUNT)
		return NULL;
	return call_names[c];
}

static const char *const mode_names[] = {
	[POLICY_MODE_ENFORCE] = "enforce",
	[POLICY_MODE_AUDIT] = "audit",
	[POLICY_MODE_LEARN] = "learn",
};

static const char *const protection_names[] = {
	[POLICY_PROT_MPROTECT] = "mprotect",
	[POLICY_PROT_SEAL] = "seal",
};

const char *policy_mode_name(enum policy_mode m)
{
	return (unsigned int)m < ARRAY_SIZE(mode_names) ? mode_names[m] : "enforce";
}

int policy_call_from_name(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < POLICY_CALL__COUNT; i++)
		if (strcmp(call_names[i], name) == 0)
			return i;
	return -1;
}

/* Strict on purpose: digits, then exactly one unit; no sign, no spaces, no
 * fractions, so that a typo is refused rather than read as something else. */
int policy_parse_duration(const char *s, uint64_t *ret_ns)
{
	uint64_t v = 0, unit;
	const char *p = s;

	if (!s || !ret_ns || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned int d = (unsigned int)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (strcmp(p, "ms") == 0)
		unit = NS_PER_MS;
	else if (strcmp(p, "s") == 0)
		unit = NS_PER_S;
	else if (strcmp(p, "m") == 0)
		unit = 60 * NS_PER_S;
	else if (strcmp(p, "h") == 0)
		unit = 3600 * NS_PER_S;
	else
		return -EINVAL;
	if (v == 0 || v > DURATION_MAX_NS / unit)
		return -EINVAL;
	*ret_ns = v * unit;
	return 0;
}

/* ---- freeing: every field may be NULL or partly filled ---- */

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void pool_free(struct policy_pool *pool)
{
	free(pool->name);
	for (size_t i = 0; i < pool->n_sites; i++) {
		free(pool->sites[i].object);
		free(pool->sites[i].function);
		free(pool->sites[i].build_id);
	}
	free(pool->sites);
	strv_free(pool->wrappers, pool->n_wrappers);
	free(pool->triggers);
}

static void policy_free(struct policy *p)
{
	free(p->name);
	strv_free(p->match_exe, p->n_match_exe);
	strv_free(p->match_comm, p->n_match_comm);
	free(p->match_uid);
	for (size_t i = 0; i < p->n_pools; i++)
		pool_free(&p->pools[i]);
	free(p->pools);
}

void policy_set_free(struct policy_set *set)
{
	if (!set)
		return;
	free(set->daemon.socket);
	for (size_t i = 0; i < set->n_policies; i++)
		policy_free(&set->policies[i]);
	free(set->policies);
	free(set);
}

/* ---- error reporting ---- */

struct parse_ctx {
	const char *name;            /* the file, as messages name it */
	char *err;
	size_t errlen;
};

/* err gets "NAME:LINE: msg", or "NAME: msg" when line is 0 (no line applies). */
static int PRINTF_LIKE(4, 5) fail_with(const struct parse_ctx *c, int r, unsigned int line,
				       const char *fmt, ...)
{
	char msg[POLICY_ERR_MAX];
	va_list ap;

	if (!c->err || c->errlen == 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(c->err, c->errlen, "%s:%u: %s", c->name, line, msg);
	else
		snprintf(c->err, c->errlen, "%s: %s", c->name, msg);
	return r;
}

#define fail(c, line, ...) fail_with((c), -EINVAL, (line), __VA_ARGS__)
#define oom(c) fail_with((c), -ENOMEM, 0, "out of memory")
#define LINE(s) ((unsigned int)config_setting_source_line(s))

/* Values from the file are echoed in messages that reach terminals and the
 * journal: quote them, cut them short and replace anything unprintable. */
struct quoted {
	char s[72];
};

static const char *quote(struct quoted *q, const char *s)
{
	size_t o = 0, i;

	q->s[o++] = '"';
	for (i = 0; s[i] && o < sizeof(q->s) - 6; i++) {
		unsigned char ch = (unsigned char)s[i];
		q->s[o++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
	}
	q->s[o++] = '"';
	if (s[i]) {
		memcpy(q->s + o, "...", 3);
		o += 3;
	}
	q->s[o] = '\0';
	return q->s;
}

#define Q(str) quote(&(struct quoted){ { 0 } }, (str))

static const char *type_name(const config_setting_t *s)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_GROUP: return "a group";
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64: return "an integer";
	case CONFIG_TYPE_FLOAT: return "a float";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL: return "a boolean";
	case CONFIG_TYPE_ARRAY: return "an array";
	case CONFIG_TYPE_LIST: return "a list";
	default: return "nothing";
	}
}

/* ---- pre-scan: what libconfig would accept silently ---- */

/* A literal libconfig would wrap or saturate: without L it is stored in an
 * int, with L in a long long. */
static bool int_literal_fits(const char *tok, size_t len)
{
	size_t i = 0, n_l = 0;
	bool neg = false, hex = false;
	uint64_t v = 0, limit;
	unsigned int base = 10;

	if (tok[i] == '-' || tok[i] == '+')
		neg = tok[i++] == '-';
	if (i + 1 < len && tok[i] == '0' && (tok[i + 1] == 'x' || tok[i + 1] == 'X')) {
		hex = true;
		base = 16;
		i += 2;
	}
	size_t digits = i;
	bool overflow = false;
	for (; i < len && (hex ? isxdigit((unsigned char)tok[i]) : isdigit((unsigned char)tok[i])); i++) {
		unsigned int d = isdigit((unsigned char)tok[i]) ? (unsigned int)(tok[i] - '0')
			: (unsigned int)(tolower((unsigned char)tok[i]) - 'a' + 10);
		if (v > (UINT64_MAX - d) / base)
			overflow = true;
		else
			v = v * base + d;
	}
	if (i == digits)
		return true;    /* not an integer: libconfig judges it */
	while (i < len && tok[i] == 'L' && n_l < 2) {
		i++;
		n_l++;
	}
	if (i != len)
		return true;    /* a float or garbage: libconfig judges it */
	if (overflow)
		return false;
	limit = n_l ? (uint64_t)INT64_MAX : (uint64_t)INT_MAX;
	/* Negative decimals reach one further; hex literals are never negative. */
	if (neg && !hex)
		limit++;
	return v <= limit;
}

static bool is_name_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '-' || ch == '_' || ch == '*';
}

/* What the pre-scan found: the token [off, end) (end 0: it runs to the end
 * of the text), the line to report and the line of its last byte, and what
 * to say unless libconfig meets an earlier error. */
struct finding {
	size_t off, end;
	unsigned int line, last_line;
	char msg[96];
};

static int PRINTF_LIKE(7, 8) found(struct finding *f, const char *text, const char *at,
				   const char *end, unsigned int line, unsigned int last_line,
				   const char *fmt, ...)
{
	va_list ap;

	f->off = (size_t)(at - text);
	f->end = end ? (size_t)(end - text) : 0;
	f->line = line;
	f->last_line = last_line;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	return 1;
}

#define NEST_MAX 32

/* 0 when text holds none of the traps, 1 and *f for the first one.
 *
 * It follows libconfig's tokens (comments, strings, names, numbers) and just
 * enough of its grammar to know where a string may stand: libconfig 1.5
 * leaks the string's buffer when a string is its first syntax error, so such
 * a text must never reach it whole. */
static int prescan(const char *text, struct finding *f)
{
	/* Whether a string may come next: after = or :, first in or after a comma
	 * in [ ] and ( ), or right after another string (concatenation). */
	bool value_next = false;
	char nest[NEST_MAX];
	unsigned int line = 1, depth = 0;
	const char *p = text, *start;

	while (*p) {
		unsigned int first = line;

		start = p;
		if (*p == '\n') {
			line++;
			p++;
		} else if (isspace((unsigned char)*p)) {
			p++;
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
				if (*p == '\n')
					line++;
			if (!*p)
				return found(f, text, start, NULL, first, first, "unterminated comment");
			p += 2;
		} else if (*p == '"') {
			bool nul = false;
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1]) {
					nul |= p[1] == 'x' && p[2] == '0' && p[3] == '0';
					p++;
				}
				if (*p == '\n')
					line++;
			}
			if (!*p)
				return found(f, text, start, NULL, first, first, "unterminated string");
			p++;
			/* libconfig names the line where the string ends. */
			if (!value_next)
				return found(f, text, start, p, line, line, "syntax error");
			/* libconfig would cut the string there silently. */
			if (nul)
				return found(f, text, start, p, first, line, "\\x00 in a string");
		} else if (*p == '@') {
			/* The policy must be this one file: what the daemon checks is
			 * what every process gets. */
			return found(f, text, start, p + 1, line, line, "@include is not supported");
		} else if (isalpha((unsigned char)*p) || *p == '*') {
			while (is_name_char(*p))
				p++;
		} else if (isdigit((unsigned char)*p) ||
			   ((*p == '-' || *p == '+' || *p == '.') && isdigit((unsigned char)p[1]))) {
			p++;
			while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' ||
			       ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E')))
				p++;
			if (!int_literal_fits(start, (size_t)(p - start)))
				return found(f, text, start, p, line, line, "integer %.*s out of range%s",
					     (int)(p - start > 40 ? 40 : p - start), start,
					     memchr(start, 'L', (size_t)(p - start)) ? ""
					     : " (a value above 2147483647 needs the suffix L)");
		} else if (*p == '[' || *p == '(' || *p == '{') {
			/* Deeper than any valid policy file goes. */
			if (depth == NEST_MAX)
				return found(f, text, start, p + 1, line, line,
					     "nested deeper than %d levels", NEST_MAX);
			nest[depth++] = *p++;
		} else if (*p == ']' || *p == ')' || *p == '}') {
			depth -= depth > 0;
			p++;
		} else {
			p++;
		}

		if (isspace((unsigned char)*start) || *start == '#' ||
		    (start[0] == '/' && (start[1] == '/' || start[1] == '*')))
			continue;
		value_next = *start == '"' || *start == '=' || *start == ':' || *start == '[' ||
			*start == '(' || (*start == ',' && depth > 0 && nest[depth - 1] != '{');
	}
	return 0;
}

/* ---- typed access to settings ---- */

static int check_keys(const struct parse_ctx *c, const config_setting_t *group,
		      const char *const *known, const char *where)
{
	int n = config_setting_length(group);

	for (int i = 0; i < n; i++) {
		const config_setting_t *m = config_setting_get_elem(group, (unsigned int)i);
		const char *name = config_setting_name(m);
		size_t k;

		for (k = 0; known[k]; k++)
			if (strcmp(known[k], name) == 0)
				break;
		if (!known[k])
			return fail(c, LINE(m), "unknown key %s in %s", Q(name), where);
	}
	return 0;
}

static int get_int(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		   long long *ret)
{
	if (config_setting_type(s) == CONFIG_TYPE_INT)
		*ret = config_setting_get_int(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT64)
		*ret = config_setting_get_int64(s);
	else
		return fail(c, LINE(s), "%s must be an integer, not %s", what, type_name(s));
	return 0;
}

static int get_uint(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		    uint64_t min, uint64_t max, uint64_t *ret)
{
	long long v = 0;
	int r = get_int(c, s, what, &v);

	if (r < 0)
		return r;
	if (v < 0)
		return fail(c, LINE(s), "%s must not be negative", what);
	if ((uint64_t)v < min || (uint64_t)v > max)
		return fail(c, LINE(s), "%s must be between %" PRIu64 " and %" PRIu64 ", not %lld",
			    what, min, max, v);
	*ret = (uint64_t)v;
	return 0;
}

static int get_string(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		      const char **ret)
{
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return fail(c, LINE(s), "%s must be a string, not %s", what, type_name(s));
	*ret = config_setting_get_string(s);
	return 0;
}

/* The optional string at key of group g, one of names[0, n) (choices: them
 * in words): its index in *ret, which is 0, the default, when g has no key. */
static int get_choice(const struct parse_ctx *c, const config_setting_t *g, const char *key,
		      const char *const *names, unsigned int n, const char *choices,
		      unsigned int *ret)
{
	const config_setting_t *s = config_setting_get_member(g, key);
	const char *v = NULL;
	int r;

	*ret = 0;
	if (!s)
		return 0;
	r = get_string(c, s, key, &v);
	if (r < 0)
		return r;
	for (unsigned int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0) {
			*ret = i;
			return 0;
		}
	return fail(c, LINE(s), "%s must be %s, not %s", key, choices, Q(v));
}

/* Lists of values are arrays "[ ... ]" only, as pmalloc.conf(5) writes them. */
static int get_array(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		     bool strings, unsigned int *ret_n)
{
	int n;

	if (config_setting_type(s) != CONFIG_TYPE_ARRAY)
		return fail(c, LINE(s), "%s must be an array [ ... ], not %s", what, type_name(s));
	n = config_setting_length(s);
	if (n > ENTRIES_MAX)
		return fail(c, LINE(s), "%s has more than %d entries", what, ENTRIES_MAX);
	/* libconfig keeps an array's elements all of one type: the first tells. */
	if (n > 0) {
		const config_setting_t *e = config_setting_get_elem(s, 0);
		int t = config_setting_type(e);
		if (strings ? t != CONFIG_TYPE_STRING : (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64))
			return fail(c, LINE(e), "%s entries must be %s, not %s", what,
				    strings ? "strings" : "integers", type_name(e));
	}
	*ret_n = (unsigned int)n;
	return 0;
}

/* Room for n records of size bytes, zeroed, in *ret (left as it is when n
 * is 0, which is refused as "WHAT is empty (why_empty)" unless why_empty is
 * NULL). */
static int room_for(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		    unsigned int n, const char *why_empty, size_t size, void **ret)
{
	if (n == 0 && why_empty)
		return fail(c, LINE(s), "%s is empty (%s)", what, why_empty);
	if (n == 0)
		return 0;
	*ret = calloc(n, size);
	return *ret ? 0 : oom(c);
}

/* An array at s (as get_array) and room for its entries (as room_for). */
static int get_array_room(const struct parse_ctx *c, const config_setting_t *s, const char *what,
			  bool strings, const char *why_empty, size_t size, void **ret,
			  unsigned int *ret_n)
{
	int r = get_array(c, s, what, strings, ret_n);

	return r < 0 ? r : room_for(c, s, what, *ret_n, why_empty, size, ret);
}

/* Entry i of a list (e), parsed into its record of the model. */
typedef int parse_entry_fn(const struct parse_ctx *c, const config_setting_t *e, void *record,
			   size_t i);

/* Each of the n entries of s parsed by one into the records at room, size
 * bytes each.  *ret_n counts the records begun, also on failure, so that a
 * half-filled one is freed too. */
static int parse_each(const struct parse_ctx *c, const config_setting_t *s, unsigned int n,
		      void *room, size_t size, parse_entry_fn *one, size_t *ret_n)
{
	int r = 0;

	for (unsigned int i = 0; r >= 0 && i < n; i++) {
		(*ret_n)++;
		r = one(c, config_setting_get_elem(s, i), (char *)room + i * size, i);
	}
	return r < 0 ? r : 0;
}

/* The array at s (as get_array_room), each entry parsed by one into a
 * record of size bytes; *ret is the records' room, also on failure. */
static int parse_entries(const struct parse_ctx *c, const config_setting_t *s, const char *what,
			 bool strings, const char *why_empty, size_t size, parse_entry_fn *one,
			 void **ret, size_t *ret_n)
{
	unsigned int n = 0;
	int r = get_array_room(c, s, what, strings, why_empty, size, ret, &n);

	return r < 0 ? r : parse_each(c, s, n, *ret, size, one, ret_n);
}

/* The list of named groups "( { ... }, ... )" at s (what: "pools" or
 * "policies"), of at most max, parsed as parse_entries does. */
static int parse_groups(const struct parse_ctx *c, const config_setting_t *s, const char *what,
			int max, const char *why_empty, size_t size, parse_entry_fn *one, void **ret,
			size_t *ret_n)
{
	int n, r;

	if (!config_setting_is_list(s))
		return fail(c, LINE(s), "%s must be a list ( { ... }, ... ), not %s", what,
			    type_name(s));
	n = config_setting_length(s);
	if (n > max)
		return fail(c, LINE(s), "more than %d %s", max, what);
	r = room_for(c, s, what, (unsigned int)n, why_empty, size, ret);
	return r < 0 ? r : parse_each(c, s, (unsigned int)n, *ret, size, one, ret_n);
}

/* The same for the optional array at key of group g: 0 and nothing set
 * when g has no such key. */
static int member_entries(const struct parse_ctx *c, const config_setting_t *g, const char *key,
			  bool strings, const char *why_empty, size_t size, parse_entry_fn *one,
			  void **ret, size_t *ret_n)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	return s ? parse_entries(c, s, key, strings, why_empty, size, one, ret, ret_n) : 0;
}

static int dup_string(const struct parse_ctx *c, const char *s, char **ret)
{
	char *d = strdup(s);

	if (!d)
		return oom(c);
	*ret = d;
	return 0;
}

static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* fnmatch(3) reads an unclosed '[' as a literal, which is never what the
 * author meant; a trailing '\' is refused for the same reason. */
static const char *glob_problem(const char *g, size_t len)
{
	size_t i;

	if (len == 0)
		return "is empty";
	if (len > GLOB_MAX)
		return "is longer than 255 bytes";
	for (i = 0; i < len; i++)
		if ((unsigned char)g[i] < 0x20 || g[i] == 0x7f)
			return "contains a control character";
	for (i = 0; i < len; i++) {
		if (g[i] == '\\') {
			if (++i == len)
				return "ends in a lone '\\'";
		} else if (g[i] == '[') {
			size_t j = i + 1;
			if (j < len && (g[j] == '!' || g[j] == '^'))
				j++;
			if (j < len && g[j] == ']')
				j++;            /* a ']' first in the set is a member */
			for (; j < len && g[j] != ']'; j++) {
				if (g[j] == '\\') {
					j++;
				} else if (g[j] == '[' && j + 1 < len &&
					   (g[j + 1] == ':' || g[j + 1] == '.' || g[j + 1] == '=')) {
					char delim = g[j + 1];
					for (j += 2; j + 1 < len && !(g[j] == delim && g[j + 1] == ']'); j++)
						;
					if (j + 1 >= len)
						return "has an unbalanced '['";
					j++;
				}
			}
			if (j >= len)
				return "has an unbalanced '['";
			i = j;
		}
	}
	return NULL;
}

static int check_glob(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		      const char *whole, const char *g, size_t len)
{
	const char *why = glob_problem(g, len);

	if (why)
		return fail(c, LINE(s), "%s %s: glob %s", what, Q(whole), why);
	return 0;
}

static int parse_offset_site(const struct parse_ctx *c, const config_setting_t *e, const char *what,
			     const char *rule, size_t object_len, const char *fn, struct policy_site *site);

/* A vector of globs from an array of strings; an empty array is refused
 * unless allow_empty (where "none" and "absent" would differ in meaning). */
static int get_globs(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		     bool allow_empty, bool no_colon, char ***ret, size_t *ret_n)
{
	void *room = NULL;
	unsigned int n;
	int r = get_array_room(c, s, what, true, allow_empty ? NULL : "leave the key out instead",
			       sizeof(**ret), &room, &n);

	if (r < 0)
		return r;
	*ret = room;
	for (unsigned int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);
		const char *g = config_setting_get_string(e);

		r = check_glob(c, e, what, g, g, strlen(g));
		if (r < 0)
			return r;
		if (no_colon && strchr(g, ':')) {
			/* A wrapper may be a call by its offset (in code without
			 * symbols): "OBJECT-GLOB[@BUILD-ID]:+0xOFFSET". */
			const char *colon = strrchr(g, ':');
			struct policy_site site = { 0 };
			if (colon[1] != '+')
				return fail(c, LINE(e), "%s %s: a function glob, or OBJECT-GLOB:+0xOFFSET",
					    what, Q(g));
			r = parse_offset_site(c, e, what, g, (size_t)(colon - g), colon + 1, &site);
			free(site.object);
			free(site.function);
			free(site.build_id);
			if (r < 0)
				return r;
		}
		r = dup_string(c, g, &(*ret)[i]);
		if (r < 0)
			return r;
		(*ret_n)++;
	}
	return 0;
}

static bool name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!isalnum((unsigned char)s[n]) && s[n] != '_' && s[n] != '.' && s[n] != '-')
			return false;
	return n >= 1 && n <= POLICY_NAME_MAX;
}

static int get_name(const struct parse_ctx *c, const config_setting_t *group, const char *what,
		    const config_setting_t **ret_s, char **ret)
{
	const config_setting_t *s = config_setting_get_member(group, "name");
	const char *v = NULL;
	int r;

	if (!s)
		return fail(c, LINE(group), "%s without a name", what);
	r = get_string(c, s, "name", &v);
	if (r < 0)
		return r;
	if (!name_ok(v))
		return fail(c, LINE(s), "bad %s name %s (1 to 63 of A-Z a-z 0-9 _ . -)", what, Q(v));
	*ret_s = s;
	return dup_string(c, v, ret);
}

/* The optional list of globs at key of group g (what names one in errors):
 * 0 and nothing set when g has no such key. */
static int member_globs(const struct parse_ctx *c, const config_setting_t *g, const char *key,
			const char *what, bool allow_empty, bool no_colon, char ***ret, size_t *ret_n)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	return s ? get_globs(c, s, what, allow_empty, no_colon, ret, ret_n) : 0;
}

/* An entry of a list of named groups (pools, policies): a group, with
 * known keys only, and a valid name (what: "pool" or "policy") that none of
 * the i entries before it in the list has (they are valid: a parse stops
 * at the first error). */
static int named_entry(const struct parse_ctx *c, const config_setting_t *g, const char *what,
		       const char *list, const char *const *keys, size_t i, char **ret_name)
{
	const config_setting_t *name_s = NULL;
	char where[16];
	int r;

	if (!config_setting_is_group(g))
		return fail(c, LINE(g), "each entry of %s must be a group { ... }, not %s", list,
			    type_name(g));
	snprintf(where, sizeof(where), "a %s", what);
	r = check_keys(c, g, keys, where);
	if (r < 0)
		return r;
	r = get_name(c, g, what, &name_s, ret_name);
	if (r < 0)
		return r;
	for (unsigned int j = 0; j < i; j++) {
		const config_setting_t *e = config_setting_get_elem(config_setting_parent(g), j);
		const char *name = NULL;

		if (config_setting_lookup_string(e, "name", &name) && strcmp(name, *ret_name) == 0)
			return fail(c, LINE(name_s), "duplicate %s name %s (first at line %u)", what,
				    Q(*ret_name), LINE(e));
	}
	return 0;
}

/* ---- the model, level by level ---- */

static const char *const root_keys[] = { "version", "daemon", "policies", NULL };
static const char *const daemon_keys[] = {
	"socket", "handshake_timeout_ms", "report_burst", "report_interval_s", NULL
};
static const char *const policy_keys[] = { "name", "match", "mode", "protection", "pools", NULL };
static const char *const match_keys[] = { "exe", "comm", "uid", NULL };
static const char *const pool_keys[] = {
	"name", "sites", "wrappers", "protect", "max_bytes", "take", "roles", NULL
};

static int parse_uint_member(const struct parse_ctx *c, const config_setting_t *group,
			     const char *key, uint64_t min, uint64_t max, unsigned int *ret)
{
	const config_setting_t *s = config_setting_get_member(group, key);
	uint64_t v;
	int r;

	if (!s)
		return 0;
	r = get_uint(c, s, key, min, max, &v);
	if (r < 0)
		return r;
	*ret = (unsigned int)v;
	return 0;
}

static int parse_daemon(const struct parse_ctx *c, const config_setting_t *g,
			struct policy_daemon_settings *d)
{
	const config_setting_t *s;
	const char *sock = DEFAULT_SOCKET;
	int r;

	d->handshake_timeout_ms = DEFAULT_HANDSHAKE_TIMEOUT_MS;
	d->report_burst = DEFAULT_REPORT_BURST;
	d->report_interval_s = DEFAULT_REPORT_INTERVAL_S;
	if (g) {
		if (!config_setting_is_group(g))
			return fail(c, LINE(g), "daemon must be a group { ... }, not %s", type_name(g));
		r = check_keys(c, g, daemon_keys, "daemon");
		if (r < 0)
			return r;
		s = config_setting_get_member(g, "socket");
		if (s) {
			r = get_string(c, s, "socket", &sock);
			if (r < 0)
				return r;
			if (sock[0] != '/')
				return fail(c, LINE(s), "socket %s is not an absolute path", Q(sock));
			if (strlen(sock) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
				return fail(c, LINE(s), "socket path is longer than %zu bytes",
					    sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
			if (has_control_char(sock))
				return fail(c, LINE(s), "socket path contains a control character");
		}
		/* Every preloaded process may wait this long at start: keep it short. */
		r = parse_uint_member(c, g, "handshake_timeout_ms", 1, 10000, &d->handshake_timeout_ms);
		if (r < 0)
			return r;
		/* 0 would silence violations, which a hardening tool must not allow. */
		r = parse_uint_member(c, g, "report_burst", 1, 1000000, &d->report_burst);
		if (r < 0)
			return r;
		r = parse_uint_member(c, g, "report_interval_s", 1, 86400, &d->report_interval_s);
		if (r < 0)
			return r;
	}
	return dup_string(c, sock, &d->socket);
}

/* "OBJECT-GLOB[@BUILD-ID]" and "+0xOFFSET" of an offset site (what: "site"
 * or "wrapper"). */
static int parse_offset_site(const struct parse_ctx *c, const config_setting_t *e, const char *what,
			     const char *rule, size_t object_len, const char *fn, struct policy_site *site)
{
	/* The prefix first: the digits start after it only where it is whole
	 * ("+f" ends before fn + 3). */
	if (strncmp(fn, "+0x", 3) != 0)
		return fail(c, LINE(e), "%s %s: an offset is +0x and 1 to 16 hex digits", what, Q(rule));
	const char *hex = fn + 3;
	size_t nhex = strspn(hex, "0123456789abcdefABCDEF");
	if (nhex == 0 || hex[nhex] != '\0' || nhex > 16)
		return fail(c, LINE(e), "%s %s: an offset is +0x and 1 to 16 hex digits", what, Q(rule));
	if (object_len == 0)
		return fail(c, LINE(e), "%s %s: an offset %s names its object (OBJECT-GLOB:+0xOFFSET)",
			    what, Q(rule), what);
	const char *at = NULL;       /* the last '@' of the object part */
	for (size_t i = 0; i < object_len; i++)
		if (rule[i] == '@')
			at = rule + i;
	size_t glob_len = at ? (size_t)(at - rule) : object_len;
	if (at) {
		size_t n = object_len - glob_len - 1;
		if (n < 8 || n > 128 || n % 2 || strspn(at + 1, "0123456789abcdefABCDEF") < n)
			return fail(c, LINE(e), "%s %s: a build-id is 8 to 128 hex digits, an even count",
				    what, Q(rule));
		site->build_id = strndup(at + 1, n);
		if (!site->build_id)
			return oom(c);
		for (char *p = site->build_id; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	}
	if (glob_len == 0)
		return fail(c, LINE(e), "%s %s: empty OBJECT part", what, Q(rule));
	int r = check_glob(c, e, what, rule, rule, glob_len);
	if (r < 0)
		return r;
	site->object = strndup(rule, glob_len);
	if (!site->object)
		return oom(c);
	site->offset = strtoull(hex, NULL, 16);
	site->by_offset = true;
	char canon[24];
	snprintf(canon, sizeof(canon), "+0x%" PRIx64, site->offset);
	return dup_string(c, canon, &site->function);
}

static int parse_site(const struct parse_ctx *c, const config_setting_t *e, void *record,
		      size_t i)
{
	struct policy_site *site = record;
	const char *rule = config_setting_get_string(e);
	/* Split at the LAST ':': an object path may hold one, a symbol never does. */
	const char *colon = strrchr(rule, ':');
	const char *fn = colon ? colon + 1 : rule;
	int r;

	(void)i;

	if (fn[0] == '+')
		return parse_offset_site(c, e, "site", rule, colon ? (size_t)(colon - rule) : 0, fn, site);
	if (colon) {
		if (colon == rule)
			return fail(c, LINE(e), "site %s: empty OBJECT part", Q(rule));
		if (!*fn)
			return fail(c, LINE(e), "site %s: empty FUNCTION part", Q(rule));
		r = check_glob(c, e, "site", rule, rule, (size_t)(colon - rule));
		if (r < 0)
			return r;
	}
	r = check_glob(c, e, "site", rule, fn, strlen(fn));
	if (r < 0)
		return r;
	if (colon) {
		site->object = strndup(rule, (size_t)(colon - rule));
		if (!site->object)
			return oom(c);
	}
	return dup_string(c, fn, &site->function);
}

static int parse_trigger(const struct parse_ctx *c, const config_setting_t *e, void *record,
			 size_t i)
{
	struct policy_trigger *t = record;
	const char *s = config_setting_get_string(e);

	(void)i;

	if (strcmp(s, "manual") == 0) {
		t->kind = POLICY_TRIGGER_MANUAL;
	} else if (strcmp(s, "on-wait") == 0) {
		t->kind = POLICY_TRIGGER_ON_WAIT;
	} else if (strncmp(s, "on-call:", 8) == 0) {
		int call = policy_call_from_name(s + 8);
		if (call < 0)
			return fail(c, LINE(e), "trigger %s: on-call takes one of listen, accept, "
				    "accept4, epoll_wait, epoll_pwait, poll, ppoll, select, pselect, "
				    "setuid, setgid, setresuid, setresgid, seteuid, setegid, chroot, "
				    "pthread_create, fork, daemon, execve, epoll_pwait2, sigsuspend, sigwaitinfo, "
				    "sigtimedwait, pause, sigwait", Q(s));
		t->kind = POLICY_TRIGGER_ON_CALL;
		t->call = (enum policy_call)call;
	} else if (strncmp(s, "after:", 6) == 0) {
		if (policy_parse_duration(s + 6, &t->after_ns) < 0)
			return fail(c, LINE(e), "trigger %s: the duration must be an integer > 0 "
				    "with unit ms, s, m or h, at most 24h", Q(s));
		t->kind = POLICY_TRIGGER_AFTER;
	} else {
		return fail(c, LINE(e), "unknown trigger %s (on-call:FUNCTION, on-wait, "
			    "after:DURATION or manual)", Q(s));
	}
	return 0;
}

/* roles = [ "main", "child" ]: the processes the pool protects in (role.h);
 * absent: every role.  Empty, unknown or repeated names are errors: a pool
 * that protects in no process is a typo, never a choice. */
static int parse_roles(const struct parse_ctx *c, const config_setting_t *g, uint32_t *ret)
{
	const config_setting_t *s = config_setting_get_member(g, "roles");
	*ret = 0;
	if (!s)
		return 0;
	if (!config_setting_is_array(s) || config_setting_length(s) == 0)
		return fail(c, LINE(s), "roles must be a non-empty list of role names (\"main\", \"child\", "
			    "\"child.child\", \"child.child.child\"); leave it out for every role");
	for (int k = 0; k < config_setting_length(s); k++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)k);
		const char *name = config_setting_get_string(e);
		int d = name ? role_depth(name) : -1;
		if (d < 0)
			return fail(c, LINE(s), "unknown role %s in roles (\"main\", \"child\", \"child.child\", "
				    "\"child.child.child\")", name ? Q(name) : "(not a string)");
		if (*ret & (1u << d))
			return fail(c, LINE(s), "role %s is named twice in roles", Q(name));
		*ret |= 1u << d;
	}
	return 0;
}

static int parse_pool(const struct parse_ctx *c, const config_setting_t *g, void *record,
		      size_t i)
{
	struct policy_pool *pool = record;
	const config_setting_t *s;
	void *room = NULL;
	int r;

	pool->line = (int)LINE(g);
	r = named_entry(c, g, "pool", "pools", pool_keys, i, &pool->name);
	if (r < 0)
		return r;

	if (!config_setting_get_member(g, "sites"))
		return fail(c, LINE(g), "pool %s without sites", Q(pool->name));
	r = member_entries(c, g, "sites", true, "the pool would never be used", sizeof(*pool->sites),
			  parse_site, &room, &pool->n_sites);
	pool->sites = room;
	if (r < 0)
		return r;

	r = member_globs(c, g, "wrappers", "wrapper", true, true, &pool->wrappers, &pool->n_wrappers);
	if (r < 0)
		return r;

	/* protect is optional and may be empty: such a pool is filled and capped
	 * but never protected automatically. */
	room = NULL;
	r = member_entries(c, g, "protect", true, NULL, sizeof(*pool->triggers), parse_trigger, &room,
			   &pool->n_triggers);
	pool->triggers = room;
	if (r < 0)
		return r;

	s = config_setting_get_member(g, "max_bytes");
	if (s) {
		r = get_uint(c, s, "max_bytes", 0, INT64_MAX, &pool->max_bytes);
		if (r < 0)
			return r;
	}
	unsigned int take;
	r = get_choice(c, g, "take", take_names, ARRAY_SIZE(take_names), "\"always\" or \"until-trigger\"",
		       &take);
	if (r < 0)
		return r;
	pool->take = (enum policy_take)take;
	return parse_roles(c, g, &pool->roles);
}

static int parse_uid(const struct parse_ctx *c, const config_setting_t *e, void *record, size_t i)
{
	uint64_t v = 0;
	int r = get_uint(c, e, "uid", 0, UID_MAX_VALID, &v);

	(void)i;
	if (r < 0)
		return r;
	*(uid_t *)record = (uid_t)v;
	return 0;
}

static int parse_match(const struct parse_ctx *c, const config_setting_t *policy_g,
		       struct policy *p)
{
	const config_setting_t *g = config_setting_get_member(policy_g, "match");
	void *room = NULL;
	int r;

	if (!g)
		return fail(c, LINE(policy_g), "policy %s without match", Q(p->name));
	if (!config_setting_is_group(g))
		return fail(c, LINE(g), "match must be a group { ... }, not %s", type_name(g));
	r = check_keys(c, g, match_keys, "match");
	if (r < 0)
		return r;
	if (config_setting_length(g) == 0)
		return fail(c, LINE(g), "match is empty: give exe, comm or uid "
			    "(a policy without them would match nothing)");
	r = member_globs(c, g, "exe", "exe", false, false, &p->match_exe, &p->n_match_exe);
	if (r < 0)
		return r;
	r = member_globs(c, g, "comm", "comm", false, false, &p->match_comm, &p->n_match_comm);
	if (r < 0)
		return r;
	/* uids are numbers only: a name would need NSS lookups, which the shim
	 * cannot make safely at start-up, and could mean a different account on
	 * each machine or after each reload. */
	r = member_entries(c, g, "uid", false, "leave the key out instead", sizeof(*p->match_uid),
			   parse_uid, &room, &p->n_match_uid);
	p->match_uid = room;
	return r;
}

static int parse_policy(const struct parse_ctx *c, const config_setting_t *g, void *record,
			size_t i)
{
	struct policy *p = record;
	const config_setting_t *s;
	void *room = NULL;
	unsigned int choice;
	int r;

	p->line = (int)LINE(g);
	r = named_entry(c, g, "policy", "policies", policy_keys, i, &p->name);
	if (r < 0)
		return r;

	r = parse_match(c, g, p);
	if (r < 0)
		return r;

	r = get_choice(c, g, "mode", mode_names, ARRAY_SIZE(mode_names),
		       "\"enforce\", \"audit\" or \"learn\"", &choice);
	if (r < 0)
		return r;
	p->mode = (enum policy_mode)choice;
	r = get_choice(c, g, "protection", protection_names, ARRAY_SIZE(protection_names),
		       "\"mprotect\" or \"seal\"", &choice);
	if (r < 0)
		return r;
	p->protection = (enum policy_protection)choice;

	s = config_setting_get_member(g, "pools");
	if (!s)
		return fail(c, LINE(g), "policy %s without pools", Q(p->name));
	r = parse_groups(c, s, "pools", POOLS_MAX, "the policy would do nothing", sizeof(*p->pools),
			 parse_pool, &room, &p->n_pools);
	p->pools = room;
	return r;
}

static int parse_root(const struct parse_ctx *c, const config_setting_t *root,
		      struct policy_set *set)
{
	const config_setting_t *s;
	void *room = NULL;
	long long version = 0;
	int r;

	r = check_keys(c, root, root_keys, "the top level");
	if (r < 0)
		return r;
	s = config_setting_get_member(root, "version");
	if (!s)
		return fail(c, 0, "missing \"version = 1;\"");
	r = get_int(c, s, "version", &version);
	if (r < 0)
		return r;
	if (version != 1)
		return fail(c, LINE(s), "version %lld is not supported (this pmalloc reads version 1)",
			    version);
	set->version = 1;

	r = parse_daemon(c, config_setting_get_member(root, "daemon"), &set->daemon);
	if (r < 0)
		return r;

	/* No policies is a valid file: every process is left alone. */
	s = config_setting_get_member(root, "policies");
	if (!s)
		return 0;
	r = parse_groups(c, s, "policies", POLICIES_MAX, NULL, sizeof(*set->policies), parse_policy,
			 &room, &set->n_policies);
	set->policies = room;
	return r;
}

/* The first error in the file is the one reported.  libconfig reads a copy
 * in which the finding is blanked out and its last byte replaced by '!',
 * which libconfig refuses wherever it stands (and without leaking): if it
 * stops earlier than that, its error comes first. */
static int refuse_finding(const struct parse_ctx *c, const char *text, const struct finding *f)
{
	char *copy = strdup(text);
	config_t cfg;
	int r;

	if (!copy)
		return oom(c);
	if (f->end == 0) {
		copy[f->off] = '!';
		copy[f->off + 1] = '\0';
	} else {
		for (size_t i = f->off; i < f->end; i++)
			if (copy[i] != '\n')
				copy[i] = ' ';
		copy[f->end - 1] = '!';
	}
	config_init(&cfg);
	if (config_read_string(&cfg, copy) != CONFIG_TRUE) {
		unsigned int line = (unsigned int)config_error_line(&cfg);
		const char *why = config_error_text(&cfg) ? config_error_text(&cfg) : "syntax error";

		/* On the '!' line, only a different complaint proves an earlier error. */
		if (line < f->last_line || (line == f->last_line && strcmp(why, "syntax error") != 0))
			r = fail(c, line, "%s", why);
		else
			r = fail(c, f->line, "%s", f->msg);
	} else {
		r = fail(c, f->line, "%s", f->msg);
	}
	config_destroy(&cfg);
	free(copy);
	return r;
}

/* libconfig's "syntax error" alone tells a newcomer nothing: what was
 * expected, guessed from the line it names.  A bare word after = or :
 * (not a number, not true or false) is the usual one: an unquoted string. */
static const char *syntax_hint(const char *text, int line)
{
	const char *p = text;

	for (int l = 1; l < line && *p; p++)
		l += *p == '\n';
	for (; *p && *p != '\n' && *p != '#'; p++) {
		const char *w;
		size_t n;

		if (*p == '"') {
			for (p++; *p && *p != '"' && *p != '\n'; p++)
				p += *p == '\\' && p[1];
			if (*p != '"')
				break;
			continue;
		}
		if (*p != '=' && *p != ':')
			continue;
		for (w = p + 1; *w == ' ' || *w == '\t'; w++)
			;
		for (n = 0; isalpha((unsigned char)w[n]) || w[n] == '_' || w[n] == '/' || w[n] == '.' ||
			    w[n] == '-' || w[n] == '*' || (n && isdigit((unsigned char)w[n])); n++)
			;
		if (n && !(n == 4 && strncasecmp(w, "true", 4) == 0) && !(n == 5 && strncasecmp(w, "false", 5) == 0))
			return "syntax error: a string value must be in double quotes (name = \"demo\";)";
	}
	return "syntax error: expected NAME = VALUE; (strings in double quotes, lists in ( ), "
	       "arrays in [ ], groups in { }; a ';' or ',' missing or a bracket left open before here?)";
}

static int load_text(const struct parse_ctx *c, const char *text, struct policy_set **ret)
{
	struct finding f;
	struct policy_set *set;
	config_t cfg;
	int r;

	if (prescan(text, &f) > 0)
		return refuse_finding(c, text, &f);

	config_init(&cfg);
	if (config_read_string(&cfg, text) != CONFIG_TRUE) {
		/* No @include got through, so the file is always ours to name.
		 * libconfig reports exhaustion as a parse error too: rare enough to
		 * leave as -EINVAL. */
		int line = config_error_line(&cfg);
		const char *why = config_error_text(&cfg);

		if (!why || strcmp(why, "syntax error") == 0)
			why = syntax_hint(text, line);
		r = fail(c, line > 0 ? (unsigned int)line : 0, "%s", why);
		config_destroy(&cfg);
		return r;
	}

	set = calloc(1, sizeof(*set));
	if (!set) {
		config_destroy(&cfg);
		return oom(c);
	}
	r = parse_root(c, config_root_setting(&cfg), set);
	config_destroy(&cfg);
	if (r < 0) {
		policy_set_free(set);
		return r;
	}
	*ret = set;
	return 0;
}

int policy_set_load_string(const char *text, const char *name, struct policy_set **ret,
			   char *err, size_t errlen)
{
	const struct parse_ctx c = { name ? name : "<string>", err, errlen };

	if (!text || !ret)
		return fail(&c, 0, "no text");
	if (strnlen(text, FILE_MAX + 1) > FILE_MAX)
		return fail_with(&c, -EFBIG, 0, "larger than %d bytes", FILE_MAX);
	return load_text(&c, text, ret);
}

int policy_file_trusted(const char *path, const struct stat *st, unsigned int euid, char *err,
			size_t errlen)
{
	if (euid != 0)
		return 0;
	if (st->st_uid != 0) {
		snprintf(err, errlen, "%s: refused: owned by uid %u, not by root", path,
			 (unsigned int)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s: refused: writable by group or others (mode %04o)", path,
			 (unsigned int)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Read here rather than by config_read_file(): the size is bounded, a FIFO
 * or device cannot block or feed us forever, and a NUL byte (after which
 * libconfig would silently stop reading) is refused. */
int policy_set_load_file(const char *path, struct policy_set **ret, char *err, size_t errlen)
{
	const struct parse_ctx c = { path ? path : "<null>", err, errlen };
	struct stat st;
	char *buf;
	size_t len = 0, cap;
	int fd, r;

	if (!path || !ret)
		return fail(&c, 0, "no file");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		return fail_with(&c, r, 0, "cannot open: %s", strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return fail_with(&c, r, 0, "cannot stat: %s", strerror(-r));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail(&c, 0, "not a regular file");
	}
	r = policy_file_trusted(c.name, &st, (unsigned int)geteuid(), err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (st.st_size > FILE_MAX) {
		close(fd);
		return fail_with(&c, -EFBIG, 0, "larger than %d bytes", FILE_MAX);
	}
	/* Room for one byte more than fstat() saw, to notice a file that grew
	 * while it was read (rewritten in place): refused, the caller may retry. */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return oom(&c);
	}
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			close(fd);
			free(buf);
			return fail_with(&c, r, 0, "cannot read: %s", strerror(-r));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		/* Short: the end of a regular file (one read, not two). */
		if (len < cap)
			break;
	}
	if (len == cap) {
		close(fd);
		free(buf);
		return fail_with(&c, -EAGAIN, 0, "changed while being read");
	}
	close(fd);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		unsigned int line = 1;
		for (const char *p = buf; *p; p++)
			line += *p == '\n';
		free(buf);
		return fail(&c, line, "NUL byte in the file");
	}
	r = load_text(&c, buf, ret);
	free(buf);
	return r;
}

/* ---- matching ---- */

static bool glob_any(char *const *globs, size_t n, const char *s)
{
	if (!s)
		return false;
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], s, 0) == 0)
			return true;
	return false;
}

const struct policy *policy_set_match(const struct policy_set *set, const char *exe,
				      const char *comm, uid_t uid)
{
	if (!set)
		return NULL;
	for (size_t i = 0; i < set->n_policies; i++) {
		const struct policy *p = &set->policies[i];
		bool uid_ok = p->n_match_uid == 0;

		if (p->n_match_exe == 0 && p->n_match_comm == 0 && p->n_match_uid == 0)
			continue;
		if (p->n_match_exe > 0 && !glob_any(p->match_exe, p->n_match_exe, exe))
			continue;
		if (p->n_match_comm > 0 && !glob_any(p->match_comm, p->n_match_comm, comm))
			continue;
		for (size_t j = 0; j < p->n_match_uid && !uid_ok; j++)
			uid_ok = p->match_uid[j] == uid;
		if (uid_ok)
			return p;
	}
	return NULL;
}
