/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * violation.h - a validated PMW_REPORT becomes one journal entry.
 */
#ifndef PMALLOCD_VIOLATION_H
#define PMALLOCD_VIOLATION_H

#include "registry.h"
#include "symbolize.h"
#include "wire.h"

/* Log rep, sent by the process e (whose exe is NULL when the kernel could
 * not tell: then the report's exe is shown, marked as such).  rep's
 * strings are NUL-terminated and its counts in range (server.c checked). */
void violation_log(struct symbolizer *sym, const struct proc_entry *e, const struct pmw_report *rep);

#endif
