/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rules.h - what a served process said about its pools (PMW_RULES): each
 * rule of its policy resolved or not, and its per-site table; kept with
 * its registry entry for status (rules.c).
 */
#ifndef PMALLOCD_RULES_H
#define PMALLOCD_RULES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire.h"

#define RULES_BURST 10                   /* PMW_RULES a process may send ... */
#define RULES_INTERVAL_USEC (10 * 1000000ULL)   /* ... per this long; the rest are counted */

struct proc_entry;

/* Take m (checked by wire_check_rules()) from e's process at now: 0 kept,
 * -EPERM when it names a policy or pool not handed out on the connection
 * (to handed, the process that connected: e, or the parent of e, a
 * forked child; nothing kept), -EBUSY over RULES_BURST (counted, nothing
 * kept), -ENOMEM. */
int rules_take(struct proc_entry *e, const struct proc_entry *handed, const struct pmw_rules *m,
	       uint64_t now);
/* pmallocctl status PID by viewer at now: true when e's process should be
 * asked for a fresh site table (PMW_SITES_REQ) now: viewer may see it, it
 * reads pmallocd's orders (a learn policy, or a pool with the manual
 * trigger: the shim's orders thread), and it was not asked within the last
 * second.  Marks it asked.  ENOMEM: false. */
bool rules_ask(struct proc_entry *e, uid_t viewer, uint64_t now);

/* A forked child's entry: its parent's rules table (the child inherited
 * its resolution with its memory), not its sites.  0 or -ENOMEM. */
int rules_inherit(struct proc_entry *child, const struct proc_entry *parent);

struct status_data;
/* Status records (shim/wire.h) once e said its rules: the RULE records of
 * pool (as shown: escaped), every one of its rules. */
void rules_emit_pool(struct status_data *d, const struct proc_entry *e, const char *pool);
/* After e's protected pools: a POOL record (not protected) for each pool
 * of its policy no protect has reached, each with its RULE records. */
void rules_emit_unprotected(struct status_data *d, const struct proc_entry *e);
/* e's per-site table (detail view): SITE records. */
void rules_emit_sites(struct status_data *d, const struct proc_entry *e);

#endif
