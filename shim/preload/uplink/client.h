/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * client.h - reports to pmallocd (or the journal); see client.c.
 */
#ifndef PMALLOC_CLIENT_H
#define PMALLOC_CLIENT_H

#include "wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ro.h"

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

/* The daemon handshake (start, wait as long as wanted, or
 * abandon), and reports */
/* comm: /proc/self/comm as read at start, told in the HELLO ("": not). */
int client_start(const char *socket_path, const char *comm);
int client_wait(unsigned int timeout_ms, void **ret_image, size_t *ret_len, uint64_t *ret_generation);
void client_abandon(void);
/* Orders pmallocd sent since (pmallocctl protect): fn(pool) for each,
 * status_ask() for each ask of the sites table (the caller, above this
 * transport, decides what to answer); never blocks.  Only in the process that connected (not a forked child). */
void client_read_orders(void (*fn)(const char *pool), void (*status_ask)(void));
/* Wait up to timeout_ms for an order: 1 one is there, 0 not yet, -errno
 * no connection of this process's (-ENOTCONN) or the daemon went away. */
int client_wait_orders(int timeout_ms);
/* Tell pmallocd (else the journal) that pool_index was protected, its
 * pool_generation-th protect (1: the first trigger's; then reloads'):
 * true when pmallocd took it (then it wants the sites table too). */
bool client_notify_protected(size_t pool_index, const char *trigger, size_t new_bytes, uint32_t pool_generation);
/* Tell pmallocd that exit has begun (how: PMW_EXIT_CALLED or
 * PMW_EXIT_MAIN; status: exit's argument or main's value), for its count
 * of clean stops.  Nothing without a daemon; never blocks. */
void client_notify_exiting(int status, uint32_t how);
/* Hand msg to pmallocd without blocking: false without a daemon of this
 * process's (or a full socket).  Async-signal-safe. */
bool client_send_msg(const void *msg, size_t len);
/* Whether pmallocd served this process (a connection was kept): without
 * it, messages only for the daemon are not even built. */
bool client_has_daemon(void);

/* This file's read-only page, for the one list (ro.h). */
extern const struct ro_span client_ro_span;

#endif
