/*
 * fault.h - the SIGSEGV handler: writes to protected pool memory are
 * reported and end the process (enforce) or are let through (audit); every
 * other SIGSEGV goes where it would have gone without the shim.
 */
#ifndef PMALLOC_FAULT_H
#define PMALLOC_FAULT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Install the handler (once; idempotent), remembering the previous one. */
void fault_install(void);
/* Interposed sigaction(), every signal: for SIGSEGV (and SIGTRAP while
 * audit pools exist) record the program's handler as the one to chain to,
 * keeping the shim's first; other signals go to libc.  No handler's mask
 * may block a fault signal.  Same contract as sigaction(). */
int fault_set_program_action(int sig, const struct sigaction *act, struct sigaction *old);
/* Take the fault signals the shim needs out of set (SIGSEGV; SIGTRAP
 * while audit pools exist): they must never be blocked (sigmask.c). */
void fault_filter_mask(sigset_t *set);
/* Audit pools exist: let their faulting writes through by single-stepping
 * them (installs a SIGTRAP handler once). */
void fault_enable_audit(void);
/* Learn mode (learn.c, not in libpmalloc.so): fn(hit, addr) is asked
 * first about every write into protected pool memory; true: let through. */
struct pool_hit;
void fault_set_learn_hook(bool (*fn)(const struct pool_hit *hit, uintptr_t addr));

#endif
