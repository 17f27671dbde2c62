/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fault_inner.h - what the rooms of the fault handler share: fault.c (the
 * handlers: what a fault is and what it gets), fault_actions.c (the
 * signal actions: the shim's installed, the program's kept read-only) and
 * fault_walk.c (the stack walk after the report).  Included by those
 * three files only.
 */
#ifndef PMALLOC_FAULT_INNER_H
#define PMALLOC_FAULT_INNER_H

#include "fault.h"
#include "os.h"
#include "wire.h"

#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- fault_actions.c */

/* The program's action for a signal the shim handles first; two slots so
 * the handler never reads one being written: writers (under install_lock)
 * fill the idle slot, then publish its index. */
struct program_action {
	struct sigaction slot[2];
	_Atomic int idx;
	_Atomic int ours;                /* the shim's handler is installed */
};
union fault_prog_page {
	struct {
		struct program_action segv, trap;
	} s;
	unsigned char page[RO_PAGE];
};
/* The program's actions, read-only (fault_actions.c). */
extern union fault_prog_page fault_prog __attribute__((visibility("hidden")));
#define prog_segv (fault_prog.s.segv)
#define prog_trap (fault_prog.s.trap)

/* Who installs or records a handler, one thread at a time. */
void fault_install_lock_take(void);
void fault_install_lock_give(void);
/* The program's action for a signal now (inline: the handler reads it). */
static inline const struct sigaction *fault_program_current(struct program_action *pa)
{
	return &pa->slot[atomic_load_explicit(&pa->idx, memory_order_acquire) & 1];
}
/* A new one made current (its page opened for the one store).
 * Async-signal-safe. */
void fault_program_publish(struct program_action *pa, const struct sigaction *act);
/* fn installed as the kernel's action for sig (prog: the program's action
 * it stands before, for SA_ONSTACK; old: the action it replaces). */
void fault_install_handler(int sig, void (*fn)(int, siginfo_t *, void *), const struct sigaction *prog,
			   struct sigaction *old);
/* fn installed for sig once, the action it replaces kept as the program's. */
void fault_take_over(int sig, void (*fn)(int, siginfo_t *, void *), struct program_action *prog);
/* The kernel's action for sig, if it is not fn: recorded as the
 * program's, fn installed again; true then.  Install lock held. */
bool fault_recheck_action(int sig, void (*fn)(int, siginfo_t *, void *), struct program_action *prog);

/* ---- fault_walk.c */

/* The stack walk under way on this thread: a fault inside it jumps to
 * the record's env.  The word is writable (TLS), so it holds the record's
 * address mixed with the secret (os.h), and the record carries a seal made
 * of the secret and its own address: a word overwritten with the address
 * of the program's own sigjmp_buf (or anything else) decodes to no sealed
 * record, and the fault is handled as any other (reported, killed).  Cost:
 * two loads and a compare per fault, nothing per allocation. */
struct walk_jump {
	uintptr_t seal;
	sigjmp_buf env;
};
#define WALK_SEAL_TAG ((uintptr_t)0x77616c6b)    /* "walk": the seal is not the word's value */
extern __thread uintptr_t fault_walk_env __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The stack's room for the walk measured (AT_MINSIGSTKSZ): at install. */
void fault_walk_init(void);
/* The enrichment after the stderr line (report_end's walk): the stack
 * walk into r's frames. */
void fault_walk_backtrace(struct pmw_report *r, void *arg);

/* A fault inside the walk: back to fault_walk_backtrace.  fault_walk_env
 * is a writable word: believed only when, decoded with the secret, it
 * points just above this frame, on this stack, where the walk's record
 * lives while it walks, and that record's seal is right (a forged one
 * would jump anywhere instead of reporting the write).  Without the
 * secret a forged word decodes to a random address: the range check
 * refuses it before anything is read there.  Inline: the handler's first
 * test, as it was before the walk had a file of its own. */
#define WALK_ENV_NEAR ((uintptr_t)64 << 10)
static inline bool fault_walk_fault(void)
{
	uintptr_t word = fault_walk_env;
	if (!word)
		return false;
	struct walk_jump *j = (struct walk_jump *)(word ^ os_secret);
	if ((uintptr_t)j - (uintptr_t)__builtin_frame_address(0) > WALK_ENV_NEAR ||
	    j->seal != ((uintptr_t)j ^ os_secret ^ WALK_SEAL_TAG))
		return false;
	fault_walk_env = 0;
	j->seal = 0;
	os_siglongjmp(j->env, 1);        /* libc's: the shim exports siglongjmp itself */
	return false;
}

#endif
