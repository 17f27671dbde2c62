/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libip_twin - the same code as libip_plugin under another name, which no
 * policy names: loaded where the plugin was, its functions sit at the very
 * addresses the plugin's did, so a stale decision about those addresses
 * shows.
 */
#include "libip_plugin.c"
