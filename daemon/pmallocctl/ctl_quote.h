/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_quote.h - values quoted into generated policy text (ctl_quote.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_QUOTE_H
#define PMALLOC_CTL_QUOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ctl_quote.c: s as a libconfig string literal, quotes included: the one
 * way a value reaches generated policy text (settings and comments). */
void ctl_conf_quote(FILE *f, const char *s);
/* ctl_quote.c: may s be a name in a policy (1 to 255 bytes, no control byte)? */
bool ctl_conf_name_ok(const char *s);
/* ctl_quote.c: s as a policy or pool name (1 to 63 of A-Z a-z 0-9 _ . -)
 * in out: other bytes as '_', cut at 63; true when that is s itself. */
bool ctl_conf_ident(const char *s, char *out, size_t len);

#endif
