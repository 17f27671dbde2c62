/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_protect.c - "pmallocctl protect PID POOL": the manual trigger from the
 * command line.  Sends PMW_PROTECT_REQ to pmallocd, which checks who asks
 * and passes PMW_PROTECT on to the process; prints pmallocd's answer.
 *
 * Owns the arguments of protect and the meaning of its answer: a first line
 * "ok: ..." is exit 0, "error: ..." exit 1, said as "pmallocctl: ..."
 * (pmallocctl(8)).  Never trusts the answer (ctl_request() checks it; the
 * text is escaped on output) and never decides anything itself: whether the request is allowed is the
 * daemon's business, as only it knows the process and its policy.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_util.h"
#include "wire.h"

/* A policy pool name: [A-Za-z0-9_.-]{1,POLICY_NAME_MAX}. */
static bool pool_name_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= POLICY_NAME_MAX &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

int ctl_cmd_protect(int argc, char **argv)
{
	struct pmw_protect_req req;
	const char *path, *pool;
	char *text = NULL;
	int r;

	memset(&req, 0, sizeof(req));
	pmw_header_init(&req.h, PMW_PROTECT_REQ, sizeof(req));
	r = ctl_process_args(argc, argv, "protect", "PID and POOL", 2, &path, &req.pid);
	if (r >= 0)
		return r;
	pool = argv[optind + 1];
	if (!pool_name_valid(pool))
		return ctl_usage_error("invalid pool name", pool);
	memcpy(req.pool, pool, strlen(pool) + 1);

	r = ctl_request(path, CTL_STATUS_TIMEOUT_MS, &req, sizeof(req), &text);
	if (r < 0)
		return ctl_request_error(path, r);
	return ctl_put_answer(text);      /* "ok: ...", or "pmallocctl: ..." and exit 1 */
}
