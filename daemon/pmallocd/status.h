/*
 * status.h - the PMW_STATUS text: what pmallocd serves, for people.
 */
#ifndef PMALLOCD_STATUS_H
#define PMALLOCD_STATUS_H

#include "manager.h"
#include "strbuf.h"

#define STATUS_UNSERVED_MAX 128          /* never-checked-in processes listed */
#define STATUS_SCAN_MAX 65536            /* /proc entries looked at per scan */

/* Append the status text for a requester of uid viewer to out; marks the
 * end when out's cap cut it.  Root sees every process; anyone else sees
 * the counters and only processes of their own uid: exe paths and uids of
 * other users' processes are not theirs to read in /proc either. */
void status_render(struct manager *m, struct strbuf *out, uid_t viewer, pid_t pid);

#endif
