/*
 * ctl_status_json.c - "pmallocctl status --json": pmallocd's status text
 * (daemon/pmallocd/status.c owns its layout; keep both in step) as one JSON object
 * for scripts and monitoring:
 *
 *   {"pmallocd":{"pid":N,"running":"AGE"},
 *    "policy_file":{"path":S,"generation":N,"policies":N,"loaded_ago":"AGE"},
 *    "socket":{"path":S,"socket_activation":B},
 *    "counters":{"clients":S,"messages":S,...},     the other "name: text" lines
 *    "policy_warnings":[{"line":N,"warning":S}],
 *    "unserved":[{"pid":N,"exe":S,"uid":N,"comm":S,"policy":S}],
 *    "served":[PROCESS...], "exited":[PROCESS...],
 *    "other":[S...]}                                  lines not understood
 *   PROCESS: {"pid":N,"exe":S,"uid":N,"policy":S|null,"mode":S,"generation":N,
 *             "forked_from":N,"state":S,"pools":[POOL...],
 *             "rules_unresolved":N,"rules_total":N,   (when some match nothing)
 *             "rules_not_listed":N,
 *             "violations":N,"violations_not_logged":N,
 *             "sites_asked_s":N,   (a fresh table asked for, not come yet)
 *             "sites_total":N,"sites_age_s":N,"sites":[{"site":S,"pool":S,
 *             "objects":N,"bytes":N}]}                  (status PID only)
 *   POOL: {"name":S,"policy":S,"protected":B,"protected_bytes":N,"objects":N,
 *          "protects":N,"last_trigger":S,"rules_resolved":N,"rules_unresolved":N,
 *          "rules":[{"kind":S,"rule":S,"resolved":B,"why":S}]}
 *          (rules: the unresolved ones; with status PID, all)
 *
 * Must never trust the text (whoever listens on the socket wrote it): every
 * string goes through ctl_put_json(), numbers are only those sscanf()
 * read, and a line that does not parse is kept verbatim under "other"
 * rather than dropped, so nothing is hidden.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

enum section { SEC_TOP, SEC_WARNINGS, SEC_UNSERVED, SEC_SERVED, SEC_EXITED };

struct json_out {
	FILE *f;
	enum section sec;
	bool first_key;              /* of the top-level object */
	bool counters_open, counters_done;
	bool in_proc, in_pools, pools_done, first_in_sec;
	bool in_pool, in_rules, in_sites, first_site;
	char other[64 * 1024];       /* "other" lines, JSON-escaped later: kept raw here */
	size_t other_len;
};

static void put_str(FILE *f, const char *s, size_t n)
{
	ctl_put_json(f, s, n);
}

static void put_cstr(FILE *f, const char *s)
{
	ctl_put_json(f, s, strlen(s));
}

/* A key of the top-level object; "counters" is closed first. */
static void key(struct json_out *o, const char *name)
{
	if (o->counters_open) {
		fputc('}', o->f);
		o->counters_open = false;
		o->counters_done = true;
	}
	fprintf(o->f, "%s\"%s\":", o->first_key ? "" : ",", name);
	o->first_key = false;
}

static void keep_other(struct json_out *o, const char *line, size_t n)
{
	if (o->other_len + n + 1 > sizeof(o->other))
		return;
	memcpy(o->other + o->other_len, line, n);
	o->other[o->other_len + n] = '\n';
	o->other_len += n + 1;
}

static void close_pool(struct json_out *o)
{
	if (o->in_rules)
		fputc(']', o->f);
	if (o->in_pool)
		fputc('}', o->f);
	o->in_pool = o->in_rules = false;
}

/* The pools come first in a process's text: anything else ends them. */
static void end_pools(struct json_out *o)
{
	close_pool(o);
	if (o->in_pools)
		fputc(']', o->f);
	else if (!o->pools_done)
		fputs(",\"pools\":[]", o->f);
	o->in_pools = false;
	o->pools_done = true;
}

static void close_proc(struct json_out *o)
{
	if (!o->in_proc)
		return;
	end_pools(o);
	if (o->in_sites)
		fputc(']', o->f);
	fputc('}', o->f);
	o->in_proc = o->in_pools = o->pools_done = o->in_sites = false;
}

static void close_section(struct json_out *o)
{
	close_proc(o);
	if (o->sec != SEC_TOP)
		fputc(']', o->f);
}

static void open_section(struct json_out *o, enum section sec, const char *name)
{
	close_section(o);
	key(o, name);
	fputc('[', o->f);
	o->sec = sec;
	o->first_in_sec = true;
}

/* From p, the text up to "  " + next (exclusive) as a JSON string; p moves
 * past it.  false when next is not there. */
static bool put_until(FILE *f, const char **p, const char *next)
{
	const char *end = strstr(*p, next);

	if (!end)
		return false;
	put_str(f, *p, (size_t)(end - *p));
	*p = end;
	return true;
}

/* "N  EXE  uid U" at *p, the start of a process line: the object opened
 * with "pid", "exe" and "uid" (a process object left open closed first);
 * *p moves past them.  false, and nothing written, when it is not one. */
static bool open_process(struct json_out *o, const char **pp)
{
	const char *p = *pp;
	unsigned int uid;
	int pid, n = 0;

	if (sscanf(p, "%d%n", &pid, &n) != 1 || strncmp(p + n, "  ", 2) != 0)
		return false;
	p += n + 2;
	if (!strstr(p, "  uid "))
		return false;
	close_proc(o);
	fprintf(o->f, "%s{\"pid\":%d,\"exe\":", o->first_in_sec ? "" : ",", pid);
	o->first_in_sec = false;
	(void)put_until(o->f, &p, "  uid ");
	if (sscanf(p, "  uid %u%n", &uid, &n) == 1) {
		fprintf(o->f, ",\"uid\":%u", uid);
		p += n;
	}
	*pp = p;
	return true;
}

/* "  PID N  EXE  uid U..." of a served or exited process. */
static bool proc_line(struct json_out *o, const char *line)
{
	const char *p = line + 6, *q;
	unsigned long long gen;
	int n = 0, via;
	char name[256], mode[16];

	if (!open_process(o, &p))
		return false;
	if (sscanf(p, "  forked child of PID %d%n", &via, &n) == 1) {
		fprintf(o->f, ",\"forked_from\":%d", via);
		p += n;
	}
	if (sscanf(p, "  policy \"%255[^\"]\" (%15[^,], generation %llu)%n", name, mode, &gen, &n) == 3) {
		fputs(",\"policy\":", o->f);
		put_cstr(o->f, name);
		fputs(",\"mode\":", o->f);
		put_cstr(o->f, mode);
		fprintf(o->f, ",\"generation\":%llu", gen);
		p += n;
	} else if (sscanf(p, "  no policy (generation %llu)%n", &gen, &n) == 1) {
		fprintf(o->f, ",\"policy\":null,\"generation\":%llu", gen);
		p += n;
	}
	q = p;
	while (*q == ' ')
		q++;
	fputs(",\"state\":", o->f);
	put_cstr(o->f, q);
	o->in_proc = true;
	return true;
}

/* "    pool "NAME"[ (policy "P")]: B bytes protected in O objects, N protects (last: T)" */
static bool pool_line(struct json_out *o, const char *line)
{
	unsigned long long bytes, objects, protects;
	char name[256], policy[256] = "", trigger[256];
	const char *p = line + 4;
	int n = 0;

	if (!o->in_proc || o->pools_done || sscanf(p, "pool \"%255[^\"]\"%n", name, &n) != 1)
		return false;
	p += n;
	if (sscanf(p, " (policy \"%255[^\"]\")%n", policy, &n) == 1)
		p += n;
	bool unprotected = strcmp(p, ": not protected yet (no trigger has fired)") == 0;
	if (!unprotected && sscanf(p, ": %llu bytes protected in %llu objects, %llu protects (last: %255[^)])",
				   &bytes, &objects, &protects, trigger) != 4)
		return false;
	close_pool(o);
	fputs(o->in_pools ? "," : ",\"pools\":[", o->f);
	o->in_pools = o->in_pool = true;
	fputs("{\"name\":", o->f);
	put_cstr(o->f, name);
	if (policy[0]) {
		fputs(",\"policy\":", o->f);
		put_cstr(o->f, policy);
	}
	if (unprotected) {
		fputs(",\"protected\":false", o->f);
		return true;
	}
	fprintf(o->f, ",\"protected\":true,\"protected_bytes\":%llu,\"objects\":%llu,\"protects\":%llu,"
		"\"last_trigger\":", bytes, objects, protects);
	put_cstr(o->f, trigger);
	return true;
}

/* "      rules: N resolved, M unresolved", then a line a rule:
 * "      unresolved: KIND TEXT (WHY)" or "      resolved: KIND TEXT",
 * KIND one of site, wrapper, trigger. */
static bool rule_line(struct json_out *o, const char *line)
{
	static const char *const kinds[] = { "site", "wrapper", "trigger" };
	const char *p = line + 6, *kind = NULL, *why = NULL, *end;
	unsigned long long res, unres;
	bool resolved;

	if (!o->in_pool)
		return false;
	if (sscanf(p, "rules: %llu resolved, %llu unresolved", &res, &unres) == 2) {
		fprintf(o->f, ",\"rules_resolved\":%llu,\"rules_unresolved\":%llu", res, unres);
		return true;
	}
	if (strncmp(p, "resolved: ", 10) == 0)
		resolved = true, p += 10;
	else if (strncmp(p, "unresolved: ", 12) == 0)
		resolved = false, p += 12;
	else
		return false;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !kind; i++)
		if (strncmp(p, kinds[i], strlen(kinds[i])) == 0 && p[strlen(kinds[i])] == ' ')
			kind = kinds[i];
	if (!kind)
		return false;
	p += strlen(kind) + 1;
	end = p + strlen(p);
	if (!resolved) {
		why = strstr(p, " (");
		for (const char *q = why; q; q = strstr(q + 1, " ("))
			why = q;             /* the last " (": the rule itself may hold one */
		if (!why || end == why || end[-1] != ')')
			return false;
	}
	fputs(o->in_rules ? "," : ",\"rules\":[", o->f);
	o->in_rules = true;
	fputs("{\"kind\":", o->f);
	put_cstr(o->f, kind);
	fputs(",\"rule\":", o->f);
	put_str(o->f, p, (size_t)((why ? why : end) - p));
	fprintf(o->f, ",\"resolved\":%s", resolved ? "true" : "false");
	if (why) {
		fputs(",\"why\":", o->f);
		put_str(o->f, why + 2, (size_t)(end - 1 - (why + 2)));
	}
	fputc('}', o->f);
	return true;
}

/* What follows a process's pools: its rules in sum, its site table. */
static bool proc_tail_line(struct json_out *o, const char *line)
{
	unsigned long long a, b, c, d;
	char pool[256];
	int n = 0;

	if (!o->in_proc)
		return false;
	if (sscanf(line, "    warning: %llu of %llu rules match nothing", &a, &b) == 2) {
		end_pools(o);
		fprintf(o->f, ",\"rules_unresolved\":%llu,\"rules_total\":%llu", a, b);
		return true;
	}
	if (sscanf(line, "    (%llu more rules, all resolved, not listed)", &a) == 1) {
		end_pools(o);
		fprintf(o->f, ",\"rules_not_listed\":%llu", a);
		return true;
	}
	if (sscanf(line, "    (%llu rules and sites messages over the rate limit", &a) == 1) {
		end_pools(o);
		fprintf(o->f, ",\"rules_messages_not_kept\":%llu", a);
		return true;
	}
	if (sscanf(line, "    sites: a fresh table asked for %llus ago", &a) == 1) {
		end_pools(o);
		fprintf(o->f, ",\"sites_asked_s\":%llu", a);
		return true;
	}
	if (strncmp(line, "    sites: none reported yet", 28) == 0) {
		end_pools(o);
		fputs(",\"sites\":[]", o->f);
		return true;
	}
	if (sscanf(line, "    sites: %llu of %llu listed, as of %llus ago", &a, &b, &c) == 3) {
		end_pools(o);
		fprintf(o->f, ",\"sites_total\":%llu,\"sites_age_s\":%llu,\"sites\":[", b, c);
		o->in_sites = true;
		o->first_site = true;
		return true;
	}
	if (o->in_sites && strncmp(line, "      site ", 11) == 0) {
		const char *p = line + 11, *sep = strstr(p, "  pool \"");

		for (const char *q = sep; q; q = strstr(q + 1, "  pool \""))
			sep = q;             /* the last: the site's name may hold one */
		if (!sep || sscanf(sep, "  pool \"%255[^\"]\": %llu objects, %llu bytes%n", pool, &a, &d, &n) != 3)
			return false;
		fputs(o->first_site ? "{\"site\":" : ",{\"site\":", o->f);
		o->first_site = false;
		put_str(o->f, p, (size_t)(sep - p));
		fputs(",\"pool\":", o->f);
		put_cstr(o->f, pool);
		fprintf(o->f, ",\"objects\":%llu,\"bytes\":%llu}", a, d);
		return true;
	}
	return false;
}

/* "  line N: WARNING" of the policy file's warnings. */
static bool warning_line(struct json_out *o, const char *line)
{
	int ln, n = 0;

	if (sscanf(line, "  line %d: %n", &ln, &n) != 1 || n == 0)
		return false;
	fprintf(o->f, "%s{\"line\":%d,\"warning\":", o->first_in_sec ? "" : ",", ln);
	o->first_in_sec = false;
	put_cstr(o->f, line + n);
	fputc('}', o->f);
	return true;
}

static bool violations_line(struct json_out *o, const char *line)
{
	unsigned long long v, d, pd;

	if (!o->in_proc || sscanf(line, "    violations: %llu reported, %llu not logged (rate limit); "
				  "%llu protect entries not logged", &v, &d, &pd) != 3)
		return false;
	end_pools(o);
	fprintf(o->f, ",\"violations\":%llu,\"violations_not_logged\":%llu,"
		"\"protects_not_logged\":%llu", v, d, pd);
	return true;
}

/* "  PID N  EXE  uid U  comm C  policy "P"" of a process never checked in. */
static bool unserved_line(struct json_out *o, const char *line)
{
	const char *p = line + 6;
	char policy[256];

	if (!open_process(o, &p))
		return false;
	if (strncmp(p, "  comm ", 7) == 0) {
		p += 7;
		fputs(",\"comm\":", o->f);
		(void)put_until(o->f, &p, "  policy ");
	}
	if (sscanf(p, "  policy \"%255[^\"]\"", policy) == 1) {
		fputs(",\"policy\":", o->f);
		put_cstr(o->f, policy);
	}
	fputc('}', o->f);
	return true;
}

static bool top_line(struct json_out *o, const char *line)
{
	unsigned long long gen, refused = 0;
	size_t policies;
	int pid, n = 0;
	char age[32], path[4096], loaded[32];
	const char *colon;

	if (sscanf(line, "pmallocd (PID %d), running %31s", &pid, age) == 2) {
		key(o, "pmallocd");
		fprintf(o->f, "{\"pid\":%d,\"running\":", pid);
		put_cstr(o->f, age);
		fputc('}', o->f);
		return true;
	}
	if (sscanf(line, "policy file: %4095[^,], generation %llu (%zu %*[a-z]), loaded %31s ago%n",
		   path, &gen, &policies, loaded, &n) == 4) {
		(void)sscanf(line + n, "; %llu reloads refused", &refused);
		key(o, "policy_file");
		fputs("{\"path\":", o->f);
		put_cstr(o->f, path);
		fprintf(o->f, ",\"generation\":%llu,\"policies\":%zu,\"loaded_ago\":", gen, policies);
		put_cstr(o->f, loaded);
		fprintf(o->f, ",\"reloads_refused\":%llu}", refused);
		return true;
	}
	if (strncmp(line, "socket: ", 8) == 0) {
		const char *s = line + 8, *act = strstr(s, " (socket activation)");

		key(o, "socket");
		fputs("{\"path\":", o->f);
		put_str(o->f, s, act ? (size_t)(act - s) : strlen(s));
		fprintf(o->f, ",\"socket_activation\":%s}", act ? "true" : "false");
		return true;
	}
	colon = strstr(line, ": ");
	if (!colon || line[0] == ' ' || memchr(line, '(', (size_t)(colon - line)) || o->counters_done)
		return false;
	if (o->counters_open) {
		fputc(',', o->f);
	} else {
		key(o, "counters");
		fputc('{', o->f);
		o->counters_open = true;
	}
	put_str(o->f, line, (size_t)(colon - line));
	fputc(':', o->f);
	put_cstr(o->f, colon + 2);
	return true;
}

/* The status text's section headings (each line starts with one) and the
 * JSON keys they become. */
static const struct {
	const char *heading;
	enum section sec;
	const char *key;
} sections[] = {
	{ "policy file warnings", SEC_WARNINGS, "policy_warnings" },
	{ "running but never checked in", SEC_UNSERVED, "unserved" },
	{ "served processes", SEC_SERVED, "served" },
	{ "exited processes", SEC_EXITED, "exited" },
};

static void status_line(struct json_out *o, char *line)
{
	bool ok = false;

	if (line[0] == '\0')
		return;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (strncmp(line, sections[i].heading, strlen(sections[i].heading)) == 0) {
			open_section(o, sections[i].sec, sections[i].key);
			return;
		}
	}
	if (strcmp(line, "  (none)") == 0 || strcmp(line, "  (shown to root only)") == 0)
		return;
	switch (o->sec) {
	case SEC_TOP:
		ok = top_line(o, line);
		break;
	case SEC_WARNINGS:
		ok = warning_line(o, line);
		break;
	case SEC_UNSERVED:
		ok = strncmp(line, "  PID ", 6) == 0 && unserved_line(o, line);
		break;
	case SEC_SERVED:
	case SEC_EXITED:
		if (strncmp(line, "  PID ", 6) == 0)
			ok = proc_line(o, line);
		else if (strncmp(line, "    pool ", 9) == 0)
			ok = pool_line(o, line);
		else if (strncmp(line, "      ", 6) == 0 && o->in_pool)
			ok = rule_line(o, line);
		else if (strncmp(line, "    violations: ", 16) == 0)
			ok = violations_line(o, line);
		else
			ok = proc_tail_line(o, line);
		break;
	}
	if (!ok)
		keep_other(o, line, strlen(line));
}

int ctl_status_json(FILE *f, char *text)
{
	static struct json_out o;
	char *line = text;

	memset(&o, 0, sizeof(o));
	o.f = f;
	o.first_key = true;
	fputc('{', f);
	while (line && *line) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		status_line(&o, line);
		line = nl ? nl + 1 : NULL;
	}
	close_section(&o);
	key(&o, "other");
	fputc('[', f);
	for (size_t i = 0, start = 0; i < o.other_len; i++) {
		if (o.other[i] != '\n')
			continue;
		fputs(start ? "," : "", f);
		put_str(f, o.other + start, i - start);
		start = i + 1;
	}
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}
