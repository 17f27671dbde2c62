/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fill.h - the shim's own writes into pool objects it has just handed out
 * (strdup's copy, realloc's move) and the protect of interposition pools
 * never overlap; see fill.c.
 */
#ifndef PMALLOC_FILL_H
#define PMALLOC_FILL_H

/* Around the shim's allocation of, and copy into, a pool object.  A
 * protect under way finishes first. */
void fill_begin(void);
void fill_end(void);
/* Around a protect of interposition pools: waits for the fills under way
 * (other threads' only) to end; new ones wait for the protect. */
void fill_protect_begin(void);
void fill_protect_end(void);

#endif
