/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reload.h - a service's reload (reload.c): the window from the delivery
 * of SIGHUP, SIGUSR1 or SIGUSR2 to a handler of the program's until its main thread next
 * waits, in which the main thread's writes to protected pool memory are
 * let through and its allocations from the pools' sites go to the pools
 * (a new generation, protected when the window ends).
 */
#ifndef PMALLOC_RELOAD_H
#define PMALLOC_RELOAD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ro.h"

struct pool_hit;
struct shim_state;

/* Once, when the policy is armed (init.c). */
void reload_init(const struct shim_state *st);
/* Is sig a reload signal whose handler the shim wraps (SIGHUP, SIGUSR1, SIGUSR2)? */
bool reload_signal(int sig);
/* Interposed sigaction() for the reload signal: the program's handler is
 * kept in read-only memory and a trampoline of the shim's is installed in
 * its place; old says what the program set.  0 or -errno. */
int reload_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Is a reload window open?  Two loads: the word's address (relro) and the
 * word, in reload.c's read-only page; inline for the wait calls. */
extern const int *const reload_open_word __attribute__((visibility("hidden")));
static inline bool reload_open(void)
{
	return __atomic_load_n(reload_open_word, __ATOMIC_ACQUIRE) != 0;
}
/* A window open, and this is the main thread (what it frees there is the
 * old configuration: learn.c counts it as freed before a trigger). */
bool reload_in_window(void);
/* Learn mode: was this process's parent reloaded since it forked this
 * process (nginx's old workers, told to quit at a reload)?  Its frees are
 * then those of a process that stops (learn.c). */
bool reload_superseded(void);
/* Does this allocation go to the reload's generation: a window open, on
 * the main thread, and the generations' bound not reached? */
bool reload_takes(void);
/* size bytes of pool i's new generation (the main thread, in a window);
 * NULL: the heap. */
void *reload_alloc(size_t i, size_t size, size_t align, uint16_t site);
/* The fault hook (fault_arm): a write into hit's protected memory at addr
 * by the main thread while a window is open is let through (its page
 * opened until the window's end) and counted.  Async-signal-safe. */
bool reload_let_through(const struct pool_hit *hit, uintptr_t addr);
/* At a wait call of the main thread with a window open: true when the
 * window ends now (it is marked closed; the caller protects the pools,
 * then calls reload_done), false when no wait call of the main thread
 * returned since the last reload signal (the window goes on). */
bool reload_at_wait(void);
/* A wait call returned (any thread; only the main thread's count). */
void reload_returned(void);
/* The window's end: pages opened meanwhile are read-only again. */
void reload_done(void);
/* Counts for reports: reloads seen, writes let through, generations bound. */
uint64_t reload_count(void);
uint64_t reload_writes(void);

/* This file's read-only page, for the one list (ro.h). */
extern const struct ro_span reload_ro_span;

#endif
