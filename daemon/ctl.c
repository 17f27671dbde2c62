/*
 * ctl.c - pmallocctl's entry point: global options, the command table, the
 * usage text and the exit statuses for usage errors.
 *
 * Owns nothing else: every command lives in its own ctl_*.c.  Must never
 * read the journal, the policy file or the socket itself, and must keep the
 * exit statuses of pmallocctl(8): 0 ok, 1 failure, 2 usage, 3 not running.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

struct ctl_command {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct ctl_command ctl_commands[] = {
	{ "check", ctl_cmd_check },
	{ "status", ctl_cmd_status },
	{ "protect", ctl_cmd_protect },
	{ "violations", ctl_cmd_violations },
};

void ctl_usage(FILE *f)
{
	fputs("Usage: " CTL_NAME " [--help] [--version] COMMAND [OPTIONS]\n"
	      "\n"
	      "Commands:\n"
	      "  check [FILE]                validate a policy file (default " CTL_DEFAULT_CONF ")\n"
	      "  status [--socket PATH]      processes pmallocd serves, their pools, violations\n"
	      "  violations [--pid PID] [--since TIME] [--json]\n"
	      "                              list the violations recorded in the journal\n"
	      "  protect PID POOL [--socket PATH]\n"
	      "                              ask process PID to protect its pool POOL now\n"
	      "                              (a pool with the \"manual\" trigger)\n"
	      "\n"
	      "TIME: \"YYYY-MM-DD [HH:MM[:SS]]\", \"today\", \"yesterday\", \"now\",\n"
	      "      \"-10min\", \"-2h\", \"-1d\" (also s, w), \"@SECONDS\" since the epoch\n"
	      "\n"
	      "Exit status: 0 ok, 1 failure, 2 usage error, 3 pmallocd not running\n"
	      "(status, protect).\n"
	      "See pmallocctl(8).\n", f);
}

static void put_error(const char *what, const char *word)
{
	fprintf(stderr, CTL_NAME ": %s", what);
	if (word) {
		fputs(" '", stderr);
		ctl_put_str(stderr, word, 0);
		fputc('\'', stderr);
	}
	fputc('\n', stderr);
}

int ctl_usage_error(const char *what, const char *word)
{
	put_error(what, word);
	fputs("Try '" CTL_NAME " --help' for more information.\n", stderr);
	return CTL_EXIT_USAGE;
}

/* A missing or unknown command: the whole usage, on stderr. */
static int command_error(const char *what, const char *word)
{
	put_error(what, word);
	fputc('\n', stderr);
	ctl_usage(stderr);
	return CTL_EXIT_USAGE;
}

int ctl_parse_pid(const char *s, int32_t *ret)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*ret = (int32_t)v;
	return 0;
}

int ctl_option_error(int c, char **argv)
{
	/* getopt leaves optind past the offending word. */
	const char *word = optind > 0 ? argv[optind - 1] : "?";
	char shortopt[3] = { '-', (char)optopt, '\0' };

	if (optopt != 0 && !(word[0] == '-' && word[1] == '-'))
		word = shortopt;
	if (c == ':')
		return ctl_usage_error("missing argument to option", word);
	return ctl_usage_error("unknown option", word);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	/* "+": stop at the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+:hV", options, NULL)) != -1) {
		switch (c) {
		case 'h':
			ctl_usage(stdout);
			return CTL_EXIT_OK;
		case 'V':
			printf(CTL_NAME " " CTL_VERSION "\n");
			return CTL_EXIT_OK;
		default:
			return ctl_option_error(c, argv);
		}
	}
	if (optind >= argc)
		return command_error("no command given", NULL);

	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++) {
		if (strcmp(argv[optind], ctl_commands[i].name) == 0) {
			int sub_argc = argc - optind;
			char **sub_argv = argv + optind;

			optind = 0;          /* glibc: start the next getopt_long afresh */
			return ctl_commands[i].run(sub_argc, sub_argv);
		}
	}
	return command_error("unknown command", argv[optind]);
}
