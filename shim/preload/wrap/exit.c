/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exit.c - exit(3) and the return from main, interposed: once either has
 * begun, a write into a pool from the exiting thread (atexit handlers,
 * C++ static destructors, library destructors: OpenSSL's cleanup writes
 * its DRBG state) is exit's, neither killed nor counted by learning, and
 * frees from then on are not learned either (life.c keeps the mark in a
 * read-only page and says what an attacker gains from it).
 *
 * The return from main: __libc_start_main is interposed and handed a
 * main of the shim's that calls the program's and marks exit before
 * returning its value to libc (which then calls its internal exit, which
 * no preload sees).  The program's main is kept in a word of the shim's,
 * written once at start-up before anything of the program's runs.
 * _exit(2), quick_exit and death by a signal are not exit: nothing runs
 * after them that could write, and nothing changes for them.
 * The first exit of a process that holds a policy is told to pmallocd
 * (PMW_EXITING), before any atexit handler runs: the clean stops that
 * pmallocctl ready counts.
 * Never changes an argument or a result.
 */
#define _GNU_SOURCE
#include "armed.h"
#include "client.h"
#include "life.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*main_t)(int, char **, char **);
static main_t program_main;

/* Exit begins here: said once, by a process with a policy and a daemon. */
static void exit_begin(int status, uint32_t how)
{
	if (life_exit_begin() && shim && client_has_daemon())
		client_notify_exiting(status, how);
}

PMALLOC_EXPORT __attribute__((noreturn)) void exit(int status)
{
	typedef void (*fn_t)(int);
	int e = errno;
	exit_begin(status, PMW_EXIT_CALLED);
	errno = e;
	fn_t fn = REAL(exit, fn_t);
	if (likely(fn))
		fn(status);
	_exit(status);             /* libc's exit does not return */
}

static int main_then_exit(int argc, char **argv, char **envp)
{
	int r = program_main(argc, argv, envp);
	int e = errno;
	exit_begin(r, PMW_EXIT_MAIN);
	errno = e;
	return r;
}

/* libc's entry into the program; no header declares it. */
int __libc_start_main(main_t main, int argc, char **argv, void (*init)(void), void (*fini)(void),
		      void (*rtld_fini)(void), void *stack_end);
PMALLOC_EXPORT int __libc_start_main(main_t main, int argc, char **argv, void (*init)(void),
				     void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	typedef int (*fn_t)(main_t, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
	fn_t fn = REAL(__libc_start_main, fn_t);
	if (unlikely(!fn))
		_exit(127);
	program_main = main;
	return fn(main ? main_then_exit : main, argc, argv, init, fini, rtld_fini, stack_end);
}
