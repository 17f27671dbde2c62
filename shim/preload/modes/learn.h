/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * learn.h - learn mode: which allocation contexts a policy can protect
 * without killing the program.
 *
 * A context is the call chain of an allocation (up to LEARN_FRAMES return
 * addresses, frame 0 the allocator's immediate caller).  While learning,
 * each context's objects get pages of their own (learn.c's lanes), so a
 * write after protection, by the program, another thread or the kernel,
 * marks exactly the context it wrote into; the page is then made writable
 * for good (one fault per page, never a kill, no stderr).  A learn pool
 * takes its sites' allocations until its first trigger and none after
 * (what a proposal's take = "until-trigger" does): later ones go to the
 * heap and are counted per context, as are frees.  What was learned goes
 * to the journal at exit, at exec and on pmallocctl learn-flush, one entry
 * per pool and context.
 */
#ifndef PMALLOC_LEARN_H
#define PMALLOC_LEARN_H

#include "common.h"
#include "pool.h"
#include "ro.h"
#include <signal.h>

struct shim_state;

/* Frames recorded per context: at least 8 where the unwinder reaches. */
#define LEARN_FRAMES 16

/* Ready learning for st's pools (init, before st is published): false
 * when its tables cannot be mapped (the pools then enforce).  init.c hands
 * learn_let_through to fault_arm() with mode learn only when this said
 * true: the read-only decision, not learn.c's writable state, says whether
 * the process learns. */
bool learn_init(const struct shim_state *st);
/* learn.c's read-only page (the state and its tables' addresses), for
 * the one list (ro.h). */
extern const struct ro_span learn_ro_span;
/* That page read-only in a process of another mode too, empty (nothing
 * there is read then: learn_active asks the read-only policy's mode): it
 * lies among arming's other pages, and frozen with them it costs no
 * mprotect of its own (ro.h).  0 or -errno, as ro_freeze(). */
int learn_tables_freeze(void) __attribute__((warn_unused_result));
/* The flush's start-up, once learn_init() said true (learn_flush.c): this
 * run's id, the executable's path and build-id while /proc/self/exe still
 * shows them, PMALLOC_LEARN_INTERVAL, its fork handlers. */
void learn_flush_init(void);
/* An allocation of size bytes (align) routed to learn pool i, from return
 * address ra (site id site): its context found (an unwind: learn.c says
 * what it costs), and
 * the object taken from the context's own pages; NULL when the pool is
 * closed (its first trigger fired: counted as late) or out of room: the
 * caller goes to the heap.  Normal context, not with shim_busy set. */
void *learn_alloc(size_t i, size_t size, size_t align, uintptr_t ra, uint16_t site);
/* free() (or a realloc that moved) of pool object p, already validated:
 * counted for its context.  Lock-free. */
void learn_note_free(const void *p);
/* A write at addr into protected memory of hit's pool: true when learning
 * let it through (the page is now writable), false when the read-only
 * decision (fault_mode_of) for the pool is not learn.  Async-signal-safe:
 * atomic operations on pre-mapped tables and one mprotect. */
bool learn_let_through(const struct pool_hit *hit, uintptr_t addr);
/* The reload hook of learn mode (init.c hands it to fault_arm in place of
 * reload_let_through): a write by the main thread in a reload window, let
 * through as reload_let_through does, its context noted with the window's
 * number: written, if the process ends before the window does
 * (learn_window_unfinished).  Async-signal-safe. */
bool learn_window_let_through(const struct pool_hit *hit, uintptr_t addr);
/* The same for a kernel write about to be made (kwrite.c, normal
 * context): a page learning opened already costs no system call. */
bool learn_kernel_write(const struct pool_hit *hit, uintptr_t addr);
/* Write one journal entry per learned pool and context (reason: "exit",
 * "exec", "learn-flush").  Normal context only: reads symbol files,
 * allocates with the shim's guard set. */
void learn_flush(const char *reason);
/* A learn pool was protected (trigger.c): the first time, the periodic
 * flush starts (its first flush, every context, at once; then every
 * PMALLOC_LEARN_INTERVAL seconds, 10 by default, what changed). */
void learn_note_protected(void);
/* A learn pool is being protected again (a reload's new generation,
 * trigger.c, before and after the protect): the pages learning opened are
 * read-only again, so their "opened" bits, which spare a kernel write
 * (epoll_wait's events) its mprotect, are forgotten; else the kernel's
 * write into such a page fails with EFAULT for ever (lighttpd after its
 * SIGHUP: every epoll_wait "Bad address", no request served). */
void learn_forget_opened(void);
/* A wait call of the program's is about to be made: a process without
 * the periodic flush thread (RLIMIT_NPROC 0) flushes here when due.  One
 * load when the thread runs. */
void learn_at_wait(void);
/* This process is about to execve(path): when the loader will run it in
 * secure mode (set-user-ID or set-group-ID to another id, or file
 * capabilities), it ignores LD_PRELOAD: the new program runs without the
 * shim, unprotected, and learns nothing.  The exec flush's entries say so
 * (PMALLOC_LEARN_EXEC, PMALLOC_LEARN_SECURE_EXEC), and propose counts it. */
void learn_note_exec(const char *path);
/* 1 while this process learns. */
bool learn_active(void);

/* learn_stop.c: true once a terminating signal (SIGTERM, SIGINT, SIGQUIT)
 * was delivered to a handler of the program's, in this process or an
 * ancestor it was forked from: frees from then on are the
 * shutdown's, not counted.  Async-signal-safe. */
bool learn_stopping(void);
/* True when sig is one of those and this process learns: sigaction goes
 * to learn_stop_sigaction (negative errno), which installs a trampoline
 * noting the delivery before the program's handler runs. */
bool learn_stop_signal(int sig);
int learn_stop_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Map the shared word that tells this process's children it stops
 * (learn_init, once). */
void learn_stop_init(void);

#endif
