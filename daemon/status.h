/*
 * status.h - the PMW_STATUS text: what pmallocd serves, for people.
 */
#ifndef PMALLOCD_STATUS_H
#define PMALLOCD_STATUS_H

#include "manager.h"
#include "strbuf.h"

#define STATUS_UNSERVED_MAX 128          /* never-checked-in processes listed */
#define STATUS_SCAN_MAX 65536            /* /proc entries looked at per scan */

/* Append the status text to out; marks the end when out's cap cut it. */
void status_render(struct manager *m, struct strbuf *out);

#endif
