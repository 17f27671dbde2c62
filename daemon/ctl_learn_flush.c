/*
 * ctl_learn_flush.c - pmallocctl learn-flush PID: asks pmallocd to have a
 * process under a learn policy write what it learned to the journal now
 * (as it does at exit).  pmallocd checks who asks (root or the process's
 * user) and that the process learns; this prints its answer.
 */
#define _GNU_SOURCE
#include "ctl.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int ctl_learn_flush_send(const char *path, int32_t pid, char **ret_text)
{
	struct pmw_protect_req req;
	memset(&req, 0, sizeof(req));
	pmw_header_init(&req.h, PMW_PROTECT_REQ, sizeof(req));
	req.reserved = PMW_LEARN_FLUSH;
	req.pid = pid;
	return ctl_request(path, CTL_STATUS_TIMEOUT_MS, &req, sizeof(req), ret_text);
}

int ctl_cmd_learn_flush(int argc, char **argv)
{
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int32_t pid;
	const char *arg = NULL, *path;
	char *text = NULL;
	size_t len;
	int c, r, ret;

	while ((c = getopt_long(argc, argv, ":s:h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			arg = optarg;
			break;
		case 'h':
			return ctl_help("learn-flush");
		default:
			return ctl_option_error(c, argv);
		}
	}
	if (argc - optind != 1)
		return ctl_usage_error("learn-flush takes one PID", argc - optind > 1 ? argv[optind + 1] : NULL);
	if (ctl_parse_pid(argv[optind], &pid) < 0)
		return ctl_usage_error("invalid PID", argv[optind]);
	path = ctl_socket_path(arg);
	r = ctl_learn_flush_send(path, pid, &text);
	if (r < 0)
		return ctl_request_error(path, r);
	ret = strncmp(text, "ok:", 3) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
	len = strlen(text);
	ctl_put_text(ret == CTL_EXIT_OK ? stdout : stderr, text, len, CTL_ESC_MULTILINE);
	if (len == 0 || text[len - 1] != '\n')
		fputc('\n', ret == CTL_EXIT_OK ? stdout : stderr);
	free(text);
	if (fflush(stdout) != 0)
		return CTL_EXIT_FAILURE;
	return ret;
}
