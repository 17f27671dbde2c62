/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal.c - structured entries about client processes, and their rate
 * limit.
 *
 * Owns: the MESSAGE_IDs and field names of pmallocd(8) (except the violation
 * entry's content: violation_fmt.c's, the formatter the shim uses too, with
 * what violation.c adds), the per process/site limiter and its summary
 * entries.
 * Never: allocates per entry (fixed buffers; a process's limit state is
 * allocated once, at its first report), writes an entry a client can
 * repeat at will without the limiter and its user's budget (budget.h), or lets a client string break a
 * one-line MESSAGE, or waits for journald (jwriter.c sends, queues or
 * drops, never blocks).
 */
#define _GNU_SOURCE
#include "journal.h"
#include "policy_lint.h"
#include "role.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "cgroup.h"
#include "jwriter.h"
#include "log.h"
#include "proc.h"
#include "proc_entry.h"
#include "strbuf.h"

#define USEC_PER_SEC 1000000ULL

void jentry_init(struct jentry *j, const char *message_id, int priority)
{
	j->n = 0;
	j->used = 0;
	j->truncated = false;
	j->reserve = true;
	jentry_add_str(j, "MESSAGE_ID", message_id);
	jentry_add_u64(j, "PRIORITY", (uint64_t)priority);
	jentry_add_str(j, "SYSLOG_IDENTIFIER", "pmallocd");
}

void jentry_about(struct jentry *j, uid_t uid)
{
	j->reserve = uid == 0;
}

void jentry_add(struct jentry *j, const char *format, ...)
{
	size_t room = sizeof(j->buf) - j->used;
	va_list ap;
	int n;

	/* Keep one slot for PMALLOC_TRUNCATED. */
	if (j->n >= JENTRY_FIELDS - 1 || room == 0) {
		j->truncated = true;
		return;
	}
	va_start(ap, format);
	n = vsnprintf(j->buf + j->used, room, format, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		j->truncated = true;
		return;
	}
	j->iov[j->n].iov_base = j->buf + j->used;
	j->iov[j->n].iov_len = (size_t)n;
	j->n++;
	j->used += (size_t)n + 1;
}

/* Fields from pieces, without printf: the hand-out entry, written once per
 * client, cost ~16,000 instructions through vsnprintf (callgrind under
 * tests/bench/daemon), ~3,000 so.  Same layout and truncation as
 * jentry_add(): "KEY=value", its NUL after it; a field that does not fit
 * whole is left out and the entry says so. */
void jentry_add_cat(struct jentry *j, const char *key, ...)
{
	size_t room = sizeof(j->buf) - j->used, len = strlen(key);
	char *out = j->buf + j->used;
	const char *piece;
	va_list ap;

	if (j->n >= JENTRY_FIELDS - 1 || len + 2 > room) {
		j->truncated = true;
		return;
	}
	memcpy(out, key, len);
	out[len++] = '=';
	va_start(ap, key);
	while ((piece = va_arg(ap, const char *)) != NULL) {
		size_t l = strlen(piece);

		if (l >= room - len) {
			va_end(ap);
			j->truncated = true;
			return;
		}
		memcpy(out + len, piece, l);
		len += l;
	}
	va_end(ap);
	out[len] = '\0';
	j->iov[j->n].iov_base = out;
	j->iov[j->n].iov_len = len;
	j->n++;
	j->used += len + 1;
}

const char *jentry_dec(char buf[JENTRY_DEC], uint64_t v)
{
	char rev[JENTRY_DEC];
	size_t n = 0, i = 0;

	do
		rev[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0)
		buf[i++] = rev[--n];
	buf[i] = '\0';
	return buf;
}

void jentry_add_u64(struct jentry *j, const char *key, uint64_t value)
{
	char dec[JENTRY_DEC];

	jentry_add_cat(j, key, jentry_dec(dec, value), (const char *)NULL);
}

void jentry_add_lines(struct jentry *j, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		int len = (int)(nl ? (size_t)(nl - text) : strlen(text));

		jentry_add(j, "%.*s", len, text);
		text += len + (nl != NULL);
	}
}

/* key then value into buf (cut to fit, as snprintf did), as one iovec. */
static struct iovec code_field(char *buf, size_t size, const char *key, const char *value)
{
	size_t k = strlen(key), v = strlen(value);

	if (v > size - 1 - k)
		v = size - 1 - k;
	memcpy(buf, key, k);
	memcpy(buf + k, value, v);
	buf[k + v] = '\0';
	return (struct iovec){ buf, k + v };
}

int jentry_send_at(struct jentry *j, const char *file, int line, const char *func)
{
	static const char trunc[] = "PMALLOC_TRUNCATED=1";
	struct iovec iov[JENTRY_FIELDS + 4];
	char code_file[128], code_line[32], code_func[96], dec[JENTRY_DEC];
	size_t n = j->n;
	int r;

	memcpy(iov, j->iov, n * sizeof(iov[0]));
	if (j->truncated)
		iov[n++] = (struct iovec){ (void *)(uintptr_t)trunc, sizeof(trunc) - 1 };
	/* Where the entry was written, as sd_journal_send() would say. */
	iov[n++] = code_field(code_file, sizeof(code_file), "CODE_FILE=", file);
	iov[n++] = code_field(code_line, sizeof(code_line), "CODE_LINE=",
			      jentry_dec(dec, (uint64_t)(line > 0 ? line : 0)));
	iov[n++] = code_field(code_func, sizeof(code_func), "CODE_FUNC=", func);

	r = jwriter_send(iov, n, j->reserve);
	if (r < 0) {
		static struct log_limit lim = LOG_LIMIT_INIT(60, 3);
		log_limited(&lim, LOG_WARNING, "cannot write to the journal: %s",
			    r == -ENOBUFS ? "journald is not reading and the queue is full" : strerror(-r));
	}
	return r;
}

/* Strings from clients and /proc arrive here escaped (escape.h): the exe
 * and comm by the registry, names by server.c, symbols by violation.c. */

void journal_add_object(struct jentry *j, const struct proc_object *o)
{
	if (o->unit)
		jentry_add_str(j, "OBJECT_SYSTEMD_UNIT", o->unit);
	if (o->slice)
		jentry_add_str(j, "OBJECT_SYSTEMD_SLICE", o->slice);
	if (o->cgroup)
		jentry_add_str(j, "OBJECT_SYSTEMD_CGROUP", o->cgroup);
}

static const char *exe_of(const struct proc_entry *e)
{
	return proc_entry_exe(e);
}

void journal_handed(const struct proc_entry *e, const char *policy)
{
	char gen_buf[JENTRY_DEC], pid_buf[JENTRY_DEC];
	const char *gen, *pid;
	struct jentry j;

	/* One per connection: a user reconnecting in a loop pays from its budget. */
	if (!budget_journal_admit(e->budget))
		return;
	jentry_init(&j, MID_HANDED, LOG_INFO);
	jentry_about(&j, proc_entry_person(e));
	gen = jentry_dec(gen_buf, e->generation);
	pid = jentry_dec(pid_buf, (uint64_t)e->pid);
	jentry_add_cat(&j, "MESSAGE", "pmalloc: policy \"", policy, "\" (generation ", gen, ", ",
		       policy_mode_name(e->mode), ") handed to PID ", pid, " (", exe_of(e), ")",
		       (const char *)NULL);
	jentry_add_str(&j, "OBJECT_PID", pid);
	jentry_add_str(&j, "PMALLOC_POLICY", policy);
	jentry_add_str(&j, "PMALLOC_MODE", policy_mode_name(e->mode));
	jentry_add_str(&j, "PMALLOC_EXE", exe_of(e));
	jentry_add_str(&j, "PMALLOC_COMM", e->comm);
	jentry_add_u64(&j, "PMALLOC_UID", (uint64_t)e->uid);
	jentry_add_str(&j, "PMALLOC_GENERATION", gen);
	/* A policy is handed at the hello, which only a process that exec'd
	 * says (a forked child shares its parent's connection). */
	jentry_add_str(&j, "PMALLOC_ROLE", role_name(0));
	journal_add_object(&j, &e->object);
	(void)jentry_send(&j);
}

void journal_protected(const struct proc_entry *e, const struct pmw_protected *msg,
		       const char *policy, const char *pool, const char *trigger)
{
	struct jentry j;

	jentry_init(&j, MID_PROTECTED, LOG_DEBUG);
	jentry_about(&j, proc_entry_person(e));
	jentry_add(&j, "MESSAGE=pmalloc: PID %d (%s) protected pool \"%s\"%s%s%s (%s, generation %" PRIu64
		   "): %" PRIu64 " new bytes, %" PRIu64 " bytes in %" PRIu64 " objects read-only",
		   (int)e->pid, exe_of(e), pool, *policy ? " of policy \"" : "", policy,
		   *policy ? "\"" : "", trigger, msg->pool_generation, msg->new_bytes, msg->protected_bytes,
		   msg->objects);
	jentry_add(&j, "OBJECT_PID=%d", (int)e->pid);
	jentry_add(&j, "PMALLOC_POLICY=%s", policy);
	jentry_add(&j, "PMALLOC_POOL=%s", pool);
	jentry_add(&j, "PMALLOC_TRIGGER=%s", trigger);
	jentry_add(&j, "PMALLOC_NEW_BYTES=%" PRIu64, msg->new_bytes);
	jentry_add(&j, "PMALLOC_PROTECTED_BYTES=%" PRIu64, msg->protected_bytes);
	jentry_add(&j, "PMALLOC_OBJECTS=%" PRIu64, msg->objects);
	jentry_add(&j, "PMALLOC_FREED_BYTES=%" PRIu64, msg->freed_bytes);
	jentry_add(&j, "PMALLOC_EXE=%s", exe_of(e));
	/* This entry's generation is the pool's (1 the first trigger's
	 * protect, then one per reload: reload.c); the policy's, which the
	 * other entries call PMALLOC_GENERATION, is PMALLOC_POLICY_GENERATION. */
	jentry_add(&j, "PMALLOC_GENERATION=%" PRIu64, msg->pool_generation);
	jentry_add(&j, "PMALLOC_POLICY_GENERATION=%" PRIu64, e->generation);
	/* Which process of the service protected: pmallocctl ready tells a
	 * worker respawned or started by a reload from the main process. */
	jentry_add(&j, "PMALLOC_ROLE=%s", role_name(e->role_depth));
	if (e->via_pid)
		jentry_add(&j, "PMALLOC_VIA_PID=%d", (int)e->via_pid);
	(void)jentry_send(&j);
}

void journal_exiting(const struct proc_entry *e, const struct pmw_exiting *msg)
{
	char gen_buf[JENTRY_DEC], pid_buf[JENTRY_DEC], via_buf[JENTRY_DEC], status_buf[JENTRY_DEC + 1];
	const char *gen, *pid, *status, *how_said, *how, *exe = exe_of(e), *role = role_name(e->role_depth);
	struct jentry j;

	if (!budget_journal_admit(e->budget))
		return;
	/* Without printf, as journal_handed(): an entry at every clean exit of
	 * a served process cost ~12,000 instructions through vsnprintf, as
	 * much as the rest of its hand-out (callgrind, /bin/true's). */
	gen = jentry_dec(gen_buf, e->generation);
	pid = jentry_dec(pid_buf, (uint64_t)e->pid);
	status_buf[0] = '-';
	jentry_dec(status_buf + 1, msg->status < 0 ? -(uint64_t)(int64_t)msg->status : (uint64_t)msg->status);
	status = msg->status < 0 ? status_buf : status_buf + 1;
	how_said = msg->how == PMW_EXIT_MAIN ? "main returned" : "exit called";
	how = msg->how == PMW_EXIT_MAIN ? "main" : "exit";
	jentry_init(&j, MID_EXITING, LOG_DEBUG);
	jentry_about(&j, proc_entry_person(e));
	jentry_add_cat(&j, "MESSAGE", "pmalloc: PID ", pid, " (", exe, ", ", role, ") of policy \"", e->policy,
		       "\" exits cleanly (", how_said, ", status ", status, ")", (const char *)NULL);
	jentry_add_str(&j, "OBJECT_PID", pid);
	jentry_add_str(&j, "PMALLOC_POLICY", e->policy);
	jentry_add_str(&j, "PMALLOC_MODE", policy_mode_name(e->mode));
	jentry_add_str(&j, "PMALLOC_EXE", exe);
	jentry_add_str(&j, "PMALLOC_ROLE", role);
	if (e->via_pid)
		jentry_add_str(&j, "PMALLOC_VIA_PID", jentry_dec(via_buf, (uint64_t)e->via_pid));
	jentry_add_str(&j, "PMALLOC_EXIT_STATUS", status);
	jentry_add_str(&j, "PMALLOC_EXIT_HOW", how);
	jentry_add_str(&j, "PMALLOC_GENERATION", gen);
	journal_add_object(&j, &e->object);
	(void)jentry_send(&j);
}

static void policy_warning(void *ctx, int line, const char *msg)
{
	const char *path = ctx;
	struct jentry j;

	jentry_init(&j, MID_POLICY, LOG_WARNING);
	jentry_add(&j, "MESSAGE=pmalloc: policy file %s:%d: warning: %s", path, line, msg);
	jentry_add(&j, "CONFIG_FILE=%s", path);
	jentry_add(&j, "CONFIG_LINE=%d", line);
	jentry_add(&j, "PMALLOC_WARNING=%s", msg);
	(void)jentry_send(&j);
}

void journal_policy_loaded(const char *path, uint64_t generation, const struct policy_set *set, bool first)
{
	size_t n_policies = set->n_policies;
	struct jentry j;

	jentry_init(&j, MID_POLICY, LOG_NOTICE);
	jentry_add(&j, "MESSAGE=pmalloc: policy file %s %s: generation %" PRIu64 ", %zu %s",
		   path, first ? "loaded" : "reloaded", generation, n_policies,
		   n_policies == 1 ? "policy" : "policies");
	jentry_add(&j, "CONFIG_FILE=%s", path);
	jentry_add(&j, "PMALLOC_GENERATION=%" PRIu64, generation);
	jentry_add(&j, "PMALLOC_POLICIES=%zu", n_policies);
	(void)jentry_send(&j);
	(void)policy_lint(set, policy_warning, (void *)(uintptr_t)path);
}

void journal_policy_refused(const char *path, const char *error, uint64_t kept_generation,
			    bool first)
{
	struct jentry j;

	jentry_init(&j, MID_POLICY, LOG_ERR);
	if (first)
		jentry_add(&j, "MESSAGE=pmalloc: policy file refused: %s", error);
	else
		jentry_add(&j, "MESSAGE=pmalloc: policy file refused, keeping generation %" PRIu64 ": %s",
			   kept_generation, error);
	jentry_add(&j, "CONFIG_FILE=%s", path);
	jentry_add(&j, "PMALLOC_ERROR=%s", error);
	if (!first)
		jentry_add(&j, "PMALLOC_GENERATION=%" PRIu64, kept_generation);
	(void)jentry_send(&j);
}

/* ---- rate limit ---- */

static void limit_summary(const struct proc_entry *e, const struct limit_site *s)
{
	struct jentry j;

	if (!budget_journal_admit(e->budget))
		return;
	jentry_init(&j, MID_DROPPED, LOG_WARNING);
	jentry_about(&j, proc_entry_person(e));
	if (s->kind == LIMIT_VIOLATION)
		jentry_add(&j, "MESSAGE=pmalloc: PID %d (%s): %" PRIu64 " more violation reports %s%" PRIx64
			   " not logged (rate limit: %u per %u s)", (int)e->pid, exe_of(e), s->dropped,
			   s->key == UINT64_MAX ? "from other sites, last at 0x" : "at ip 0x",
			   s->key == UINT64_MAX ? 0 : s->key, s->burst, s->interval_s);
	else
		jentry_add(&j, "MESSAGE=pmalloc: PID %d (%s): %" PRIu64 " more pool-protected entries for pool \"%s\""
			   " not logged (rate limit: %u per %u s)", (int)e->pid, exe_of(e), s->dropped,
			   s->pool, s->burst, s->interval_s);
	jentry_add(&j, "OBJECT_PID=%d", (int)e->pid);
	jentry_add(&j, "PMALLOC_DROPPED=%" PRIu64, s->dropped);
	jentry_add(&j, "PMALLOC_DROPPED_KIND=%s", s->kind == LIMIT_VIOLATION ? "violation" : "protected");
	if (s->kind == LIMIT_VIOLATION && s->key != UINT64_MAX)
		jentry_add(&j, "PMALLOC_FAULT_IP=0x%" PRIx64, s->key);
	jentry_add(&j, "PMALLOC_POLICY=%s", s->policy);
	jentry_add(&j, "PMALLOC_POOL=%s", s->pool);
	jentry_add(&j, "PMALLOC_EXE=%s", exe_of(e));
	jentry_add(&j, "PMALLOC_GENERATION=%" PRIu64, e->generation);
	jentry_add(&j, "PMALLOC_RATE_BURST=%u", s->burst);
	jentry_add(&j, "PMALLOC_RATE_INTERVAL_S=%u", s->interval_s);
	(void)jentry_send(&j);
}

/* Summaries for windows ended by now (all when now == UINT64_MAX); slots
 * whose window ended are freed.  Returns the earliest window end still
 * holding drops, or UINT64_MAX. */
static uint64_t limit_sweep(struct proc_entry *e, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	if (!e->limit)
		return next;
	for (size_t i = 0; i < LIMIT_SITES; i++) {
		struct limit_site *s = &e->limit->sites[i];

		if (!s->used)
			continue;
		if (now >= s->window_end) {
			if (s->dropped > 0)
				limit_summary(e, s);
			s->used = false;
		} else if (s->dropped > 0 && s->window_end < next)
			next = s->window_end;
	}
	return next;
}

static int limit_on_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct proc_entry *e = userdata;
	uint64_t next;

	next = limit_sweep(e, usec);
	if (next == UINT64_MAX)
		return sd_event_source_set_enabled(src, SD_EVENT_OFF);
	(void)sd_event_source_set_time(src, next);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static void limit_arm(sd_event *event, struct proc_entry *e, uint64_t when)
{
	uint64_t cur;
	int enabled = SD_EVENT_OFF, r;

	if (!e->limit->timer) {
		r = sd_event_add_time(event, &e->limit->timer, CLOCK_MONOTONIC, when, 100 * 1000,
				      limit_on_timer, e);
		if (r < 0)
			log_warning_errno(r, "cannot arm the rate-limit timer: %m");
		return;
	}
	(void)sd_event_source_get_enabled(e->limit->timer, &enabled);
	if (enabled != SD_EVENT_OFF && sd_event_source_get_time(e->limit->timer, &cur) >= 0 && cur <= when)
		return;
	(void)sd_event_source_set_time(e->limit->timer, when);
	(void)sd_event_source_set_enabled(e->limit->timer, SD_EVENT_ONESHOT);
}

bool journal_limit_admit(sd_event *event, struct proc_entry *e, enum limit_kind kind, uint64_t key,
			 const char *policy, const char *pool, unsigned int burst,
			 unsigned int interval_s)
{
	struct limit_site *s = NULL, *free_slot = NULL;
	uint64_t now = 0;

	if (sd_event_now(event, CLOCK_MONOTONIC, &now) < 0)
		return true;
	if (burst == 0 || interval_s == 0)
		return true;                     /* limit off */
	if (!e->limit) {
		e->limit = calloc(1, sizeof(*e->limit));
		if (!e->limit)
			return true;
	}

	for (size_t i = 0; i < LIMIT_SITES - 1; i++) {
		struct limit_site *c = &e->limit->sites[i];

		if (c->used && now >= c->window_end && c->dropped == 0)
			c->used = false;         /* expired, nothing to report: reuse */
		if (c->used && c->kind == kind && c->key == key) {
			s = c;
			break;
		}
		if (!c->used && !free_slot)
			free_slot = c;
	}
	if (!s)
		s = free_slot;
	if (!s) {
		/* Every slot busy: all further sites share the last one. */
		s = &e->limit->sites[LIMIT_SITES - 1];
		key = UINT64_MAX;
	}
	if (!s->used || now >= s->window_end) {
		if (s->used && s->dropped > 0)
			limit_summary(e, s);
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->kind = kind;
		s->key = key;
		s->window_end = now + (uint64_t)interval_s * USEC_PER_SEC;
		s->burst = burst;
		s->interval_s = interval_s;
		str_copy(s->policy, sizeof(s->policy), policy);
		str_copy(s->pool, sizeof(s->pool), pool);
	}

	if (s->count < s->burst) {
		/* The uid's budget is the second gate: not counted here when it
		 * says no (its own summary counts it). */
		if (!budget_journal_admit(e->budget))
			return false;
		s->count++;
		return true;
	}
	s->dropped++;
	if (s->dropped == 1)
		limit_arm(event, e, s->window_end);
	return false;
}

void journal_limit_finish(struct proc_entry *e)
{
	if (!e->limit)
		return;
	(void)limit_sweep(e, UINT64_MAX);
	e->limit->timer = sd_event_source_disable_unref(e->limit->timer);
	free(e->limit);
	e->limit = NULL;
}

void journal_budget_summary(uid_t uid, uint64_t dropped, unsigned int burst, unsigned int interval_s)
{
	struct jentry j;

	jentry_init(&j, MID_DROPPED, LOG_WARNING);
	jentry_about(&j, uid);
	jentry_add(&j, "MESSAGE=pmalloc: %" PRIu64 " more journal entries about processes of uid %u"
		   " not logged (per-user budget: %u per %u s)", dropped, (unsigned)uid, burst, interval_s);
	jentry_add(&j, "PMALLOC_DROPPED=%" PRIu64, dropped);
	jentry_add(&j, "PMALLOC_DROPPED_KIND=budget");
	jentry_add(&j, "PMALLOC_UID=%u", (unsigned)uid);
	jentry_add(&j, "PMALLOC_RATE_BURST=%u", burst);
	jentry_add(&j, "PMALLOC_RATE_INTERVAL_S=%u", interval_s);
	(void)jentry_send(&j);
}
