/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_learned.h - the learned-site entries' fields (ctl_learned.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_LEARNED_H
#define PMALLOC_CTL_LEARNED_H

#include <stddef.h>
#include <stdint.h>

/* ctl_learned.c: field name of the learned-site entry j is at, as a
 * malloc'ed string ("" when absent; NULL without memory), or as a number. */
struct sd_journal;
char *ctl_learned_field(struct sd_journal *j, const char *name);
uint64_t ctl_learned_u64(struct sd_journal *j, const char *name);
/* ctl_learned.c: the fields names[0..n) of that entry in one walk, into
 * vals (malloc'ed, "" when absent); 0, or a negative errno (vals all NULL).
 * The value as a number: 0 unless all decimal digits. */
int ctl_learned_fields(struct sd_journal *j, const char *const *names, size_t n, char **vals);
uint64_t ctl_learned_num(const char *v);

#endif
