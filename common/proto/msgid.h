/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * msgid.h - the MESSAGE_IDs of pmalloc's journal entries, one table for
 * the shim (shim/preload/uplink/journal.c), pmallocd (daemon/pmallocd/journal.c, violation.c) and
 * pmallocctl (ctl_violations.c).
 *
 * Owns: the identifiers; pmallocd(8) documents them, and
 * systemd/pmalloc.catalog explains each (tests/integration/ctl_docs.sh
 * reads this file and checks that the catalog has every one).
 * Must never: change a value (scripts and the catalog select by them) or
 * hold anything but these constants.
 */
#ifndef PMALLOC_MSGID_H
#define PMALLOC_MSGID_H

#define MID_VIOLATION "7df8f2fd7e8542c19da1343c00501acc" /* a write to protected memory */
#define MID_PROTECTED "4861793aed344e45916acf02f15da997" /* a pool protected */
#define MID_HANDED    "26f986b8445b455b9a3a7a8b0d017fb8" /* a policy handed to a process */
#define MID_POLICY    "daf928bc276d4cc7b9b7976f4bb6e0fa" /* the policy file (re)loaded or refused */
#define MID_DROPPED   "c1e835285fc54160a43c1065e7656999" /* reports dropped, counted */
#define MID_LEARNED   "81abfd4bd92b4d58b67b434bbf0f7ac1" /* a site learned (learn mode) */
#define MID_UNMATCHED "1bbefd08c466424b957c3ee5b5856dbf" /* a policy rule that matches nothing */
#define MID_HANDLER   "649c899641344ac1816d2b9a79cf62b4" /* the fault handler found replaced or SIGSEGV blocked, put right */
#define MID_LATE      "8060223fb81e4230b9e1d79734447b85" /* a take = "until-trigger" site allocating after the trigger */
#define MID_ROLE      "239811c3bab44d1681c765550bb90227" /* a process whose role no pool protects in */
#define MID_EXITING   "90a0ec161df949f0aa8831c92d0f5a86" /* a served process began a clean exit */

#endif
