/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * state.h - the armed state read for the pool core (state.c).
 */
#ifndef PMALLOC_STATE_H
#define PMALLOC_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* The armed policy's report limits and generation: false when none is
 * armed.  The pool core's report_limits hook (hooks.h); one load of the
 * read-only pointer, async-signal-safe. */
bool state_report_limits(unsigned int *burst, unsigned int *interval_s, uint64_t *generation);

#endif
