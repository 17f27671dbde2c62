/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status.h - the status as PMW_STATUS_DATA records: what pmallocd serves.
 */
#ifndef PMALLOCD_STATUS_H
#define PMALLOCD_STATUS_H

#include "manager.h"
#include "status_data.h"

#define STATUS_UNSERVED_MAX 128          /* never-checked-in processes listed */
#define STATUS_SCAN_MAX 65536            /* /proc entries looked at per scan */

/* Append the status records for a requester of uid viewer to d (pid > 0:
 * that process alone, in detail).  Root sees every process; anyone else
 * sees the counters and only processes running as their own uid: exe
 * paths and uids of other users' processes are not theirs to read in
 * /proc either. */
void status_render(struct manager *m, struct status_data *d, uid_t viewer, pid_t pid);

#endif
