/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_reports.h - what a served process tells pmallocd (server_reports.c),
 * for server.c's dispatch once the message's fields are checked
 * (wire_check_fields()).  Each returns 0: a refused message is counted and
 * the connection kept.
 */
#ifndef PMALLOCD_SERVER_REPORTS_H
#define PMALLOCD_SERVER_REPORTS_H

#include "wire.h"

struct client;
struct ucred;                    /* <sys/socket.h>, with _GNU_SOURCE */

int handle_protected(struct client *c, struct pmw_protected *m, const struct ucred *cred);
int handle_report(struct client *c, struct pmw_report *m, const struct ucred *cred);
/* RULES: kept by rules.c, its pools checked as a report's. */
int handle_rules(struct client *c, struct pmw_rules *m, const struct ucred *cred);
/* EXITING: a clean stop began, journaled once per process with a policy. */
int handle_exiting(struct client *c, const struct pmw_exiting *m, const struct ucred *cred);
/* NOTICE: the shim put its fault handler right; counted for status. */
int handle_notice(struct client *c, const struct pmw_notice *m, const struct ucred *cred);

#endif
