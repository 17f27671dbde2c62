/*
 * client.h - reports to pmallocd (or the journal); see client.c.
 */
#ifndef PMALLOC_CLIENT_H
#define PMALLOC_CLIENT_H

#include "wire.h"

/* Remember what reports need (the exe path, in a read-only page) and what
 * the journal entries say about this process. */
void client_init(const char *exe, const char *comm);
/* After the handshake: the connection and the path made read-only.  0, or
 * -errno when they could not be (the connection is then dropped, and the
 * caller runs unprotected and says so). */
int client_freeze(void) __attribute__((warn_unused_result));
/* Send the violation record r to pmallocd as it is, else write it to the
 * journal.  Async-signal-safe; called under report.c's lock. */
void client_report(struct pmw_report *r);

#endif
