/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * life.c - this process's role and whether it exits (life.h).
 *
 * Owns one page, read-only but while a fork child handler or the first
 * exit changes it (two mprotects each, a few microseconds, once per fork
 * and once per process): which role the process plays decides which pools
 * protect in it, and whether exit has begun decides that a write to a
 * protected pool is let through, so neither is kept in a word a stray
 * write could flip.  Never allocates; async-signal-safe readers.
 *
 * What an attacker gains from the exit state: a write let through needs
 * exit to have begun on the very thread that writes (its kernel thread id
 * is recorded with the mark).  To set the mark she must run life.c's code,
 * that is call exit(): the program then ends, its cleanup writes what it
 * would have written anyway.  The pool memory opened for cleanup is not
 * read by a process that is ending.  A thread other than the exiting one
 * is still enforced.
 */
#define _GNU_SOURCE
#include "life.h"
#include "arena.h"
#include "common.h"
#include "os.h"

#include <pthread.h>

struct life_ro {
	unsigned int depth;             /* 0: the process that exec'd */
	uint64_t fork_ns;               /* when it was forked; 0: exec'd */
	int exit_tid;                   /* the thread exit began on */
	bool exiting;
};
static union {
	struct life_ro s;
	unsigned char page[RO_PAGE];
} life_ro __attribute__((aligned(RO_PAGE)));
const struct ro_span life_ro_span = { &life_ro, sizeof(life_ro) };   /* ro.h: init.c lists it */
static_assert(sizeof(life_ro) == RO_PAGE, "the life state is one page");

static _Atomic int life_locked;         /* the page is read-only (a hint: locking twice is harmless) */
static _Atomic int exit_claimed;        /* the first exit takes the page */

/* Open the page for a change; false when it cannot be (out of memory
 * mappings): the change is then not made, the state keeps saying what it
 * said (a role one level up, exit not begun: the stricter answers). */
static bool open_page(void)
{
	if (!atomic_load(&life_locked))
		return true;
	return os_protect_rw(&life_ro, sizeof(life_ro)) == 0;
}

static void close_page(void)
{
	if (os_protect_ro(&life_ro, sizeof(life_ro)) == 0)
		atomic_store(&life_locked, 1);
}

/* In the child, before any other handler of the shim's (registered
 * first): the pools' fork handling reads the role. */
static void life_after_fork_child(void)
{
	atomic_store(&exit_claimed, 0);
	if (!open_page())
		return;
	if (life_ro.s.depth < ROLE_DEPTH_MAX)
		life_ro.s.depth++;
	life_ro.s.fork_ns = os_monotonic_ns(false);
	life_ro.s.exiting = false;      /* the parent's exit is not the child's */
	life_ro.s.exit_tid = 0;
	close_page();
}

static void init_once(void)
{
	pthread_atfork(NULL, NULL, life_after_fork_child);
	close_page();
}

void life_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, init_once);
}

unsigned int life_depth(void)
{
	return life_ro.s.depth;
}

const char *life_role(void)
{
	return role_name(life_ro.s.depth);
}

uint64_t life_fork_ns(void)
{
	return life_ro.s.fork_ns;
}

bool life_exit_begin(void)
{
	if (atomic_exchange(&exit_claimed, 1))
		return false;
	if (!open_page())
		return true;
	life_ro.s.exit_tid = os_gettid();
	life_ro.s.exiting = true;
	close_page();
	return true;
}

bool life_exiting(void)
{
	return life_ro.s.exiting;
}

bool life_exiting_here(void)
{
	return life_ro.s.exiting && life_ro.s.exit_tid == os_gettid();
}
