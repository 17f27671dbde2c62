/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy_lint.h - advice on a valid policy set (policy_lint.c): the
 * programs' only (pmallocd, pmallocctl); not built into the shim.
 */
#ifndef PMALLOC_POLICY_LINT_H
#define PMALLOC_POLICY_LINT_H

#include "policy.h"

#include <stddef.h>

/* fn(ctx, line, message) for each exe glob that no real path fits, policy
 * never used because an earlier one matches all it does, repeated trigger
 * or site.  Returns the number of warnings. */
typedef void (*policy_warn_fn)(void *ctx, int line, const char *msg);
size_t policy_lint(const struct policy_set *set, policy_warn_fn fn, void *ctx);

#endif
