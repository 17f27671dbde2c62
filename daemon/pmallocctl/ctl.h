/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl.h - the pieces of pmallocctl, the command-line front of pmalloc.
 *
 * Owns the command table's entry and the command entry points (each parses
 * its own arguments, prints, and returns a process exit code), for
 * pmallocctl.c; the helpers under them (which return 0 or -errno, write
 * results only on success, and never print) have a header each, beside
 * their file (ctl_util.h, ctl_client.h, ctl_escape.h ...).  Nothing here is used by pmallocd or the
 * shim; pmallocctl never writes to the journal or the daemon's state: it
 * reads, and asks pmallocd (protect, learn-flush, sites) to pass a request
 * on to a process.  It writes a file only where the command line names it:
 * learn and propose --output FILE, preload's drop-in.
 */
#ifndef PMALLOC_CTL_H
#define PMALLOC_CTL_H

#include "paths.h"
#include "policy.h"
#include <stdbool.h>
#include <stdint.h>

#define CTL_NAME "pmallocctl"
#define CTL_VERSION PMALLOC_VERSION         /* the Makefile's VERSION (paths.h) */
#define CTL_DEFAULT_CONF POLICY_DEFAULT_FILE
#define CTL_DEFAULT_SOCKET POLICY_DEFAULT_SOCKET
#define CTL_STATUS_TIMEOUT_MS 5000           /* to wait for pmallocd's answer */

/* Exit statuses, as systemctl uses them. */
enum ctl_exit {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAILURE = 1,
	CTL_EXIT_USAGE = 2,
	CTL_EXIT_NOT_RUNNING = 3,            /* status, protect: no daemon answers */
};

/* An entry of the command table (pmallocctl.c). */
struct ctl_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;        /* the command's line(s) in the global usage */
	const char *help;            /* what "pmallocctl NAME --help" adds */
	/* Its options, as getopt_long takes them (ctl_getopt()): each command
	 * has a table of its own, so that an abbreviation ("--so") resolves
	 * against that command's options only. */
	const char *opts;
	const struct option *options;
};

/* Commands: argv[0] is the command name; the return value is the exit status. */
int ctl_cmd_check(int argc, char **argv);
int ctl_cmd_status(int argc, char **argv);
int ctl_cmd_protect(int argc, char **argv);
int ctl_cmd_violations(int argc, char **argv);
int ctl_cmd_preload(int argc, char **argv);
int ctl_cmd_propose(int argc, char **argv);
int ctl_cmd_learn_flush(int argc, char **argv);
int ctl_cmd_sites(int argc, char **argv);
int ctl_cmd_learn(int argc, char **argv);
int ctl_cmd_exercise(int argc, char **argv);
int ctl_cmd_ready(int argc, char **argv);

#endif
