/*
 * ctl_propose.c - pmallocctl propose: from what learn mode wrote to the
 * journal (one entry per site: MESSAGE_ID MID_LEARNED) to a
 * complete, commented policy file for one executable, in enforce mode.
 *
 * A site is proposed when it allocated before its pool's trigger, no
 * process ever wrote its memory after protection, and it did not go on
 * allocating after the first trigger (PMALLOC_OBJECTS_LATE: its objects
 * come and go with the load, and a slower client than those learned from
 * could write one after protection).  Sites are named by
 * function where the shim found a symbol and no call site of that function
 * was written; otherwise by offset, pinned to the object's build-id.  Each
 * pool keeps the learn policy's wrappers (the sites learned are their
 * callers) and gets a max_bytes (cap_for).  The
 * text is checked with the parser and linter pmallocctl check uses before
 * it is written.  Reads the journal only; writes only --output.
 *
 * Whose entries count: any local process can write an entry that says
 * PMALLOC_EXE=/usr/sbin/nginx, so the sender's uid as journald took it from
 * the kernel (_UID) decides: root's, the user running propose, or a user
 * named with --uid.  (_EXE cannot serve: entries written at exit often
 * reach journald after the process is gone, without it.)  A forged entry
 * could otherwise leave a site out (less protection) or put one in that the
 * real program writes (a kill in enforce mode).
 */
#define _GNU_SOURCE
#include "ctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

/* A site owns its name; the texts it shares with the other sites of its
 * pool or object (and with the entries of the same site from other
 * processes) are the list's, kept once (intern()). */
struct psite {
	char *site;
	const char *pool, *object, *build_id, *triggers;
	const char *wrappers;       /* the pool's wrapper rules, each ending in '\n' */
	uint64_t offset, objects, bytes;
	uint64_t late;              /* objects protected after the pool's first trigger */
	bool named, written;
};

struct plist {
	struct psite *s;
	size_t n, cap;
	char **texts;               /* interned, each once */
	size_t n_texts, cap_texts;
	char *policy;
	size_t entries;
};

/* The list's copy of s (taken, or freed when the list has it already);
 * NULL when s is NULL or without memory.  Few texts differ: a program's
 * pools, objects and their triggers and wrappers. */
static const char *intern(struct plist *l, char *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < l->n_texts; i++)
		if (strcmp(l->texts[i], s) == 0) {
			free(s);
			return l->texts[i];
		}
	if (l->n_texts == l->cap_texts) {
		size_t cap = l->cap_texts ? l->cap_texts * 2 : 16;
		char **nt = realloc(l->texts, cap * sizeof(*nt));
		if (!nt) {
			free(s);
			return NULL;
		}
		l->texts = nt;
		l->cap_texts = cap;
	}
	l->texts[l->n_texts++] = s;
	return s;
}

/* Every PMALLOC_WRAPPER of the entry (the field repeats), each ending in
 * '\n' (the shim escapes control characters in values). */
static char *learned_wrappers(sd_journal *j)
{
	static const char key[] = "PMALLOC_WRAPPER=";
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const void *d;
	size_t n;
	if (!f)
		return NULL;
	SD_JOURNAL_FOREACH_DATA(j, d, n)
		if (n > sizeof(key) - 1 && memcmp(d, key, sizeof(key) - 1) == 0)
			fprintf(f, "%.*s\n", (int)(n - (sizeof(key) - 1)), (const char *)d + sizeof(key) - 1);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* One entry folded in: the same site seen by several processes (a master
 * and its workers, runs after runs) is the largest count, written if any
 * process wrote it. */
static int add_entry(struct plist *l, sd_journal *j)
{
	struct psite p = {
		.site = ctl_learned_field(j, "PMALLOC_SITE"),
		.pool = intern(l, ctl_learned_field(j, "PMALLOC_POOL")),
		.object = intern(l, ctl_learned_field(j, "PMALLOC_SITE_OBJECT")),
		.build_id = intern(l, ctl_learned_field(j, "PMALLOC_BUILD_ID")),
		.triggers = intern(l, ctl_learned_field(j, "PMALLOC_TRIGGERS")),
		.wrappers = intern(l, learned_wrappers(j)),
		.offset = ctl_learned_u64(j, "PMALLOC_SITE_OFFSET"),
		.objects = ctl_learned_u64(j, "PMALLOC_OBJECTS"),
		.bytes = ctl_learned_u64(j, "PMALLOC_BYTES"),
		.late = ctl_learned_u64(j, "PMALLOC_OBJECTS_LATE"),
		.named = ctl_learned_u64(j, "PMALLOC_SITE_NAMED") == 1,
		.written = ctl_learned_u64(j, "PMALLOC_WRITTEN") == 1,
	};
	char *policy = ctl_learned_field(j, "PMALLOC_POLICY");
	if (!p.pool || !p.site || !p.object || !p.build_id || !p.triggers || !p.wrappers || !policy) {
		free(p.site);
		free(policy);
		return -ENOMEM;
	}
	free(l->policy);
	l->policy = policy;
	l->entries++;
	for (size_t i = 0; i < l->n; i++) {
		struct psite *q = &l->s[i];
		if (strcmp(q->pool, p.pool) == 0 && strcmp(q->object, p.object) == 0 && q->offset == p.offset) {
			q->objects = q->objects > p.objects ? q->objects : p.objects;
			q->bytes = q->bytes > p.bytes ? q->bytes : p.bytes;
			q->written |= p.written;
			q->late = q->late > p.late ? q->late : p.late;
			if (p.named && !q->named) {
				free(q->site);
				q->site = p.site;
				p.site = NULL;
				q->named = true;
			}
			free(p.site);
			return 0;
		}
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct psite *ns = realloc(l->s, cap * sizeof(*ns));
		if (!ns) {
			free(p.site);
			return -ENOMEM;
		}
		l->s = ns;
		l->cap = cap;
	}
	l->s[l->n++] = p;
	return 0;
}

#define TRUSTED_UIDS_MAX 16

static int read_journal(const char *exe, const uid_t *uids, size_t n_uids, uint64_t since, struct plist *l)
{
	sd_journal *j;
	char match[PATH_MAX + 32];
	int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
	if (r < 0)
		return r;
	snprintf(match, sizeof(match), "PMALLOC_EXE=%s", exe);
	/* Matches of one field are OR'ed, of different fields AND'ed. */
	for (size_t i = 0; i < n_uids && r >= 0; i++) {
		char m[32];
		snprintf(m, sizeof(m), "_UID=%u", (unsigned int)uids[i]);
		r = sd_journal_add_match(j, m, 0);
	}
	if (r < 0 ||
	    (r = sd_journal_add_match(j, "MESSAGE_ID=" MID_LEARNED, 0)) < 0 ||
	    (r = sd_journal_add_match(j, match, 0)) < 0 ||
	    (r = since ? sd_journal_seek_realtime_usec(j, since) : sd_journal_seek_head(j)) < 0) {
		sd_journal_close(j);
		return r;
	}
	while ((r = sd_journal_next(j)) > 0) {
		uint64_t usec;
		if (since && sd_journal_get_realtime_usec(j, &usec) >= 0 && usec < since)
			continue;
		r = add_entry(l, j);
		if (r < 0)
			break;
	}
	sd_journal_close(j);
	return r < 0 ? r : 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* The object part of a rule: the basename, unless it holds characters a
 * glob would read (then none: any object). */
static const char *object_glob(const char *path)
{
	const char *b = base_name(path);
	return b[0] && !strpbrk(b, "*?[]:\\\"@") ? b : NULL;
}

/* Was any call site of function fn (in object) written, or allocating
 * after the trigger (left out: a name would take it too)? */
static bool function_written(const struct plist *l, const struct psite *p)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct psite *q = &l->s[i];
		if (q->named && (q->written || q->late) && strcmp(q->pool, p->pool) == 0 &&
		    strcmp(q->site, p->site) == 0 &&
		    strcmp(q->object, p->object) == 0)
			return true;
	}
	/* Another pool's site in the same function: a name would take it too. */
	for (size_t i = 0; i < l->n; i++) {
		const struct psite *q = &l->s[i];
		if (q->named && strcmp(q->pool, p->pool) != 0 && strcmp(q->site, p->site) == 0 &&
		    strcmp(q->object, p->object) == 0)
			return true;
	}
	return false;
}

static bool first_of_function(const struct plist *l, size_t k)
{
	const struct psite *p = &l->s[k];
	for (size_t i = 0; i < k; i++) {
		const struct psite *q = &l->s[i];
		if (q->named && strcmp(q->pool, p->pool) == 0 && strcmp(q->site, p->site) == 0 &&
		    strcmp(q->object, p->object) == 0)
			return false;
	}
	return true;
}

static bool pool_seen_before(const struct plist *l, size_t k)
{
	for (size_t i = 0; i < k; i++)
		if (strcmp(l->s[i].pool, l->s[k].pool) == 0)
			return true;
	return false;
}

/* Sum of objects and bytes of function p's call sites in its pool. */
static void function_totals(const struct plist *l, const struct psite *p, uint64_t *objs, uint64_t *bytes,
			    size_t *calls)
{
	*objs = *bytes = 0;
	*calls = 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct psite *q = &l->s[i];
		if (q->named && strcmp(q->pool, p->pool) == 0 && strcmp(q->site, p->site) == 0 &&
		    strcmp(q->object, p->object) == 0) {
			*objs += q->objects;
			*bytes += q->bytes;
			(*calls)++;
		}
	}
}

static void put_rule(FILE *f, const struct psite *p, bool by_name, bool *first)
{
	const char *obj = object_glob(p->object);
	fputs(*first ? "\n          " : ",\n          ", f);
	*first = false;
	if (by_name) {
		fprintf(f, "\"%s%s%s\"", obj ? obj : "", obj ? ":" : "", p->site);
	} else {
		fprintf(f, "\"%s%s%s:+0x%" PRIx64 "\"", obj ? obj : "*", p->build_id[0] ? "@" : "",
			p->build_id, p->offset);
	}
}

static void put_triggers(FILE *f, const char *triggers)
{
	char *copy = strdup(triggers), *save = NULL;
	bool first = true;
	fputs("        protect = [", f);
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
		fprintf(f, "%s \"%s\"", first ? "" : ",", t);
		first = false;
	}
	fputs(" ];\n", f);
	free(copy);
}

/* Names, symbols and paths reach the text only when they are plain: the
 * journal is written by the processes that learned. */
static bool plain(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* A cap for a pool that held `learned` bytes when learned: twice that,
 * rounded up to whole MiB, at least 1 MiB.  A site may still allocate
 * while the program serves where learning did not see it do so (a reload,
 * a load not learned from): pool memory is never reused, so without a cap
 * such a pool could grow for as long as the program runs.  Past the cap,
 * allocations go to the heap. */
#define CAP_UNIT ((uint64_t)1 << 20)
static uint64_t cap_for(uint64_t learned)
{
	uint64_t twice = learned > UINT64_MAX / 4 ? UINT64_MAX / 2 : 2 * learned;
	uint64_t cap = (twice + CAP_UNIT - 1) / CAP_UNIT * CAP_UNIT;
	return cap < CAP_UNIT ? CAP_UNIT : cap;
}

/* The wrappers the pool was learned with (the union over its entries), so
 * that enforce mode names the same callers as sites: without them a site
 * named after the caller of a wrapper would take nothing. */
static void put_wrappers(FILE *f, const struct plist *l, const char *pool)
{
	char *list = NULL;
	size_t len = 0;
	FILE *b = open_memstream(&list, &len);
	if (!b)
		return;
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->s[i].pool, pool) != 0)
			continue;
		for (const char *w = l->s[i].wrappers, *e; w && (e = strchr(w, '\n')); w = e + 1) {
			char *one = strndup(w, (size_t)(e - w)), *quoted = NULL;
			if (!one || !*one || !plain(one) || asprintf(&quoted, "\"%s\"", one) < 0) {
				free(one);
				continue;
			}
			fflush(b);
			if (!list || !strstr(list, quoted))
				fprintf(b, "%s%s", ftell(b) ? ",\n          " : "\n          ", quoted);
			free(quoted);
			free(one);
		}
	}
	if (fclose(b) == 0 && list && list[0])
		fprintf(f, "        wrappers = [%s ];\n", list);
	free(list);
}

static size_t propose_pool(FILE *f, const struct plist *l, size_t k, uint64_t *ret_bytes)
{
	const char *pool = l->s[k].pool;
	uint64_t bytes = 0;
	size_t kept = 0;
	char *body = NULL;
	size_t body_len = 0;
	FILE *b = open_memstream(&body, &body_len);
	if (!b)
		return 0;
	bool first = true;
	fprintf(f, "\n      # pool \"%s\": what its sites allocated before the trigger (%s)\n", pool,
		l->s[k].triggers[0] ? l->s[k].triggers : "no trigger");
	for (size_t i = 0; i < l->n; i++) {
		const struct psite *p = &l->s[i];
		if (strcmp(p->pool, pool) != 0)
			continue;
		if (!plain(p->site) || !plain(p->object) || !plain(p->build_id)) {
			fprintf(f, "      #   left out: a site with unprintable name (%" PRIu64 " bytes)\n", p->bytes);
			continue;
		}
		if (p->written) {
			fprintf(f, "      #   left out %s (%s+0x%" PRIx64 "): %" PRIu64 " objects, %" PRIu64
				" bytes, written after protection\n", p->site, base_name(p->object), p->offset,
				p->objects, p->bytes);
			continue;
		}
		if (p->late) {
			fprintf(f, "      #   left out %s (%s+0x%" PRIx64 "): %" PRIu64 " objects, %" PRIu64
				" bytes, %" PRIu64 " of them after the first trigger: it allocates while the "
				"program serves, and a slower client could write one after protection\n",
				p->site, base_name(p->object), p->offset, p->objects, p->bytes, p->late);
			continue;
		}
		if (p->named && !function_written(l, p)) {
			if (!first_of_function(l, i))
				continue;
			uint64_t o, by;
			size_t calls;
			function_totals(l, p, &o, &by, &calls);
			fprintf(f, "      #   %s: %zu call site%s, %" PRIu64 " objects, %" PRIu64 " bytes\n", p->site,
				calls, calls == 1 ? "" : "s", o, by);
			put_rule(b, p, true, &first);
			bytes += by;         /* every call site of the function, once */
		} else {
			fprintf(f, "      #   %s+0x%" PRIx64 "%s%s: %" PRIu64 " objects, %" PRIu64 " bytes%s\n",
				base_name(p->object), p->offset, p->named ? " in " : "", p->named ? p->site : "",
				p->objects, p->bytes,
				p->named ? " (by offset: other calls in that function are not proposed)" : "");
			put_rule(b, p, false, &first);
			bytes += p->bytes;
		}
		kept++;
	}
	fclose(b);
	if (kept == 0) {
		fprintf(f, "      #   pool \"%s\" left out: no site to propose\n", pool);
		free(body);
		return 0;
	}
	fprintf(f, "      #   pool \"%s\": %zu sites, %" PRIu64 " bytes protected when learned\n", pool, kept, bytes);
	fprintf(f, "      {\n        name = \"%s\";\n        sites = [%s ];\n", pool, body);
	put_wrappers(f, l, pool);
	put_triggers(f, l->s[k].triggers);
	uint64_t cap = cap_for(bytes);
	fprintf(f, "        max_bytes = %" PRIu64 "%s;\n", cap, cap > INT32_MAX ? "L" : "");
	fputs("      }", f);
	free(body);
	*ret_bytes += bytes;
	return kept;
}

/* The whole file as text; 0, or -ENODATA when nothing can be proposed. */
static int render(const struct plist *l, const char *exe, char **ret)
{
	char *text = NULL;
	size_t len = 0, sites = 0, pools = 0;
	uint64_t bytes = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "# Proposed by pmallocctl propose from %zu learn-mode journal entries of\n# %s.\n", l->entries, exe);
	fputs("# Each pool keeps the sites that allocated before its trigger and whose\n"
	      "# memory no process wrote after it; written sites are left out below.\n"
	      "# Check it (pmallocctl check FILE), then use it in place of the learn policy.\n"
	      "version = 1;\npolicies = (\n  {\n", f);
	fprintf(f, "    name = \"%s\";\n    match = { exe = [ \"%s\" ]; };\n    mode = \"enforce\";\n    pools = (",
		l->policy, exe);
	for (size_t k = 0; k < l->n; k++) {
		if (pool_seen_before(l, k))
			continue;
		char *pt = NULL;
		size_t pl = 0;
		FILE *pf = open_memstream(&pt, &pl);
		if (!pf)
			break;
		size_t n = propose_pool(pf, l, k, &bytes);
		fclose(pf);
		if (n && pools)
			fputc(',', f);
		fputs(pt, f);
		free(pt);
		sites += n;
		pools += n > 0;
	}
	fprintf(f, "\n    );\n  }\n);\n# %zu sites in %zu pools, %" PRIu64 " bytes protected when learned.\n", sites,
		pools, bytes);
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	return pools ? 0 : -ENODATA;
}

static void count_warning(void *ctx, int line, const char *msg)
{
	fprintf(stderr, CTL_NAME ": propose: line %d: %s\n", line, msg);
	(*(size_t *)ctx)++;
}

int ctl_cmd_propose(int argc, char **argv)
{
	const char *exe_arg = NULL, *output = NULL;
	uid_t uids[TRUSTED_UIDS_MAX] = { 0, getuid() };
	size_t n_uids = getuid() == 0 ? 1 : 2;
	uint64_t since = 0;
	int c, ret;
	opterr = 0;
	optind = 1;
	while ((c = ctl_getopt(argc, argv, "propose", &ret)) != -1) {
		switch (c) {
		case 'u': {
			const struct passwd *pw = getpwnam(optarg);
			char *end;
			unsigned long u;
			errno = 0;
			u = pw ? pw->pw_uid : strtoul(optarg, &end, 10);
			if (!pw && (errno || end == optarg || *end || u >= (uid_t)-1 || optarg[0] == '-'))
				return ctl_usage_error("--uid takes a user name or number, not", optarg);
			if (n_uids == TRUSTED_UIDS_MAX)
				return ctl_usage_error("too many --uid, at most 14:", optarg);
			uids[n_uids++] = (uid_t)u;
			break;
		}
		case 'e':
			exe_arg = optarg;
			break;
		case 'S':
			if (ctl_parse_time(optarg, ctl_now_usec(), &since) < 0)
				return ctl_usage_error("invalid --since", optarg);
			break;
		case 'o':
			output = optarg;
			break;
		}
	}
	if (ret >= 0)
		return ret;
	if (optind < argc)
		return ctl_usage_error("unexpected argument", argv[optind]);
	if (!exe_arg)
		return ctl_usage_error("--exe PATH is required", NULL);
	char exe[PATH_MAX];
	if (!realpath(exe_arg, exe)) {
		fprintf(stderr, CTL_NAME ": propose: %s: %s\n", exe_arg, strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	if (!plain(exe)) {
		fputs(CTL_NAME ": propose: the executable's path has characters a policy cannot hold\n", stderr);
		return CTL_EXIT_FAILURE;
	}
	struct plist l = { 0 };
	int r = read_journal(exe, uids, n_uids, since, &l);
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": propose: cannot read the journal: %s\n", strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	int status = CTL_EXIT_FAILURE;
	char *text = NULL;
	if (l.n == 0) {
		fprintf(stderr, CTL_NAME ": propose: nothing learned for %s (run it under a policy with "
			"mode = \"learn\" first)\n", exe);
		goto out;
	}
	r = render(&l, exe, &text);
	if (r == -ENODATA) {
		if (text)
			fputs(text, stderr);
		fprintf(stderr, CTL_NAME ": propose: no site of %s can be protected without being written\n", exe);
		goto out;
	}
	if (r < 0)
		goto out;
	struct policy_set *set = NULL;
	char err[POLICY_ERR_MAX];
	size_t warnings = 0;
	if (policy_set_load_string(text, "proposal", &set, err, sizeof(err)) < 0) {
		fprintf(stderr, CTL_NAME ": propose: the proposal does not load (a bug): %s\n", err);
		goto out;
	}
	policy_lint(set, count_warning, &warnings);
	policy_set_free(set);
	if (warnings)
		goto out;
	if (!output) {
		fputs(text, stdout);
		if (fflush(stdout) == 0)
			status = CTL_EXIT_OK;
		goto out;
	}
	FILE *f = fopen(output, "we");
	if (!f) {
		fprintf(stderr, CTL_NAME ": propose: %s: %s\n", output, strerror(errno));
		goto out;
	}
	fputs(text, f);
	if (fclose(f) == 0)
		status = CTL_EXIT_OK;
	else
		fprintf(stderr, CTL_NAME ": propose: %s: %s\n", output, strerror(errno));
out:
	free(text);
	for (size_t i = 0; i < l.n; i++)
		free(l.s[i].site);
	free(l.s);
	for (size_t i = 0; i < l.n_texts; i++)
		free(l.texts[i]);
	free(l.texts);
	free(l.policy);
	return status;
}
