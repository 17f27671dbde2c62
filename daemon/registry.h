/*
 * registry.h - what pmallocd knows about each process it served: identity
 * (from the kernel), the hand-out, pools and protected bytes, violation
 * counts; live entries, then a bounded history of exited ones.
 */
#ifndef PMALLOCD_REGISTRY_H
#define PMALLOCD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "budget.h"
#include "escape.h"
#include "journal.h"
#include "policy.h"
#include "proc.h"
#include "wire.h"

#define REGISTRY_HISTORY 256             /* exited processes kept for status */
#define REGISTRY_POOLS 32                /* pools tracked per process */

struct reg_pool {
	char policy[PMW_NAME];
	char name[PMW_NAME];
	char last_trigger[PMW_NAME];
	uint64_t protected_bytes;        /* as last reported by the process */
	uint64_t objects;
	uint64_t protects;
};

/* What a process said of its rules and its sites (PMW_RULES): rules.c
 * fills and shows them; freed with the entry. */
struct rules_table {
	struct pmw_row *rows;            /* n of them; strings NUL-terminated (as received) */
	uint32_t n, total, unresolved;
	uint64_t usec;                   /* CLOCK_MONOTONIC when received; 0: never */
};

struct proc_rules {
	struct rules_table rules, sites;
	uint64_t window_start;
	unsigned int window_n;
	uint64_t refused;                /* over rules.h's RULES_BURST */
	uint64_t asked_usec;             /* a fresh site table asked for then; 0 never */
};

struct proc_entry {
	struct proc_entry *prev, *next;
	pid_t pid;
	pid_t via_pid;                   /* 0, or the peer whose connection a forked child used */
	uid_t uid;
	gid_t gid;                       /* its effective gid as it connected (module files are
					  * opened with uid and gid: symbolize.h) */
	uint64_t starttime;              /* /proc/PID/stat; 0 unknown (or not read yet:
					  * starttime_by) */
	/* Its start time is read when status needs it, not at its HELLO
	 * (/proc/PID/comm costs a third of /proc/PID/stat): then, the start
	 * time of the process holding pid, if no later than this (CLOCK_BOOTTIME
	 * in clock ticks when the kernel vouched pid was this process), else
	 * PROC_STARTTIME_NONE.  0: starttime is final. */
	uint64_t starttime_by;
	char *exe;                       /* /proc/PID/exe; NULL when it could not be read */
	char *exe_shown;                 /* exe escaped (escape.h): what entries and status show */
	bool exe_deleted;
	pid_t exe_pid;                   /* 0, or the process exe was read from instead (see
					  * sender_entry(): a forked child gone too soon) */
	char comm[ESCAPED_SIZE(PROC_COMM_MAX)];  /* escaped: display only */
	/* systemd's view of the process, taken when it connected (by report
	 * time it may be gone): malloc'ed, NULL where unknown (journal.c). */
	char *unit, *slice, *cgroup;
	bool has_policy;
	char policy[PMW_NAME];
	enum policy_mode mode;
	uint64_t generation;             /* of the set the hand-out came from */
	uint64_t since_usec;             /* CLOCK_MONOTONIC */
	uint64_t exited_usec;            /* 0 while its connection is open */
	struct reg_pool *pools;
	size_t n_pools;
	uint64_t pools_untracked;        /* protect messages for pools past REGISTRY_POOLS */
	uint64_t protects;
	uint64_t violations;             /* reports received */
	uint64_t violations_dropped;     /* of those, not logged (rate limit) */
	uint64_t protects_dropped;
	struct report_limit *limit;      /* journal.c's, allocated on first report */
	struct uid_budget *budget;       /* its uid's (budget.h); NULL once retired */
	/* The pools of the policy handed out, for pmallocctl protect: each
	 * "M" (a manual trigger) or "-", then the name and its NUL.  NULL
	 * without a hand-out; freed when the entry retires. */
	char *handed_pools;
	size_t handed_pools_len;
	struct proc_rules *rules;        /* NULL until it says (rules.c) */
};

struct registry {
	struct proc_entry *live;         /* newest first */
	size_t n_live;
	struct proc_entry *history;      /* newest first */
	struct proc_entry *history_tail;
	size_t n_history;
	uint64_t n_evicted;
};

void registry_init(struct registry *r);
void registry_done(struct registry *r);

/* A new live entry (zeroed but for pid, uid, since); NULL on ENOMEM. */
struct proc_entry *registry_add(struct registry *r, pid_t pid, uid_t uid, uint64_t now);
/* The connection is gone: flush its rate-limit summaries, move it to the
 * history (dropping the oldest past REGISTRY_HISTORY). */
void registry_retire(struct registry *r, struct proc_entry *e, uint64_t now);

/* Take exe (malloc'ed, raw from /proc; may be NULL) as e's, with its
 * escaped form for display.  0 or -ENOMEM (exe is freed then). */
int proc_entry_set_exe(struct proc_entry *e, char *exe, bool deleted);
/* comm as read from /proc, kept escaped. */
void proc_entry_set_comm(struct proc_entry *e, const char *comm);
/* What entries and status show as e's exe: escaped, "?" when unknown. */
static inline const char *proc_entry_exe(const struct proc_entry *e)
{
	return e->exe_shown ? e->exe_shown : "?";
}

/* The person e counts as (budget.h: a setuid program its real uid's, a
 * subordinate uid its owner's): whose reserve its journal entries may use. */
static inline uid_t proc_entry_person(const struct proc_entry *e)
{
	return e->budget ? e->budget->uid : e->uid;
}

/* The pool (policy, name) of e, added on first use; NULL when e already
 * tracks REGISTRY_POOLS pools or on ENOMEM. */
struct reg_pool *proc_entry_pool(struct proc_entry *e, const char *policy, const char *name);

/* Remember the pools of p, the policy handed to e (as it was then: a reload
 * does not change what the process got).  0 or -ENOMEM. */
int proc_entry_set_handed(struct proc_entry *e, const struct policy *p);
/* Whether e's handed policy has pool name with a manual trigger: 0 yes,
 * -ENOENT no such pool, -EPERM no manual trigger, -ENODATA no hand-out. */
int proc_entry_handed_manual(const struct proc_entry *e, const char *name);
/* Whether a report or protect message naming (policy, pool) can come from
 * a process handed e's policy: 0 when policy is e's and pool one of its
 * pools, or policy is "" (an API pool, outside any policy); -EPERM else. */
int proc_entry_handed_check(const struct proc_entry *e, const char *policy, const char *pool);

#endif
