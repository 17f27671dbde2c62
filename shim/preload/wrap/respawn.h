/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * respawn.h - pools in a forked child, and roles (respawn.c).
 */
#ifndef PMALLOC_RESPAWN_H
#define PMALLOC_RESPAWN_H

#include "armed.h"

/* At arming (init.c, before trigger_init): the pools that take nothing in
 * this role closed, the role said when no pool protects in it, and the
 * fork child handler installed. */
void respawn_init(const struct shim_state *st);

#endif
