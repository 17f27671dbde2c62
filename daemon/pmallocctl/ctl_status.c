/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_status.c - "pmallocctl status": pmallocd's status records, or one
 * process's, fetched as data (ctl_status_data.c) and worded as text
 * (ctl_status_text.c) or JSON (ctl_status_json.c), both from the same
 * records.  Never trusts them: every record is checked when read, and
 * every string escaped before it reaches the terminal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_escape.h"
#include "ctl_client.h"
#include "ctl_util.h"
#include "ctl_status_data.h"
#include "wire.h"

#define SITES_WAIT_STEP_MS 50
#define SITES_WAIT_STEPS 20

/* Whether st's process (status PID) waits for a fresh site table. */
static bool sites_pending(const struct ctl_status *st)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->recs[i].type == PMW_SR_PROCESS)
			return st->recs[i].nums[PMW_SR_P_SITES_ASKED_USEC] != PMW_SR_NONE;
	return false;
}

/* The whole status (pid 0), or the detail view of one process: its rules
 * and its per-site table.  pmallocd asks a process that reads its orders
 * for a fresh table; that table comes in asynchronously, so ask again
 * (without asking the process again) until it is there, for at most a
 * second. */
static int status_fetch(const char *path, int timeout_ms, int32_t pid, struct ctl_status **ret)
{
	static const struct timespec step = { 0, SITES_WAIT_STEP_MS * 1000000L };
	struct pmw_status_pid_req req;
	struct pmw_status_req all;
	struct ctl_status *st = NULL;
	int r;

	if (pid == 0) {
		pmw_header_init(&all.h, PMW_STATUS_REQ, sizeof(all));
		return ctl_status_data_fetch(path, timeout_ms, &all, sizeof(all), ret);
	}
	memset(&req, 0, sizeof(req));
	pmw_header_init(&req.h, PMW_STATUS_PID_REQ, sizeof(req));
	req.pid = pid;
	r = ctl_status_data_fetch(path, timeout_ms, &req, sizeof(req), &st);
	req.flags = PMW_STATUS_NO_ASK;
	for (int i = 0; r >= 0 && i < SITES_WAIT_STEPS && sites_pending(st); i++) {
		struct ctl_status *again = NULL;

		(void)nanosleep(&step, NULL);
		if (ctl_status_data_fetch(path, timeout_ms, &req, sizeof(req), &again) < 0)
			break;
		ctl_status_free(st);
		st = again;
	}
	if (r >= 0)
		*ret = st;
	return r;
}

/* Each policy's stage (learn, audit, enforce) as the policy file pmallocd
 * loaded says now: the workflow's place at a glance (pmallocctl ready says
 * whether an audit is done).  Nothing when the file cannot be read here. */
static void put_stages(FILE *f, const char *file)
{
	struct policy_set *set = NULL;
	char err[POLICY_ERR_MAX];
	if (!file || !file[0] || policy_set_load_file(file, &set, err, sizeof(err)) < 0)
		return;
	fputs("\npolicies (stage, as the policy file says now):\n", f);
	for (size_t i = 0; i < set->n_policies; i++) {
		const struct policy *p = &set->policies[i];
		fputs("  ", f);
		ctl_put_str(f, p->name, 0);
		fprintf(f, ": %s", policy_mode_name(p->mode));
		for (size_t k = 0; k < p->n_match_exe; k++) {
			fputs(k ? ", " : "  (exe ", f);
			ctl_put_str(f, p->match_exe[k], 0);
		}
		fputs(p->n_match_exe ? ")\n" : "\n", f);
	}
	if (!set->n_policies)
		fputs("  (none)\n", f);
	policy_set_free(set);
}

int ctl_cmd_status(int argc, char **argv)
{
	const char *arg = NULL, *path, *pid_arg = NULL;
	struct ctl_status *st = NULL;
	bool json = false;
	int32_t pid = 0;
	int c, r, ret = CTL_EXIT_OK;

	while ((c = ctl_getopt(argc, argv, "status", &r)) != -1) {
		if (c == 's')
			arg = optarg;
		else if (c == 'j')
			json = true;
		else
			pid_arg = optarg;
	}
	if (r >= 0)
		return r;
	if (!pid_arg && optind < argc)
		pid_arg = argv[optind++];
	if (optind < argc)
		return ctl_usage_error("status takes at most a PID, got also", argv[optind]);
	if (pid_arg && ctl_parse_pid(pid_arg, &pid) < 0)
		return ctl_usage_error("invalid PID", pid_arg);

	path = ctl_socket_path(arg);
	r = status_fetch(path, CTL_STATUS_TIMEOUT_MS, pid, &st);
	if (r < 0)
		return ctl_request_error(path, r);
	/* The detail view of a process pmallocd does not know: a failure. */
	if (pid && (st->recs[0].nums[PMW_SR_D_FLAGS] & PMW_SR_D_NO_SUCH))
		ret = CTL_EXIT_FAILURE;
	r = json ? ctl_status_json(stdout, st) : ctl_status_text(stdout, st);
	if (r == 0 && !json && !pid)
		put_stages(stdout, st->recs[0].strs[PMW_SR_D_POLICY_FILE]);
	ctl_status_free(st);
	return r == 0 && fflush(stdout) == 0 ? ret : CTL_EXIT_FAILURE;
}
