/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interpose.h - what interpose.c gives the rest of the shim besides the
 * malloc family it exports: the free that knows pool memory, which init.c
 * hands to the heap (heap_set_checked) when the arena is reserved, and the
 * decision whether a policy armed routes allocations.
 */
#ifndef PMALLOC_INTERPOSE_H
#define PMALLOC_INTERPOSE_H

#include <stdbool.h>

/* free() with the arena check: a pool pointer is counted, never freed. */
void free_checked(void *p) __attribute__((visibility("hidden")));
/* The arena is reserved: free() and realloc() check for pool pointers. */
void interpose_arena_reserved(void) __attribute__((visibility("hidden")));
/* A policy was armed (shim and site_armed set): route its allocations,
 * unless none of its rules resolves in this process (then not until a
 * dlopen). */
void interpose_armed(void) __attribute__((visibility("hidden")));
/* Serving (quiet): every pool closed and protected for a while, no reload
 * window open (trigger.c decides): the heap's own entries, as with no
 * policy; not quiet, the entries the policy chose.  Normal context. */
void interpose_quiet(bool quiet) __attribute__((visibility("hidden")));

#endif
