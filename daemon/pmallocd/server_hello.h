/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server_hello.h - a client's HELLO and its hand-out (server_hello.c), for
 * server.c, which reads the messages and frees the clients, and for
 * server_reports.c, which finds a packet's sender.  Each handler returns
 * 0 to keep the connection, <0 to close it.
 */
#ifndef PMALLOCD_SERVER_HELLO_H
#define PMALLOCD_SERVER_HELLO_H

#include "identify.h"
#include "wire.h"

struct client;
struct ucred;                    /* <sys/socket.h>, with _GNU_SOURCE */

/* A HELLO from a NEW client (the message's size and type checked): its
 * identity goes to identify.c's worker (the answer follows in
 * hello_finish()), or is read here when IDENTIFY_QUEUE jobs are out. */
int handle_hello(struct client *c, const struct pmw_hello *m, const struct ucred *cred);
/* The rest of a HELLO, once j says who c is: the registry, the match
 * against the policy set in force now (a reload meanwhile counts), the
 * answer, the journal entry.  0, or <0 to close. */
int hello_finish(struct client *c, const struct identify_job *j);
/* The process this packet came from: the peer, or a forked child that
 * shares its connection (SCM_CREDENTIALS of this packet says which).
 * NULL when that is a child over its uid's entry cap (budget.h): the
 * message is then counted and not logged. */
struct proc_entry *sender_entry(struct client *c, const struct ucred *cred);

#endif
