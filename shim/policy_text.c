/*
 * policy_text.c - a policy as libconfig text (policy_to_text), the form in
 * which pmallocd hands a process its policy: the shim parses it with the
 * same code that reads files (policy.c), so there is no second parser.
 *
 * Allocates with malloc; never prints; never called from a signal handler.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S UINT64_C(1000000000)

struct text {
	char *buf;
	size_t len, cap;
	int r;                       /* the first error; sticky, checked once at the end */
};

static bool text_reserve(struct text *t, size_t more)
{
	size_t cap;
	char *b;

	if (t->r < 0)
		return false;
	if (more < t->cap - t->len)
		return true;
	cap = t->cap ? t->cap : 1024;
	while (cap - t->len <= more) {
		if (cap > SIZE_MAX / 2) {
			t->r = -ENOMEM;
			return false;
		}
		cap *= 2;
	}
	b = realloc(t->buf, cap);
	if (!b) {
		t->r = -ENOMEM;
		return false;
	}
	t->buf = b;
	t->cap = cap;
	return true;
}

static void PRINTF_LIKE(2, 3) text_printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		if (t->r == 0)
			t->r = -EINVAL;
		return;
	}
	if (!text_reserve(t, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* The inside of a libconfig string literal.  A model from the parser holds
 * no control characters; \xNN keeps the text valid for any other. */
static void text_escaped(struct text *t, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			text_printf(t, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			text_printf(t, "\\x%02x", ch);
		else
			text_printf(t, "%c", ch);
	}
}

static void text_string(struct text *t, const char *s)
{
	text_printf(t, "\"");
	text_escaped(t, s);
	text_printf(t, "\"");
}

static void text_strings(struct text *t, const char *indent, const char *key,
			 char *const *v, size_t n)
{
	if (n == 0)
		return;
	text_printf(t, "%s%s = [ ", indent, key);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			text_printf(t, ", ");
		text_string(t, v[i]);
	}
	text_printf(t, " ];\n");
}

/* The largest unit that states d exactly; the parser only makes whole ms. */
static void text_duration(struct text *t, uint64_t d)
{
	if (d % (3600 * NS_PER_S) == 0)
		text_printf(t, "%" PRIu64 "h", d / (3600 * NS_PER_S));
	else if (d % (60 * NS_PER_S) == 0)
		text_printf(t, "%" PRIu64 "m", d / (60 * NS_PER_S));
	else if (d % NS_PER_S == 0)
		text_printf(t, "%" PRIu64 "s", d / NS_PER_S);
	else
		text_printf(t, "%" PRIu64 "ms", (d + NS_PER_MS - 1) / NS_PER_MS);
}

static void text_pool(struct text *t, const struct policy_pool *pool)
{
	text_printf(t, "      {\n        name = ");
	text_string(t, pool->name);
	text_printf(t, ";\n        sites = [ ");
	for (size_t i = 0; i < pool->n_sites; i++) {
		const struct policy_site *site = &pool->sites[i];
		if (i > 0)
			text_printf(t, ", ");
		if (site->object) {
			text_printf(t, "\"");
			text_escaped(t, site->object);
			if (site->build_id)
				text_printf(t, "@%s", site->build_id);
			text_printf(t, ":");
			text_escaped(t, site->function);
			text_printf(t, "\"");
		} else {
			text_string(t, site->function);
		}
	}
	text_printf(t, " ];\n");
	text_strings(t, "        ", "wrappers", pool->wrappers, pool->n_wrappers);
	/* Written even when empty, so that "never protected automatically" is
	 * visible to whoever reads the text. */
	text_printf(t, "        protect = [");
	for (size_t i = 0; i < pool->n_triggers; i++) {
		const struct policy_trigger *tr = &pool->triggers[i];
		text_printf(t, "%s ", i > 0 ? "," : "");
		if (tr->kind == POLICY_TRIGGER_MANUAL) {
			text_printf(t, "\"manual\"");
		} else if (tr->kind == POLICY_TRIGGER_ON_CALL) {
			const char *name = policy_call_name(tr->call);
			if (!name) {
				t->r = -EINVAL;
				return;
			}
			text_printf(t, "\"on-call:%s\"", name);
		} else {
			text_printf(t, "\"after:");
			text_duration(t, tr->after_ns);
			text_printf(t, "\"");
		}
	}
	text_printf(t, " ];\n");
	/* Without L, libconfig would wrap anything above INT_MAX. */
	text_printf(t, "        max_bytes = %" PRIu64 "%s;\n      }", pool->max_bytes,
		    pool->max_bytes > INT_MAX ? "L" : "");
}

int policy_to_text(const struct policy_set *set, const struct policy *p, char **ret)
{
	struct text t = { NULL, 0, 0, 0 };
	bool uid_l = false;

	if (!set || !p || !ret)
		return -EINVAL;
	text_printf(&t, "version = 1;\n\ndaemon = {\n  socket = ");
	text_string(&t, set->daemon.socket ? set->daemon.socket : POLICY_DEFAULT_SOCKET);
	text_printf(&t, ";\n  handshake_timeout_ms = %u;\n  report_burst = %u;\n"
		    "  report_interval_s = %u;\n};\n\npolicies = (\n  {\n    name = ",
		    set->daemon.handshake_timeout_ms, set->daemon.report_burst,
		    set->daemon.report_interval_s);
	text_string(&t, p->name);
	text_printf(&t, ";\n    match = {\n");
	text_strings(&t, "      ", "exe", p->match_exe, p->n_match_exe);
	text_strings(&t, "      ", "comm", p->match_comm, p->n_match_comm);
	if (p->n_match_uid > 0) {
		/* An array holds one type: if one uid needs L, all get it. */
		for (size_t i = 0; i < p->n_match_uid; i++)
			uid_l |= p->match_uid[i] > INT_MAX;
		text_printf(&t, "      uid = [ ");
		for (size_t i = 0; i < p->n_match_uid; i++)
			text_printf(&t, "%s%u%s", i > 0 ? ", " : "", (unsigned int)p->match_uid[i],
				    uid_l ? "L" : "");
		text_printf(&t, " ];\n");
	}
	text_printf(&t, "    };\n    mode = \"%s\";\n    protection = \"%s\";\n    pools = (\n",
		    policy_mode_name(p->mode),
		    p->protection == POLICY_PROT_SEAL ? "seal" : "mprotect");
	for (size_t i = 0; i < p->n_pools; i++) {
		text_pool(&t, &p->pools[i]);
		text_printf(&t, "%s\n", i + 1 < p->n_pools ? "," : "");
	}
	text_printf(&t, "    );\n  }\n);\n");
	if (t.r < 0) {
		free(t.buf);
		return t.r;
	}
	*ret = t.buf;
	return 0;
}
