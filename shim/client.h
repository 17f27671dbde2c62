/*
 * client.h - reports to pmallocd (or the journal); see client.c.
 */
#ifndef PMALLOC_CLIENT_H
#define PMALLOC_CLIENT_H

#include "wire.h"

/* Remember what reports need (the exe path, in a read-only page) and what
 * the journal entries say about this process. */
void client_init(const char *exe, const char *comm);
/* The program's path read at start-up (read-only memory): reports name the
 * program by it, never by argv[0], which setproctitle() rewrites; NULL
 * before client_init() (and in libpmalloc.so). */
const char *client_exe(void);
/* Send the violation record r to pmallocd as it is, else write it to the
 * journal.  Async-signal-safe; called under report.c's lock. */
void client_report(struct pmw_report *r);

#endif
