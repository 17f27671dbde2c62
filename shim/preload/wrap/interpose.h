/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interpose.h - what interpose.c gives the rest of the shim besides the
 * malloc family it exports: the free that knows pool memory, which init.c
 * hands to the heap (heap_set_free) when the arena is reserved.
 */
#ifndef PMALLOC_INTERPOSE_H
#define PMALLOC_INTERPOSE_H

/* free() with the arena check: a pool pointer is counted, never freed. */
void free_checked(void *p) __attribute__((visibility("hidden")));

#endif
