/*
 * journal.h - the shim's own journal entries, for when no pmallocd runs:
 * the native protocol (one datagram to /run/systemd/journal/socket),
 * async-signal-safe.
 */
#ifndef PMALLOC_JOURNAL_H
#define PMALLOC_JOURNAL_H

#include "report.h"
#include "wire.h"

void journal_violation(const struct pmw_report *m, const struct violation *v);
void journal_protected(const struct pmw_protected *m);

#endif
