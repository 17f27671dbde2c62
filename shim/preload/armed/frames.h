/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * frames.h - where a wrapper's own return address sits on the stack, from
 * its call instruction's unwind rule (frames.c): what lets resolve.c read
 * the caller of an allocation made through a wrapper off the stack instead
 * of unwinding to it.
 */
#ifndef PMALLOC_FRAMES_H
#define PMALLOC_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

enum frames_rule {
	FRAMES_UNUSABLE = -1,   /* no rule "stack pointer plus a constant" at that call */
	FRAMES_UNCHECKED = 0,   /* read, not yet confirmed by the unwinder */
	FRAMES_TRUSTED = 1,     /* read and confirmed FRAMES_CHECKS times */
};

/* ra: the return address of a call made by a wrapper (its call into the
 * allocator or into another wrapper); the slot it sits in is where that
 * call pushed it.  *k: the distance from that slot to the slot of the
 * wrapper's own return address, when the wrapper's frame at that call is
 * the stack pointer plus a constant.  Normal context (reads .eh_frame
 * through the unwinder's lookup on a miss: the loader's lock). */
enum frames_rule frames_rule(uintptr_t ra, intptr_t *k);
/* The unwinder's answer for a chain that went through ra agreed with the
 * stack's (agreed), or not: not, the rule of ra is never used again. */
void frames_checked(uintptr_t ra, bool agreed);
/* Code may have been unloaded (dlclose): every rule read is forgotten. */
void frames_forget(void);

#endif
