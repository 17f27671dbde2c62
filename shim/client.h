/*
 * client.h - reports to pmallocd (or the journal); see client.c.
 */
#ifndef PMALLOC_CLIENT_H
#define PMALLOC_CLIENT_H

#include "report.h"

/* Remember what reports need (exe path) and hook into report_violation(). */
void client_init(const char *exe, const char *comm);
/* Send v to pmallocd, else to the journal.  Async-signal-safe. */
void client_report(const struct violation *v);

#endif
