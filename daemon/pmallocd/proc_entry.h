/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proc_entry.h - what pmallocd knows about one process it served (struct
 * proc_entry), for every file that reads it.  Each group of fields has one
 * writer, named at the group: the registry (registry.c: identity, lifetime,
 * pools, counters), proc.c (the systemd object), journal.c (the rate limit)
 * and rules.c (the rules and sites tables, proc_rules.h); the entry's
 * destructor (registry.c) calls each part's own.  The parts other files
 * own are declared here only by name.
 */
#ifndef PMALLOCD_PROC_ENTRY_H
#define PMALLOCD_PROC_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "budget.h"
#include "escape.h"
#include "policy.h"
#include "proc.h"
#include "wire.h"

#define REGISTRY_POOLS 32                /* pools tracked per process */

struct report_limit;
struct proc_rules;
struct uid_budget;

struct reg_pool {
	char policy[PMW_NAME];
	char name[PMW_NAME];
	char last_trigger[PMW_NAME];
	uint64_t protected_bytes;        /* as last reported by the process */
	uint64_t objects;
	uint64_t protects;
	/* Its generations (protects that made memory read-only), the latest
	 * PMW_SR_G_KEPT: a ring, gens[(n_gens - 1) % PMW_SR_G_KEPT] the last. */
	struct reg_generation {
		uint64_t generation, new_bytes, protected_bytes, usec, freed_bytes;
		char trigger[PMW_NAME];
	} gens[PMW_SR_G_KEPT];
	uint64_t n_gens;
};

struct proc_entry {
	struct proc_entry *prev, *next;
	pid_t pid;
	pid_t via_pid;                   /* 0, or the peer whose connection a forked child used */
	uint8_t role_depth;              /* its role (role.h): 0 main (it said hello), else its
					  * depth below via_pid in the kernel's process tree */
	uint32_t roles_named;            /* the roles its policy's pools protect in (role.h's mask;
					  * a pool without roles names all); 0 before a hand-out */
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
	 * time it may be gone): proc.c's, which alone writes it. */
	struct proc_object object;
	bool has_policy;
	char policy[PMW_NAME];
	enum policy_mode mode;
	uint64_t generation;             /* of the set the hand-out came from */
	uint64_t since_usec;             /* CLOCK_MONOTONIC */
	uint64_t exited_usec;            /* 0 while its connection is open */
	bool exit_said;                  /* it said its exit began (PMW_EXITING): journaled once */
	struct reg_pool *pools;
	size_t n_pools;
	uint64_t pools_untracked;        /* protect messages for pools past REGISTRY_POOLS */
	uint64_t protects;
	uint64_t violations;             /* reports received */
	uint64_t violations_dropped;     /* of those, not logged (rate limit) */
	uint64_t protects_dropped;
	uint64_t handler_notices;        /* PMW_NOTICEs: its fault handler put right behind its back */
	uint32_t handler_what;           /* their PMW_NOTICE_* bits, together */
	struct report_limit *limit;      /* journal.c's (it alone writes it), allocated on first report */
	struct uid_budget *budget;       /* its uid's (budget.h); NULL once retired */
	/* The pools of the policy handed out, for pmallocctl protect: each
	 * "M" (a manual trigger), "A" (one pmallocctl protect asked for)
	 * or "-", then the name and its NUL.  NULL
	 * without a hand-out; freed when the entry retires. */
	char *handed_pools;
	size_t handed_pools_len;
	struct proc_rules *rules;        /* NULL until it says (rules.c's; proc_rules.h) */
};

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

#endif
