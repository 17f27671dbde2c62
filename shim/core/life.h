/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * life.h - where this process is in its life: its role among the
 * processes of one executable (main, child, child.child...) and whether
 * exit has begun, both kept in a page of their own that is read-only but
 * for the instants life.c changes it (at a fork, at exit).
 */
#ifndef PMALLOC_LIFE_H
#define PMALLOC_LIFE_H

#include "role.h"

#include <stdbool.h>
#include <stdint.h>
#include "ro.h"

/* Install the fork handler (once; the constructor of the shim or the
 * first pool, whichever comes first, through pool_global_init). */
void life_init(void);
/* This process's depth below the process that exec'd: 0 for main. */
unsigned int life_depth(void);
/* Its role's name: "main", "child", "child.child", "child.child.child".
 * Async-signal-safe (a read-only page). */
const char *life_role(void);
/* CLOCK_MONOTONIC when this process was forked, 0 for the one that
 * exec'd: a respawned child's after: triggers count from it. */
uint64_t life_fork_ns(void);
/* Exit has begun on this thread: exit() called, or main returned.  Once;
 * later calls (a nested exit from an atexit handler) change nothing and
 * return false; true from the call that began it. */
bool life_exit_begin(void);
/* Is exit under way on this thread (the thread that began it)?  A write
 * to a pool from it is exit's cleanup, neither killed nor learned.
 * Async-signal-safe. */
bool life_exiting_here(void);
/* Has exit begun in this process, on any thread? */
bool life_exiting(void);

/* This file's read-only page, for the one list (ro.h). */
extern const struct ro_span life_ro_span;

#endif
