/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proc_rules.h - the rules and sites tables a process told pmallocd
 * (PMW_RULES), the part of a proc_entry that rules.c alone writes, and
 * their one destructor, which the entry's (registry.c) calls.
 */
#ifndef PMALLOCD_PROC_RULES_H
#define PMALLOCD_PROC_RULES_H

#include <stdint.h>
#include <stdlib.h>

#include "wire.h"

/* What a process said of its rules and its sites (PMW_RULES): rules.c
 * fills and shows them; freed with the entry (proc_rules_free). */
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

static inline void proc_rules_free(struct proc_rules *r)
{
	if (!r)
		return;
	free(r->rules.rows);
	free(r->sites.rows);
	free(r);
}

#endif
