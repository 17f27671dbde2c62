/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_ask.h - pmallocctl's requests on a connection of its own
 * (server_ask.c), for server.c's dispatch.  Each answers once and returns
 * <0: the connection then closes (a malformed request too, counted).
 */
#ifndef PMALLOCD_SERVER_ASK_H
#define PMALLOCD_SERVER_ASK_H

#include "wire.h"

struct client;

/* pmallocctl status: every process the asker may see. */
int handle_status_req(struct client *c);
/* pmallocctl status PID: the detail view of one process (status.c). */
int handle_status_pid_req(struct client *c, const struct pmw_status_pid_req *m);
/* pmallocctl protect: protect.c decides and answers. */
int handle_protect_req(struct client *c, const struct pmw_protect_req *m);

#endif
