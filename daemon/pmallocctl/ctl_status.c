/*
 * ctl_status.c - "pmallocctl status": pmallocd's status text, or one
 * process's, asked through ctl_client.c and shown escaped (or as JSON,
 * ctl_status_json.c).  Never trusts the text: it is escaped before it
 * reaches the terminal.
 */
#define _GNU_SOURCE                  /* secure_getenv */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "wire.h"


#define SITES_WAIT_STEP_MS 50
#define SITES_WAIT_STEPS 20

/* The detail view of one process: its rules and its per-site table.
 * pmallocd asks a process that reads its orders for a fresh table; that
 * table comes in asynchronously, so ask again (without asking the process
 * again) until it is there, for at most a second. */
static int status_pid_fetch(const char *path, int timeout_ms, int32_t pid, char **ret_text)
{
	static const struct timespec step = { 0, SITES_WAIT_STEP_MS * 1000000L };
	struct pmw_status_pid_req req;
	char *text = NULL;
	int r;

	memset(&req, 0, sizeof(req));
	pmw_header_init(&req.h, PMW_STATUS_PID_REQ, sizeof(req));
	req.pid = pid;
	r = ctl_request(path, timeout_ms, &req, sizeof(req), &text);
	req.flags = PMW_STATUS_NO_ASK;
	for (int i = 0; r >= 0 && i < SITES_WAIT_STEPS && strstr(text, "\n    sites: a fresh table asked"); i++) {
		char *again = NULL;

		(void)nanosleep(&step, NULL);
		if (ctl_request(path, timeout_ms, &req, sizeof(req), &again) < 0)
			break;
		free(text);
		text = again;
	}
	if (r >= 0)
		*ret_text = text;
	return r;
}

int ctl_cmd_status(int argc, char **argv)
{
	const char *arg = NULL, *path, *pid_arg = NULL;
	char *text = NULL;
	bool json = false;
	int32_t pid = 0;
	size_t len;
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
	r = pid ? status_pid_fetch(path, CTL_STATUS_TIMEOUT_MS, pid, &text)
		: ctl_status_fetch(path, CTL_STATUS_TIMEOUT_MS, &text);
	if (r < 0)
		return ctl_request_error(path, r);
	/* The detail view of a process pmallocd does not know: a failure. */
	if (pid && strstr(text, "\nno such process: "))
		ret = CTL_EXIT_FAILURE;

	if (json) {
		(void)ctl_status_json(stdout, text);
		free(text);
		return fflush(stdout) == 0 ? ret : CTL_EXIT_FAILURE;
	}
	len = strlen(text);
	ctl_put_text(stdout, text, len, CTL_ESC_MULTILINE);
	if (len == 0 || text[len - 1] != '\n')
		putchar('\n');
	free(text);
	return fflush(stdout) == 0 ? ret : CTL_EXIT_FAILURE;
}
