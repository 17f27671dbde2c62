/*
 * ctl_protect.c - "pmallocctl protect PID POOL": the manual trigger from the
 * command line.  Sends PMW_PROTECT_REQ to pmallocd, which checks who asks
 * and passes PMW_PROTECT on to the process; prints pmallocd's answer.
 *
 * Owns the arguments of protect and the meaning of its answer: a first line
 * "ok: ..." is exit 0, "error: ..." exit 1 (pmallocctl(8)).  Never trusts
 * the answer (ctl_request() checks it; the text is escaped on output) and
 * never decides anything itself: whether the request is allowed is the
 * daemon's business, as only it knows the process and its policy.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
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
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pmw_protect_req req;
	const char *arg = NULL, *path, *pool;
	char *text = NULL;
	size_t len;
	int c, r, ret;

	while ((c = getopt_long(argc, argv, ":s:h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			arg = optarg;
			break;
		case 'h':
			return ctl_help("protect");
		default:
			return ctl_option_error(c, argv);
		}
	}
	if (argc - optind < 2)
		return ctl_usage_error("protect needs PID and POOL", NULL);
	if (argc - optind > 2)
		return ctl_usage_error("protect takes PID and POOL only, got", argv[optind + 2]);

	memset(&req, 0, sizeof(req));
	pmw_header_init(&req.h, PMW_PROTECT_REQ, sizeof(req));
	if (ctl_parse_pid(argv[optind], &req.pid) < 0)
		return ctl_usage_error("invalid PID", argv[optind]);
	pool = argv[optind + 1];
	if (!pool_name_valid(pool))
		return ctl_usage_error("invalid pool name", pool);
	memcpy(req.pool, pool, strlen(pool) + 1);

	path = ctl_socket_path(arg);
	r = ctl_request(path, CTL_STATUS_TIMEOUT_MS, &req, sizeof(req), &text);
	if (r < 0)
		return ctl_request_error(path, r);

	if (strncmp(text, "ok:", 3) == 0)
		ret = CTL_EXIT_OK;
	else
		ret = CTL_EXIT_FAILURE;      /* "error: ...", or an answer we do not know */
	len = strlen(text);
	ctl_put_text(ret == CTL_EXIT_OK ? stdout : stderr, text, len, CTL_ESC_MULTILINE);
	if (len == 0 || text[len - 1] != '\n')
		fputc('\n', ret == CTL_EXIT_OK ? stdout : stderr);
	free(text);
	if (fflush(stdout) != 0)
		return CTL_EXIT_FAILURE;
	return ret;
}
