/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scratch.h - the policy's load in memory of its own (scratch.c): while a
 * thread holds the scope open, the shim's own allocations on that thread
 * (heap.h's heap_malloc and kin, the private libconfig's) come from the
 * shim's own memory (16 KB of .bss, then a mapping unmapped when the scope
 * ends), never from the program's heap.
 */
#ifndef PMALLOC_SCRATCH_H
#define PMALLOC_SCRATCH_H

#include "common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* This thread has the scope open (and not paused). */
extern __thread bool scratch_here __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* This thread has the scope open, paused or not (from scratch_begin to
 * scratch_end). */
extern __thread bool scratch_scope __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* Its memory: 16 KB of the shim's .bss, then a mapping, [scratch_base,
 * scratch_base + scratch_len) (0 and 0 when there is none). */
#define SCRATCH_FIRST ((size_t)16 << 10)
extern char scratch_first[SCRATCH_FIRST] __attribute__((visibility("hidden")));
extern uintptr_t scratch_base __attribute__((visibility("hidden")));
extern size_t scratch_len __attribute__((visibility("hidden")));

/* Was p handed out by the scratch (what heap_free and heap_realloc ask of
 * every pointer)?  The .bss part by its fixed address; the mapping only
 * on the scope's thread while it is open: its bounds are writable words,
 * and a forged one must not make the heap's blocks look like the scratch's
 * to every later heap_realloc (tamper.sh forged scratch_len). */
static inline bool scratch_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)scratch_first < sizeof(scratch_first) ||
	       (unlikely(scratch_scope) && (uintptr_t)p - scratch_base < scratch_len);
}

/* Open the scope on this thread: its mapping made (when that fails, the
 * scope serves nothing and the heap serves as before). */
void scratch_begin(void);
/* This thread's allocations go to the heap again (paused) or to the
 * scratch (not): what outlives the load (arming's tables) is the heap's,
 * while the load's own image is still read. */
void scratch_pause(bool paused);
/* Close the scope: the mapping unmapped, unless something it handed out
 * was not freed (then kept, never reused, and said under PMALLOC_DEBUG). */
void scratch_end(void);
/* size bytes, zeroed, 16-aligned, or NULL when the mapping is full (the
 * caller asks the heap). */
void *scratch_alloc(size_t size);
/* p (scratch_owns) grown or shrunk in the scope: in place when it is the
 * last block handed out, else copied into a new one; NULL when the scope
 * is paused or closed here, or full (heap.c then moves it to the heap). */
void *scratch_realloc(void *p, size_t size);
/* The size p (scratch_owns) was asked with, never more than its region
 * holds past p. */
size_t scratch_size(const void *p);
/* p (scratch_owns) no longer used: counted, not reused. */
void scratch_free(void *p);

#endif
