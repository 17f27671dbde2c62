/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * journal.h - the shim's own journal entries, for when no pmallocd runs:
 * the native protocol (one datagram to /run/systemd/journal/socket),
 * async-signal-safe.
 */
#ifndef PMALLOC_JOURNAL_H
#define PMALLOC_JOURNAL_H

#include "wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Capture what the entries say about this process (exe, comm, systemd
 * unit and cgroup) at start-up: by the time a violation is written the
 * process may be dying, and journald only reads them from /proc while it
 * lives.  exe must stay valid (client.c's read-only page). */
void journal_init(const char *exe, const char *comm);
/* The violation record r as an entry (violation_fmt.c), rate-limited. */
void journal_violation(const struct pmw_report *r);
/* The fault handler found replaced or SIGSEGV blocked, and put right
 * (fault.c's fault_recheck, through hooks.h): one entry, said each time. */
void journal_fault_notice(const char *what);
void journal_protected(const struct pmw_protected *m);
/* Count one violation report that reached neither pmallocd nor the
 * journal; the count is summarised in a "reports dropped" entry (at the
 * next window, or when the process exits). */
void journal_note_dropped(void);

/* learn mode: one pool and allocation context's result (learn.c), normal
 * context.  The fields are the learned entry's (README, "Learned entries"). */
struct journal_learned {
	const char *policy, *pool, *site, *object, *build_id, *triggers, *exe, *reason;
	const char *run, *exe_build_id, *chain, *message;
	const char *const *wrappers;   /* the pool's wrapper rules: one PMALLOC_WRAPPER each */
	size_t n_wrappers;
	uint64_t offset, policy_loaded_us;
	uint64_t objects, bytes, live_objects, live_bytes, freed_objects, freed_bytes;
	uint64_t trigger_live_objects, trigger_live_bytes;   /* not freed before the trigger */
	uint64_t late_objects, late_bytes, written_bytes;
	bool written, named;
	uint32_t seq, ctx;             /* the flush of this process, the context's id in it */
	uint64_t unsent;               /* entries journald did not take so far, this process */
	bool protected;                /* its pool protected by a trigger when flushed */
	const char *exec;              /* the exec flush: the program about to run, else "" */
	bool secure_exec;              /* that program runs in secure mode: without the shim */
	unsigned wait_ms;              /* up to this long for room in journald's queue (0: none) */
};
/* Connect a socket to the journal now (before a chroot): later entries go
 * through it where the journal's path cannot be reached.  Normal context. */
void journal_keep_socket(void);
/* true when journald took it. */
bool journal_learned(const struct journal_learned *m);
/* take = "until-trigger": site of pool allocated after the pool's first
 * trigger, and went to the heap; said once per site (take.c). */
void journal_take_late(const char *policy, const char *pool, const char *site);
/* A site or wrapper rule that matched no function at start-up (resolve.c),
 * or, dropped, one left out of an object that more than
 * POLICY_OBJECT_NAME_RULES_MAX rules by name fit; said once per process;
 * normal context. */
void journal_unmatched(const char *policy, const char *pool, const char *kind, const char *rule, bool dropped);

/* No pool of policy protects in this process's role (its PMALLOC_ROLE,
 * as every entry of the shim's): it runs unprotected; said once per
 * process (respawn.c).  Async-signal-safe (a fork child handler). */
void journal_role_unprotected(const char *policy, const char *role);

#endif
