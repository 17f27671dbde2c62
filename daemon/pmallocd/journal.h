/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal.h - the structured journal entries pmallocd writes about client
 * processes (MESSAGE_IDs of pmallocd(8)), and the per-process rate limit.
 */
#ifndef PMALLOCD_JOURNAL_H
#define PMALLOCD_JOURNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <systemd/sd-event.h>

#include "escape.h"
#include "msgid.h"
#include "policy.h"
#include "wire.h"

/* One entry under construction: FIELD=value strings in a fixed buffer.
 * A field that does not fit is left out and the entry says so
 * (PMALLOC_TRUNCATED=1) rather than failing. */
#define JENTRY_FIELDS 48
#define JENTRY_BUF (24 * 1024)
struct jentry {
	struct iovec iov[JENTRY_FIELDS];
	size_t n;
	size_t used;
	bool truncated;
	bool reserve;                    /* may use root's reserve of the queue (jwriter.h) */
	char buf[JENTRY_BUF];
};

/* The entry is pmallocd's own (or about root's processes): it may use the
 * journal writer's reserve, until jentry_about() says otherwise. */
void jentry_init(struct jentry *j, const char *message_id, int priority);
/* The entry is about a process of uid: the reserve is root's only. */
void jentry_about(struct jentry *j, uid_t uid);
void jentry_add(struct jentry *j, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* The same without printf, for entries written per client: "KEY=" then
 * the strings that follow, up to a NULL; a string value; a number. */
void jentry_add_cat(struct jentry *j, const char *key, ...) __attribute__((sentinel));
static inline void jentry_add_str(struct jentry *j, const char *key, const char *value)
{
	jentry_add_cat(j, key, value, (const char *)NULL);
}
void jentry_add_u64(struct jentry *j, const char *key, uint64_t value);
/* v in decimal into buf; returns buf. */
#define JENTRY_DEC 21
const char *jentry_dec(char buf[JENTRY_DEC], uint64_t v);
/* One field per line of text ("KEY=value\n" each, as violation_fmt.c
 * writes them). */
void jentry_add_lines(struct jentry *j, const char *text);
/* Sent through jwriter.c (never blocks), with the caller's CODE_FILE,
 * CODE_LINE, CODE_FUNC.  0 sent or queued, -errno dropped (counted). */
int jentry_send_at(struct jentry *j, const char *file, int line, const char *func);
#define jentry_send(j) jentry_send_at((j), __FILE__, __LINE__, __func__)

struct proc_entry;
struct proc_object;

/* OBJECT_SYSTEMD_UNIT, _SLICE, _CGROUP of a process, where known (proc.c
 * fills o): the fields journald gives the processes it can still see, as
 * coredump does. */
void journal_add_object(struct jentry *j, const struct proc_object *o);

void journal_handed(const struct proc_entry *e, const char *policy);
void journal_protected(const struct proc_entry *e, const struct pmw_protected *msg,
		       const char *policy, const char *pool, const char *trigger);
/* The process e (with a policy) said its exit began (PMW_EXITING): a
 * clean stop, once per process. */
void journal_exiting(const struct proc_entry *e, const struct pmw_exiting *msg);
/* The "loaded" entry, then one warning entry for each thing in the file
 * that cannot mean what it says (policy_lint(): an exe glob no real path
 * fits, a policy never used, a repeated trigger or site). */
void journal_policy_loaded(const char *path, uint64_t generation, const struct policy_set *set, bool first);
void journal_policy_refused(const char *path, const char *error, uint64_t kept_generation,
			    bool first);
/* budget.c: dropped journal entries about processes of uid were over its
 * budget of burst per interval_s. */
void journal_budget_summary(uid_t uid, uint64_t dropped, unsigned int burst, unsigned int interval_s);

/* Rate limit: per process and site, burst entries per interval; the rest
 * are counted and one summary entry (MID_DROPPED) names how many, when the
 * interval ends or the process goes away.  A site is the faulting
 * instruction for violations and the pool for protect entries. */
enum limit_kind { LIMIT_VIOLATION, LIMIT_PROTECTED };
#define LIMIT_SITES 16                   /* the last slot is shared by all further sites */
struct limit_site {
	bool used;
	enum limit_kind kind;
	uint64_t key;
	uint64_t window_end;             /* CLOCK_MONOTONIC usec */
	unsigned int count;
	uint64_t dropped;
	unsigned int burst, interval_s;  /* as in force when the window opened */
	char policy[PMW_NAME];
	char pool[PMW_NAME];
};
struct report_limit {
	struct limit_site sites[LIMIT_SITES];
	sd_event_source *timer;
};

/* true: log it; false: counted as dropped (by this limit, or by the uid's
 * journal budget, budget.h).  Arms a timer on e to emit the summary at the
 * end of the window.  e's limit state is allocated on first use (most
 * processes never report): out of memory, the entry is let through. */
bool journal_limit_admit(sd_event *event, struct proc_entry *e, enum limit_kind kind, uint64_t key,
			 const char *policy, const char *pool, unsigned int burst,
			 unsigned int interval_s);
/* Emit the summaries that are due (all of them when the process is gone)
 * and release the timer in that case. */
void journal_limit_finish(struct proc_entry *e);

#endif
