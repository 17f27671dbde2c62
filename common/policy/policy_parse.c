/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_parse.c - the policy model, level by level, from what libconfig
 * read (see policy_parse.h): the top level, daemon, each policy, its
 * match, its pools, their sites, wrappers, triggers and roles; and the
 * words the file uses for the model's choices (calls, modes, protections,
 * takes, durations), which policy.h gives everyone.
 *
 * Owns what each level may hold: its keys, their defaults and bounds, and
 * what a missing or empty one means.  Every value is read through
 * policy_setting.c's checks; nothing reaches the model unchecked.  Never
 * prints or logs (the message goes to the caller's err), never keeps
 * state between calls, never runs in a signal handler or while the shim
 * interposes (it allocates and calls libconfig).
 */
#include "policy_parse.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/un.h>

#include <libconfig.h>

#include "common.h"
#include "policy.h"
#include "policy_setting.h"
#include "role.h"

/* Bounds on what a file may ask for.  Far above any sane policy; they exist
 * so that a hostile file costs bounded memory and time (duplicate checks are
 * quadratic).  (The entries of one array, and a glob's length:
 * policy_setting.c.) */
#define POLICIES_MAX 1024
#define POOLS_MAX 256

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

/* ---- the words of the file ---- */

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
	r = setting_get_uint(c, s, key, min, max, &v);
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
			return fail(c, LINE(g), "daemon must be a group { ... }, not %s", setting_type_name(g));
		r = setting_check_keys(c, g, daemon_keys, "daemon");
		if (r < 0)
			return r;
		s = config_setting_get_member(g, "socket");
		if (s) {
			r = setting_get_string(c, s, "socket", &sock);
			if (r < 0)
				return r;
			if (sock[0] != '/')
				return fail(c, LINE(s), "socket %s is not an absolute path", Q(sock));
			if (strlen(sock) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
				return fail(c, LINE(s), "socket path is longer than %zu bytes",
					    sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
			if (setting_has_control_char(sock))
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
	return setting_dup_string(c, sock, &d->socket);
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
		return setting_parse_offset_site(c, e, "site", rule, colon ? (size_t)(colon - rule) : 0, fn, site);
	if (colon) {
		if (colon == rule)
			return fail(c, LINE(e), "site %s: empty OBJECT part", Q(rule));
		if (!*fn)
			return fail(c, LINE(e), "site %s: empty FUNCTION part", Q(rule));
		r = setting_check_glob(c, e, "site", rule, rule, (size_t)(colon - rule));
		if (r < 0)
			return r;
	}
	r = setting_check_glob(c, e, "site", rule, fn, strlen(fn));
	if (r < 0)
		return r;
	if (colon) {
		site->object = strndup(rule, (size_t)(colon - rule));
		if (!site->object)
			return oom(c);
	}
	return setting_dup_string(c, fn, &site->function);
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
	r = setting_named_entry(c, g, "pool", "pools", pool_keys, i, &pool->name);
	if (r < 0)
		return r;

	if (!config_setting_get_member(g, "sites"))
		return fail(c, LINE(g), "pool %s without sites", Q(pool->name));
	r = setting_member_entries(c, g, "sites", true, "the pool would never be used", sizeof(*pool->sites),
				  parse_site, &room, &pool->n_sites);
	pool->sites = room;
	if (r < 0)
		return r;

	r = setting_member_globs(c, g, "wrappers", "wrapper", true, true, &pool->wrappers, &pool->n_wrappers);
	if (r < 0)
		return r;

	/* protect is optional and may be empty: such a pool is filled and capped
	 * but never protected automatically. */
	room = NULL;
	r = setting_member_entries(c, g, "protect", true, NULL, sizeof(*pool->triggers), parse_trigger, &room,
				   &pool->n_triggers);
	pool->triggers = room;
	if (r < 0)
		return r;

	s = config_setting_get_member(g, "max_bytes");
	if (s) {
		r = setting_get_uint(c, s, "max_bytes", 0, INT64_MAX, &pool->max_bytes);
		if (r < 0)
			return r;
	}
	unsigned int take;
	r = setting_get_choice(c, g, "take", take_names, ARRAY_SIZE(take_names), "\"always\" or \"until-trigger\"",
			       &take);
	if (r < 0)
		return r;
	pool->take = (enum policy_take)take;
	return parse_roles(c, g, &pool->roles);
}

static int parse_uid(const struct parse_ctx *c, const config_setting_t *e, void *record, size_t i)
{
	uint64_t v = 0;
	int r = setting_get_uint(c, e, "uid", 0, UID_MAX_VALID, &v);

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
		return fail(c, LINE(g), "match must be a group { ... }, not %s", setting_type_name(g));
	r = setting_check_keys(c, g, match_keys, "match");
	if (r < 0)
		return r;
	if (config_setting_length(g) == 0)
		return fail(c, LINE(g), "match is empty: give exe, comm or uid "
			    "(a policy without them would match nothing)");
	r = setting_member_globs(c, g, "exe", "exe", false, false, &p->match_exe, &p->n_match_exe);
	if (r < 0)
		return r;
	r = setting_member_globs(c, g, "comm", "comm", false, false, &p->match_comm, &p->n_match_comm);
	if (r < 0)
		return r;
	/* uids are numbers only: a name would need NSS lookups, which the shim
	 * cannot make safely at start-up, and could mean a different account on
	 * each machine or after each reload. */
	r = setting_member_entries(c, g, "uid", false, "leave the key out instead", sizeof(*p->match_uid),
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
	r = setting_named_entry(c, g, "policy", "policies", policy_keys, i, &p->name);
	if (r < 0)
		return r;

	r = parse_match(c, g, p);
	if (r < 0)
		return r;

	r = setting_get_choice(c, g, "mode", mode_names, ARRAY_SIZE(mode_names),
			       "\"enforce\", \"audit\" or \"learn\"", &choice);
	if (r < 0)
		return r;
	p->mode = (enum policy_mode)choice;
	r = setting_get_choice(c, g, "protection", protection_names, ARRAY_SIZE(protection_names),
			       "\"mprotect\" or \"seal\"", &choice);
	if (r < 0)
		return r;
	p->protection = (enum policy_protection)choice;

	s = config_setting_get_member(g, "pools");
	if (!s)
		return fail(c, LINE(g), "policy %s without pools", Q(p->name));
	r = setting_parse_groups(c, s, "pools", POOLS_MAX, "the policy would do nothing", sizeof(*p->pools),
				 parse_pool, &room, &p->n_pools);
	p->pools = room;
	return r;
}

int policy_parse_root(const struct parse_ctx *c, const config_setting_t *root,
		      struct policy_set *set)
{
	const config_setting_t *s;
	void *room = NULL;
	long long version = 0;
	int r;

	r = setting_check_keys(c, root, root_keys, "the top level");
	if (r < 0)
		return r;
	s = config_setting_get_member(root, "version");
	if (!s)
		return fail(c, 0, "missing \"version = 1;\"");
	r = setting_get_int(c, s, "version", &version);
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
	r = setting_parse_groups(c, s, "policies", POLICIES_MAX, NULL, sizeof(*set->policies), parse_policy,
				 &room, &set->n_policies);
	set->policies = room;
	return r;
}
