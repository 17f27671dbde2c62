/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_setting.c - the policy parser's typed access to what libconfig
 * read (see policy_setting.h): integers in their bounds, strings, one of
 * a few words, arrays of one type with room for their records, lists of
 * named groups, globs (fnmatch(3) patterns checked before use) and a site
 * rule by offset; and the error message, with the file's name and line.
 *
 * Owns the checks every value of the file passes, whatever its key: a
 * wrong type, an unknown key, a name out of its alphabet, a duplicate
 * name, an unbalanced '[' in a glob, are refused here with what was
 * expected.  Never prints or logs (the message goes to the caller's err),
 * never keeps state between calls, never runs in a signal handler or while
 * the shim interposes (it allocates and calls libconfig).
 */
#include "policy_setting.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES_MAX 1024
#define GLOB_MAX 255

/* ---- error reporting ---- */

/* err gets "NAME:LINE: msg", or "NAME: msg" when line is 0 (no line applies). */
int PRINTF_LIKE(4, 5) setting_fail_with(const struct parse_ctx *c, int r, unsigned int line,
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

const char *setting_quote(struct quoted *q, const char *s)
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

const char *setting_type_name(const config_setting_t *s)
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

int setting_check_keys(const struct parse_ctx *c, const config_setting_t *group,
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

int setting_get_int(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		    long long *ret)
{
	if (config_setting_type(s) == CONFIG_TYPE_INT)
		*ret = config_setting_get_int(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT64)
		*ret = config_setting_get_int64(s);
	else
		return fail(c, LINE(s), "%s must be an integer, not %s", what, setting_type_name(s));
	return 0;
}

int setting_get_uint(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		     uint64_t min, uint64_t max, uint64_t *ret)
{
	long long v = 0;
	int r = setting_get_int(c, s, what, &v);

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

int setting_get_string(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		       const char **ret)
{
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return fail(c, LINE(s), "%s must be a string, not %s", what, setting_type_name(s));
	*ret = config_setting_get_string(s);
	return 0;
}

/* The optional string at key of group g, one of names[0, n) (choices: them
 * in words): its index in *ret, which is 0, the default, when g has no key. */
int setting_get_choice(const struct parse_ctx *c, const config_setting_t *g, const char *key,
		       const char *const *names, unsigned int n, const char *choices,
		       unsigned int *ret)
{
	const config_setting_t *s = config_setting_get_member(g, key);
	const char *v = NULL;
	int r;

	*ret = 0;
	if (!s)
		return 0;
	r = setting_get_string(c, s, key, &v);
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
		return fail(c, LINE(s), "%s must be an array [ ... ], not %s", what, setting_type_name(s));
	n = config_setting_length(s);
	if (n > ENTRIES_MAX)
		return fail(c, LINE(s), "%s has more than %d entries", what, ENTRIES_MAX);
	/* libconfig keeps an array's elements all of one type: the first tells. */
	if (n > 0) {
		const config_setting_t *e = config_setting_get_elem(s, 0);
		int t = config_setting_type(e);
		if (strings ? t != CONFIG_TYPE_STRING : (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64))
			return fail(c, LINE(e), "%s entries must be %s, not %s", what,
				    strings ? "strings" : "integers", setting_type_name(e));
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
int setting_parse_groups(const struct parse_ctx *c, const config_setting_t *s, const char *what,
			 int max, const char *why_empty, size_t size, parse_entry_fn *one, void **ret,
			 size_t *ret_n)
{
	int n, r;

	if (!config_setting_is_list(s))
		return fail(c, LINE(s), "%s must be a list ( { ... }, ... ), not %s", what,
			    setting_type_name(s));
	n = config_setting_length(s);
	if (n > max)
		return fail(c, LINE(s), "more than %d %s", max, what);
	r = room_for(c, s, what, (unsigned int)n, why_empty, size, ret);
	return r < 0 ? r : parse_each(c, s, (unsigned int)n, *ret, size, one, ret_n);
}

/* The same for the optional array at key of group g: 0 and nothing set
 * when g has no such key. */
int setting_member_entries(const struct parse_ctx *c, const config_setting_t *g, const char *key,
			   bool strings, const char *why_empty, size_t size, parse_entry_fn *one,
			   void **ret, size_t *ret_n)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	return s ? parse_entries(c, s, key, strings, why_empty, size, one, ret, ret_n) : 0;
}

int setting_dup_string(const struct parse_ctx *c, const char *s, char **ret)
{
	char *d = strdup(s);

	if (!d)
		return oom(c);
	*ret = d;
	return 0;
}

bool setting_has_control_char(const char *s)
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

int setting_check_glob(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		       const char *whole, const char *g, size_t len)
{
	const char *why = glob_problem(g, len);

	if (why)
		return fail(c, LINE(s), "%s %s: glob %s", what, Q(whole), why);
	return 0;
}

/* "OBJECT-GLOB[@BUILD-ID]" and "+0xOFFSET" of an offset site (what: "site"
 * or "wrapper"). */
int setting_parse_offset_site(const struct parse_ctx *c, const config_setting_t *e, const char *what,
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
	int r = setting_check_glob(c, e, what, rule, rule, glob_len);
	if (r < 0)
		return r;
	site->object = strndup(rule, glob_len);
	if (!site->object)
		return oom(c);
	site->offset = strtoull(hex, NULL, 16);
	site->by_offset = true;
	char canon[24];
	snprintf(canon, sizeof(canon), "+0x%" PRIx64, site->offset);
	return setting_dup_string(c, canon, &site->function);
}

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

		r = setting_check_glob(c, e, what, g, g, strlen(g));
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
			r = setting_parse_offset_site(c, e, what, g, (size_t)(colon - g), colon + 1, &site);
			free(site.object);
			free(site.function);
			free(site.build_id);
			if (r < 0)
				return r;
		}
		r = setting_dup_string(c, g, &(*ret)[i]);
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
	r = setting_get_string(c, s, "name", &v);
	if (r < 0)
		return r;
	if (!name_ok(v))
		return fail(c, LINE(s), "bad %s name %s (1 to 63 of A-Z a-z 0-9 _ . -)", what, Q(v));
	*ret_s = s;
	return setting_dup_string(c, v, ret);
}

/* The optional list of globs at key of group g (what names one in errors):
 * 0 and nothing set when g has no such key. */
int setting_member_globs(const struct parse_ctx *c, const config_setting_t *g, const char *key,
			 const char *what, bool allow_empty, bool no_colon, char ***ret, size_t *ret_n)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	return s ? get_globs(c, s, what, allow_empty, no_colon, ret, ret_n) : 0;
}

/* An entry of a list of named groups (pools, policies): a group, with
 * known keys only, and a valid name (what: "pool" or "policy") that none of
 * the i entries before it in the list has (they are valid: a parse stops
 * at the first error). */
int setting_named_entry(const struct parse_ctx *c, const config_setting_t *g, const char *what,
			const char *list, const char *const *keys, size_t i, char **ret_name)
{
	const config_setting_t *name_s = NULL;
	char where[16];
	int r;

	if (!config_setting_is_group(g))
		return fail(c, LINE(g), "each entry of %s must be a group { ... }, not %s", list,
			    setting_type_name(g));
	snprintf(where, sizeof(where), "a %s", what);
	r = setting_check_keys(c, g, keys, where);
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
