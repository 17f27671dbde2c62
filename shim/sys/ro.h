/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ro.h - the one list of the shim's own read-only pages: each registered
 * once at start-up (ro_register), all frozen at once (ro_freeze_all), and a
 * page that cannot be made read-only on this kernel named, never skipped
 * in silence.  Owns the list only; never allocates, never prints (the
 * caller says what ro_freeze_all names).
 *
 * Two kinds of entry.  "At arm" pages are written during start-up and
 * frozen by ro_freeze_all.  "By owner" pages are frozen by their owner at
 * a time of its own (the heap's table, once the allocator is found; the
 * kernel probe in os_init): ro_freeze_all only checks that they can be,
 * on this kernel's page size, so that none is left writable unsaid.  An
 * owner whose page arming freezes first calls ro_freeze(), which arming
 * may hold and do with its neighbours' (below).
 */
#ifndef PMALLOC_RO_H
#define PMALLOC_RO_H

#include "os.h"

#include <stdbool.h>
#include <stddef.h>

#define RO_MAX 24

/* Where a page is, as its owner lends it to the list: the page stays
 * static in its owner's file, frozen by it; init.c registers the span.
 * The span itself is const (relocated read-only). */
struct ro_span {
	void *p;
	size_t len;
};

/* Is [p, p+len) whole pages of size page (so mprotect can cover exactly
 * it)?  A RO_PAGE-aligned region of RO_PAGE multiples is, wherever the
 * kernel's page divides RO_PAGE. */
static inline bool ro_fits(const void *p, size_t len, size_t page)
{
	return page && (uintptr_t)p % page == 0 && len % page == 0 && len;
}

/* List [p, p+len) (RO_PAGE-aligned, whole RO_PAGEs) under name (a string
 * literal).  by_owner: its owner freezes it (see above).  0, -EINVAL when
 * not RO_PAGE-aligned, -ENOSPC when the list is full, -EBUSY once the
 * list is frozen.  Start-up only (the constructor's one thread). */
int ro_register(const char *name, void *p, size_t len, bool by_owner);
/* Freeze every "at arm" page not yet frozen (read-only; sealed too when
 * seal and the kernel has mseal), check every "by owner" one fits the
 * kernel's page, then freeze the list itself.  0 when all are (or can be)
 * read-only; else -errno of the first failure, *left its name: the others
 * are frozen all the same, that one stays writable. */
int ro_freeze_all(bool seal, const char **left) __attribute__((warn_unused_result));
/* The same with the kernel's page size given: a test's simulated 64 KiB
 * page on a 4 KiB kernel (a region that fits only 4 KiB pages is then
 * named, as a 64 KiB-page kernel would have it). */
int ro_freeze_all_page(size_t page, bool seal, const char **left) __attribute__((warn_unused_result));
/* How many pages are listed. */
size_t ro_count(void);

/* Arming's freezes held and done together.  From ro_hold() to
 * ro_release() (the constructor's thread only, before main), ro_freeze()
 * of a listed page on that thread is put off; ro_release() freezes every
 * page put off, adjacent ones in one mprotect: the pages arming freezes
 * one after the other lie side by side (the Makefile's layout), and an
 * mprotect costs some 3.8 us here whatever its length.  Outside those,
 * on other threads, and for what is not a listed page, ro_freeze() is
 * os_protect_ro().  Never held under protection = "seal" (a seal needs
 * its page read-only first: the caller does not hold then). */
void ro_hold(void);
int ro_freeze(void *p, size_t len) __attribute__((warn_unused_result));
/* ro_freeze() of a page that other threads open and close under a lock of
 * its owner's (the pools' table, the fault handler's pages): when put off,
 * ro_release() freezes it between lock() and unlock(), so that it never
 * lands between another thread's open and its write.  Never called with
 * that lock held by the caller at the release (ro_release runs in arm(),
 * holding none). */
int ro_freeze_locked(void *p, size_t len, void (*lock)(void), void (*unlock)(void))
	__attribute__((warn_unused_result));
/* Is a freeze of [p, p+len) put off on this thread (so the page is still
 * writable: nothing to open)? */
bool ro_held(const void *p, size_t len);
/* 0, or -errno of the first page that stayed writable, *left its name
 * (each page put off is tried again alone when the one call fails). */
int ro_release(const char **left) __attribute__((warn_unused_result));

#endif
