/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * take.h - take = "until-trigger" in enforce mode (take.c): late
 * allocations counted per site and said once.
 */
#ifndef PMALLOC_TAKE_H
#define PMALLOC_TAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shim_state;

/* What the caller tells pmallocd after a late allocation: nothing, the
 * site table now (a site's first late allocation, among a process's first
 * few), or the site table under its ordinary rate limit. */
enum take_tell { TAKE_TELL_NONE, TAKE_TELL_NOW, TAKE_TELL_RATED };

/* An allocation from site (route: pool i) after pool i closed: counted,
 * said once per site in the journal; the caller then goes to the heap. */
enum take_tell take_note_late(size_t i, uint16_t site, size_t size);
/* Every pool of st takes until its trigger, and each one's fired. */
bool take_all_closed(const struct shim_state *st);
/* Whether an allocation through the wrapper call with site id id, every
 * pool closed, is still to be resolved to its caller (to be counted and
 * said): its first TAKE_RESOLVE_LATE ones are. */
bool take_resolve_late(uint16_t id);
/* The late allocations of site so far; false when it has none. */
bool take_late_counts(uint16_t site, uint64_t *objects, uint64_t *bytes);

#endif
