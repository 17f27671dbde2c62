/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * manager.h - the daemon's state, shared by its modules.  pmallocd.c owns
 * it (creates, reloads, frees); the others read it and touch only their
 * own part.
 */
#ifndef PMALLOCD_MANAGER_H
#define PMALLOCD_MANAGER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "person.h"
#include "registry.h"

struct server;
struct strbuf;
struct symbolizer;

struct status_data;

struct manager {
	sd_event *event;
	const char *config_path;
	struct config *config;           /* in force; never NULL once running */
	uint64_t config_loaded_usec;     /* CLOCK_MONOTONIC */
	uint64_t start_usec;
	uint64_t reloads_refused;
	struct server *server;
	struct registry registry;
	struct symbolizer *symbolizer;
	const char *subuid_path;         /* the subordinate uid ranges (person.h) */
	struct persons persons;          /* read at start and on SIGHUP; budget.c looks up */
	/* status.c's renderer, set by pmallocd.c: server.c answers a status
	 * request with it without importing status.c (which reads the server).
	 * pid 0: everything; else that process alone, in detail. */
	void (*render_status)(struct manager *m, struct status_data *out, uid_t viewer, pid_t pid);
};

#endif
