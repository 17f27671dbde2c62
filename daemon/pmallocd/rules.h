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

#include "strbuf.h"
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

/* After e's protected pools: the pools of its policy that no protect has
 * reached, each as "    pool NAME: not protected yet" with its rules
 * (below), then how many rules match nothing; once e said its rules. */
void rules_render_unprotected(struct strbuf *b, const struct proc_entry *e, bool detail);
/* The rules of e's pool shown (escaped) as pool: a count line, each
 * unresolved rule flagged, and with detail the resolved ones too. */
void rules_render_pool(struct strbuf *b, const struct proc_entry *e, const char *pool, bool detail);
/* e's per-site table (detail view), and what was not kept (rate limit). */
void rules_render_sites(struct strbuf *b, const struct proc_entry *e, uint64_t now);

#endif
