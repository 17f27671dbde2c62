/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * protect.h - pmallocctl protect PID POOL: deciding a PMW_PROTECT_REQ and
 * passing the order on to the process as PMW_PROTECT.
 */
#ifndef PMALLOCD_PROTECT_H
#define PMALLOCD_PROTECT_H

#include <stdbool.h>
#include <sys/types.h>

#include "log.h"
#include "registry.h"
#include "strbuf.h"
#include "wire.h"

/* The requests' log limiter; server.c holds one. */
struct protect {
	struct log_limit log;            /* "asked to protect" lines */
};
#define PROTECT_INIT { .log = LOG_LIMIT_INIT(10, 10) }

/* The served connection of the PID the request names: its socket
 * (non-blocking) and what it was handed; server.c finds it, and leaves
 * entry NULL when that PID has none. */
/* The process asked about: its connection and entry; fd -1 with an entry
 * for a forked child served over its parent's connection (it reads no
 * orders of its own); entry NULL when pmallocd does not know it. */
struct protect_target {
	int fd;
	const struct proc_entry *entry;
	bool via_gone;                   /* forked child: the parent it shares a connection with exited */
};

/* Answer one PMW_PROTECT_REQ m (its size checked) from the client with
 * from_pid and from_uid.  Authorises it (root or the target's uid, a pool
 * with a manual trigger in what the target was handed) and then sends
 * PMW_PROTECT to target with MSG_DONTWAIT; the answer (first line "ok: ..."
 * or "error: ...", as pmallocctl(8) documents) goes to text, the request
 * and its outcome to the log (limited).  Returns 1 when PMW_PROTECT was
 * sent, 0 when refused (text says why), -EINVAL when a field is malformed
 * (nothing written or logged: the caller drops the client). */
int protect_answer(struct protect *p, const struct pmw_protect_req *m, pid_t from_pid, uid_t from_uid,
		   const struct protect_target *target, struct strbuf *text);

#endif
