/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rules_msg.h - the rules and per-site table this process tells pmallocd
 * (rules_msg.c).
 */
#ifndef PMALLOC_RULES_MSG_H
#define PMALLOC_RULES_MSG_H

#include "wire.h"

enum rules_msg_what { RULES_MSG_RULES = PMW_RULES_RULES, RULES_MSG_SITES = PMW_RULES_SITES };

/* Send pmallocd the table what (PMW_RULES), when this process was served
 * by it; nothing otherwise (the sites: nothing either within a second of
 * the last).  Normal context only, never under the shim's locks; never
 * blocks. */
void rules_msg_send(enum rules_msg_what what);
/* The site table, now: pmallocd asked (it asks at most once a second). */
void rules_msg_answer(void);

#endif
