/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_setting.h - the policy parser's typed access to libconfig's
 * settings and its error message (policy_setting.c), for the two files
 * that read a policy file: policy_parse.c (the model, level by level) and
 * policy_load.c (the text).  Not for anyone else: policy.h is the model's
 * public face.  Each function returns 0, or a negative errno with the
 * message in the context's err.
 */
#ifndef PMALLOC_POLICY_SETTING_H
#define PMALLOC_POLICY_SETTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libconfig.h>

#include "policy.h"

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

struct parse_ctx {
	const char *name;            /* the file, as messages name it */
	char *err;
	size_t errlen;
};

/* err gets "NAME:LINE: msg", or "NAME: msg" when line is 0 (no line applies). */
int PRINTF_LIKE(4, 5) setting_fail_with(const struct parse_ctx *c, int r, unsigned int line,
					const char *fmt, ...);
#define fail(c, line, ...) setting_fail_with((c), -EINVAL, (line), __VA_ARGS__)
#define oom(c) setting_fail_with((c), -ENOMEM, 0, "out of memory")
#define LINE(s) ((unsigned int)config_setting_source_line(s))

/* Values from the file are echoed in messages that reach terminals and the
 * journal: quote them, cut them short and replace anything unprintable. */
struct quoted {
	char s[72];
};

const char *setting_quote(struct quoted *q, const char *s);
#define Q(str) setting_quote(&(struct quoted){ { 0 } }, (str))

/* "a group", "an integer" ...: what the file gave, in words. */
const char *setting_type_name(const config_setting_t *s);

/* Entry i of a list (e), parsed into its record of the model. */
typedef int parse_entry_fn(const struct parse_ctx *c, const config_setting_t *e, void *record,
			   size_t i);

/* Every key of group is one of known (NULL-terminated); where names the group. */
int setting_check_keys(const struct parse_ctx *c, const config_setting_t *group,
		       const char *const *known, const char *where);
/* The integer at s (int or int64). */
int setting_get_int(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		    long long *ret);
/* The integer at s, in [min, max]. */
int setting_get_uint(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		     uint64_t min, uint64_t max, uint64_t *ret);
/* The string at s (libconfig's: valid until the config is destroyed). */
int setting_get_string(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		       const char **ret);
/* The optional word at key of g, one of names[0, n): its index (0 when absent). */
int setting_get_choice(const struct parse_ctx *c, const config_setting_t *g, const char *key,
		       const char *const *names, unsigned int n, const char *choices,
		       unsigned int *ret);
/* The list of named groups at s, at most max, each parsed by one into a record
 * of size bytes (*ret_n counts those begun, also on failure). */
int setting_parse_groups(const struct parse_ctx *c, const config_setting_t *s, const char *what,
			 int max, const char *why_empty, size_t size, parse_entry_fn *one, void **ret,
			 size_t *ret_n);
/* The optional array at key of g, each entry parsed by one (nothing when absent). */
int setting_member_entries(const struct parse_ctx *c, const config_setting_t *g, const char *key,
			   bool strings, const char *why_empty, size_t size, parse_entry_fn *one,
			   void **ret, size_t *ret_n);
/* A copy of s, or -ENOMEM said. */
int setting_dup_string(const struct parse_ctx *c, const char *s, char **ret);
/* Whether s holds a byte below 0x20 or 0x7f. */
bool setting_has_control_char(const char *s);
/* g[0, len), part of whole, as a glob fnmatch(3) reads as the author meant. */
int setting_check_glob(const struct parse_ctx *c, const config_setting_t *s, const char *what,
		       const char *whole, const char *g, size_t len);
/* A site or wrapper rule by offset, OBJECT-GLOB[@BUILD-ID]:+0xOFFSET, into site. */
int setting_parse_offset_site(const struct parse_ctx *c, const config_setting_t *e, const char *what,
			      const char *rule, size_t object_len, const char *fn, struct policy_site *site);
/* The optional array of globs at key of g (nothing when absent). */
int setting_member_globs(const struct parse_ctx *c, const config_setting_t *g, const char *key,
			 const char *what, bool allow_empty, bool no_colon, char ***ret, size_t *ret_n);
/* A pool or policy group: known keys only, and a valid name no earlier entry has. */
int setting_named_entry(const struct parse_ctx *c, const config_setting_t *g, const char *what,
			const char *list, const char *const *keys, size_t i, char **ret_name);

#endif
