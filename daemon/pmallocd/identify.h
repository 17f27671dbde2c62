/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * identify.h - who a client is, from the kernel, read by a worker thread
 * beside the event loop (a pipeline: the loop accepts, checks and answers,
 * the worker reads /proc), with the loop able to do the same inline.
 */
#ifndef PMALLOCD_IDENTIFY_H
#define PMALLOCD_IDENTIFY_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc.h"

#define IDENTIFY_QUEUE 64                /* jobs out with the worker at most; more
					  * are identified by the loop itself */

/* One identification.  The loop fills the first part and, once it has the
 * job back, reads the second; the worker reads the first and writes the
 * second, and nothing else. */
struct identify_job {
	void *owner;                     /* the loop's (its client); the worker never looks */
	int fd;                          /* the client's socket: open until the job is back */
	pid_t pid;                       /* SO_PEERCRED at accept */
	bool comm_given;                 /* comm below is the HELLO's: not read */

	int r;                           /* 0, or -errno: the process cannot be identified */
	bool exe_deleted;
	uid_t uids[4];                   /* real, effective, saved, filesystem: now */
	gid_t gids[4];
	uint64_t seen;                   /* proc_boottime_ticks() when pid was proven the peer's */
	char comm[PROC_COMM_MAX];        /* raw, as /proc says (or the HELLO) */
	char exe[PATH_MAX];              /* raw, " (deleted)" cut off */
	char cgroup[PROC_CGROUP_MAX];    /* systemd's cgroup path; "" when unknown */

	struct identify_job *next;       /* the queue it is in */
};

struct identify;

/* Start the worker (before the sandbox: it is created with every signal
 * blocked and has made its start-up calls when this returns).  0 or
 * -errno. */
int identify_start(struct identify **ret);
/* Tell the worker to stop and wait for it; jobs still out are dropped
 * (their owners are the caller's to free).  NULL is fine. */
void identify_stop(struct identify *q);
/* The descriptor that is readable when jobs are back (an eventfd). */
int identify_fd(const struct identify *q);

/* A free job, or NULL when IDENTIFY_QUEUE are out (or q is NULL): the
 * caller then identifies inline with identify_run().  Loop only. */
struct identify_job *identify_job_get(struct identify *q);
/* Hand j (owner, fd, pid filled) to the worker. */
void identify_submit(struct identify *q, struct identify_job *j);
/* The worker waits for work: nothing queued, nothing in hand (true
 * without a worker).  Loop only. */
bool identify_idle(struct identify *q);
/* The jobs done since the last call, oldest first (a list through next;
 * NULL: none, or q is NULL); the eventfd is read (reset) before, when the
 * worker wrote it since, or when woken (the caller was woken by it).  Each
 * goes back with identify_job_put(). */
struct identify_job *identify_take(struct identify *q, bool woken);
void identify_job_put(struct identify *q, struct identify_job *j);

/* The identification itself, in the calling thread (the worker's, or the
 * loop's when the queue is full): fills j's second part. */
void identify_run(struct identify_job *j);

#endif
