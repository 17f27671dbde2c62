/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trigger.h - when interposition pools are protected (trigger.c): the
 * interposed calls that mark the end of initialisation, the after: timer,
 * the manual trigger.
 */
#ifndef PMALLOC_TRIGGER_H
#define PMALLOC_TRIGGER_H

#include "armed.h"


void trigger_call(enum policy_call c);
void trigger_init(const struct shim_state *st);
/* On-wait's fallback, in a single-threaded process, looked at by the
 * process's own calls (trigger.c): the clock, and each pool whose
 * deadline passed protected (hooks.h's deferred_poll; keeps errno). */
void trigger_fallback_poll_slow(void);
size_t shim_protect_pool(size_t i, const char *trigger);
/* Protect the pool of the policy named name (the manual trigger): 0, or -1
 * with errno ENOENT when no pool of the armed policy has that name.  The
 * pool API's protect_named hook (hooks.h), set by init.c. */
int trigger_protect_named(const char *name);

#endif
