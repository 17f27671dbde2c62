/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_chain.h - propose's choice of sites and wrappers and the
 * pools' text (ctl_propose_chain.c), from a set of learned contexts
 * (ctl_propose_set.h), for propose's command (ctl_propose.c).
 */
#ifndef PMALLOC_CTL_PROPOSE_CHAIN_H
#define PMALLOC_CTL_PROPOSE_CHAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pset;

/* Chooses sites and wrappers for every pool, then writes the pools list's
 * elements ("{ ... }" each, comments first, separated by commas) to f and
 * the coverage of all pools to total (comment lines); sites holding fewer
 * than min_live bytes are left out (and said).  Returns the number of
 * pools written.  May be called again (with another min_live). */
size_t pset_render(struct pset *s, uint64_t min_live, FILE *f, FILE *total);
/* After a render: the contexts whose site is site ("function+0xOFF" or
 * "object+0xOFF", a violation's PMALLOC_OBJECT_SITE) are taken as written,
 * so that the next render leaves that site out.  The number of contexts
 * so marked (0: no proposed site is it). */
size_t pset_leave_out(struct pset *s, const char *site);

#endif
