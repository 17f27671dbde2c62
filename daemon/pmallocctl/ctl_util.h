/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_util.h - the command table's use: usage, help, options, PID arguments (ctl_util.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_UTIL_H
#define PMALLOC_CTL_UTIL_H

#include "ctl.h"

#include <stdint.h>
#include <stdio.h>

/* ctl_util.c: the command table main() dispatches from, for the usage,
 * the help and each command's options; set once, first. */
void ctl_commands_set(const struct ctl_command *commands, size_t n);
/* ctl_util.c: the table's entry for name, NULL if none. */
const struct ctl_command *ctl_command(const char *name);
/* ctl_util.c: a missing or unknown command: what (and WORD) and the whole
 * usage on stderr; returns CTL_EXIT_USAGE. */
int ctl_command_error(const char *what, const char *word);
/* ctl_util.c: the usage text, on f. */
void ctl_usage(FILE *f);
/* ctl_util.c: "pmallocctl NAME --help": the command's usage and options on
 * stdout; returns the exit status. */
int ctl_help(const char *name);
/* ctl_util.c: "pmallocctl: WHAT 'WORD'" (WORD escaped; left out when NULL) and a
 * pointer to --help on stderr; returns CTL_EXIT_USAGE. */
int ctl_usage_error(const char *what, const char *word);
/* ctl_util.c: report getopt_long's '?' or ':' for argv (opterr must be 0). */
int ctl_option_error(int c, char **argv);
/* ctl_util.c: getopt_long() over command NAME's options (its entry in the
 * command table; opterr 0) that answers --help and a bad option itself: the
 * next option's value, else -1 with *ret_exit: -1 after the last option, or
 * the exit status to return. */
int ctl_getopt(int argc, char **argv, const char *name, int *ret_exit);
/* Options without a short form. */
#define CTL_OPT_FILE 0x100
#define CTL_OPT_NO_PAGER 0x101
#define CTL_OPT_AFTER_CURSOR 0x102
#define CTL_OPT_SHOW_CURSOR 0x103
#define CTL_OPT_NO_FULL 0x104
#define CTL_OPT_UNIT 0x105              /* propose --unit */
#define CTL_OPT_MIN_TIME 0x106          /* ready --min-time */
#define CTL_OPT_RELOAD 0x107            /* exercise --reload */
#define CTL_OPT_RESPAWN 0x108           /* exercise --respawn */
#define CTL_OPT_STOP 0x109              /* exercise --stop */
#define CTL_OPT_CONFIG 0x10a            /* ready --config */
/* One short letter means one thing in every command (violations' -o output
 * mode, -u unit, -r reverse, -l full, as journalctl's): these long options,
 * whose letters would mean something else there, have none.  0x120 on, so
 * that options another command adds at 0x105 on never collide. */
#define CTL_OPT_RUN 0x120              /* propose --run */
#define CTL_OPT_UID 0x121              /* propose --uid */
#define CTL_OPT_OUTPUT_FILE 0x122      /* learn, propose --output FILE */
#define CTL_OPT_ROOT 0x123             /* preload --root */
#define CTL_OPT_LIBRARY 0x124          /* preload --library */
/* A PID argument: decimal digits only, in [1, INT_MAX]; 0 or -EINVAL. */
int ctl_parse_pid(const char *s, int32_t *ret);

#endif
