/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_learn_flush.c - pmallocctl learn-flush PID: asks pmallocd to have a
 * process under a learn policy write what it learned to the journal now
 * (as it does at exit).  pmallocd checks who asks (root or the process's
 * user) and that the process learns; this prints its answer.  The same
 * command line and request serve "pmallocctl sites PID" (ctl_sites.c).
 */
#define _GNU_SOURCE
#include "ctl.h"
#include "ctl_client.h"
#include "ctl_learn_flush.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int ctl_learn_flush_ask(int argc, char **argv, const char *name, int32_t *ret_pid, char **ret_text)
{
	struct pmw_protect_req req;
	const char *path;
	int r;

	memset(&req, 0, sizeof(req));
	pmw_header_init(&req.h, PMW_PROTECT_REQ, sizeof(req));
	req.reserved = PMW_LEARN_FLUSH;
	r = ctl_process_args(argc, argv, name, "one PID", 1, &path, &req.pid);
	if (r >= 0)
		return r;
	r = ctl_request(path, CTL_STATUS_TIMEOUT_MS, &req, sizeof(req), ret_text);
	if (r < 0)
		return ctl_request_error(path, r);
	*ret_pid = req.pid;
	return -1;
}

int ctl_cmd_learn_flush(int argc, char **argv)
{
	char *text = NULL;
	int32_t pid;
	int r = ctl_learn_flush_ask(argc, argv, "learn-flush", &pid, &text);

	return r >= 0 ? r : ctl_put_answer(text);
}
