/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_parse.h - the policy model from libconfig's root setting
 * (policy_parse.c), for policy_load.c, which has read and checked the text.
 */
#ifndef PMALLOC_POLICY_PARSE_H
#define PMALLOC_POLICY_PARSE_H

#include <libconfig.h>

#include "policy.h"
#include "policy_setting.h"

/* The whole file into set (zeroed by the caller; on failure partly filled,
 * for policy_set_free()).  0, or a negative errno with c's message. */
int policy_parse_root(const struct parse_ctx *c, const config_setting_t *root, struct policy_set *set);

#endif
