/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * audit.h - letting a write into protected pool memory through, one at a
 * time, and noticing what else changed meanwhile: the audit window.
 */
#ifndef PMALLOC_AUDIT_H
#define PMALLOC_AUDIT_H

#include "common.h"

/* The page size the window snapshots; elsewhere nothing is let through.
 * Not RO_PAGE (os.h): that is the largest page of a kernel, this the one
 * size of kernel page whose copy fits the window (4 KiB). */
#define AUDIT_PAGE 4096u

/* Snapshot and make writable the page holding addr (a store at ip) for
 * this thread's window, opening the window (waiting for another thread's
 * to close) if this thread has none.  0 when opened; -EPERM (sealed) or
 * -ENOSPC when the page cannot be let through.  Async-signal-safe. */
int audit_window_add(uintptr_t addr, uintptr_t ip);
/* This thread's window is open for the store at ip, and the page of addr
 * is not in it yet (a store straddling two pages faults once per page). */
bool audit_window_continues(uintptr_t addr, uintptr_t ip);
/* A trap with this thread's window open and the stepped instruction still
 * at ip (a rep string instruction between iterations, its destination
 * pointer at dest): true when the window should stay open and the
 * stepping go on. */
bool audit_window_stepping(uintptr_t ip, uintptr_t dest);
/* Protect the window's pages again, close it, and report what changed in
 * them outside the let-through writes (other threads' stores made while the
 * pages were open).  Async-signal-safe. */
void audit_window_close(void);
/* This thread holds the window. */
bool audit_window_mine(void);
/* Copy len bytes from src into protected pool memory at dst (a kernel
 * write let through: kwrite.c), in a window of its own; 0, or -errno when
 * a page cannot be opened (nothing copied then).  Normal context. */
int audit_copy_in(void *dst, const void *src, size_t len);
/* Is this the first audited write into an object of site in this
 * process (then it is reported)?  Marks it reported.  True for SITE_NONE. */
bool audit_site_first(uint16_t site);
/* A later audited write of a reported site, at addr: counted, and its page
 * made writable until audit_reclose() (the store is retried and goes
 * through).  0, or -errno when the page cannot be opened.
 * Async-signal-safe. */
int audit_repeat(uintptr_t addr, uint16_t site);
/* audit_repeat() for a kernel write of a reported site into [addr,
 * addr+len): counted once, and every page of the range opened until
 * audit_reclose(), with one mprotect, none when the table says they are
 * open already (a forged bit only makes the kernel's write fail: the
 * caller then bounces it).  0, or -errno.  Normal context. */
int audit_repeat_range(uintptr_t addr, size_t len, uint16_t site);
/* Make the pages audit_repeat() opened read-only again: a write of another
 * site there is then seen and reported.  Normal context; trigger.c calls it
 * at most every 100 ms from the program's event-loop calls. */
void audit_reclose(void);
/* How many sites have been reported in this process so far. */
unsigned long audit_sites_reported(void);
/* Has site been reported in this process (audit_site_first said so)? */
bool audit_site_reported(uint16_t site);
/* Map the table of pages left open; once, before any pool is protected
 * (normal context). */
void audit_init(void);
/* Writes let through without a report so far in this process. */
unsigned long audit_repeats(void);
/* After fork, in the child (normal context). */
void audit_after_fork_child(void);

#endif
