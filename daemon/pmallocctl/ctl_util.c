/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_util.c - what every pmallocctl command shares: the usage and help
 * texts, its options parsed against its entry of the command table (which
 * main() hands over, ctl_commands_set), usage errors and their exit
 * status, and PID arguments.
 *
 * Never calls a command, never reads the journal, the policy file or the
 * socket; keeps the exit statuses of pmallocctl(8): 0 ok, 1 failure,
 * 2 usage, 3 not running.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctl_escape.h"
#include "ctl_util.h"

/* The command table, main()'s (pmallocctl.c): handed over once, first. */
static const struct ctl_command *ctl_commands;
static size_t n_commands;

void ctl_commands_set(const struct ctl_command *commands, size_t n)
{
	ctl_commands = commands;
	n_commands = n;
}

void ctl_usage(FILE *f)
{
	fputs("Usage: " CTL_NAME " [--help] [--version] COMMAND [OPTIONS]\n"
	      "\n"
	      "Commands:\n", f);
	for (size_t i = 0; i < n_commands; i++)
		fputs(ctl_commands[i].synopsis, f);
	fputs("\n"
	      "\"" CTL_NAME " COMMAND --help\" tells more about COMMAND.\n"
	      "Exit status: 0 ok, 1 failure (or a refused policy file), 2 usage error,\n"
	      "3 pmallocd not running (status, protect).\n"
	      "See pmallocctl(8).\n", f);
}

const struct ctl_command *ctl_command(const char *name)
{
	for (size_t i = 0; i < n_commands; i++)
		if (strcmp(ctl_commands[i].name, name) == 0)
			return &ctl_commands[i];
	return NULL;
}

int ctl_help(const char *name)
{
	const struct ctl_command *cmd = ctl_command(name);

	if (!cmd)
		return CTL_EXIT_FAILURE;
	/* The synopsis without its leading indentation. */
	fputs("Usage: " CTL_NAME " ", stdout);
	fputs(cmd->synopsis + strspn(cmd->synopsis, " "), stdout);
	fputc('\n', stdout);
	fputs(cmd->help, stdout);
	fputs("See pmallocctl(8).\n", stdout);
	return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
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

int ctl_command_error(const char *what, const char *word)
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

int ctl_getopt(int argc, char **argv, const char *name, int *ret_exit)
{
	const struct ctl_command *cmd = ctl_command(name);
	int c = cmd ? getopt_long(argc, argv, cmd->opts, cmd->options, NULL) : '?';

	*ret_exit = -1;
	if (c == 'h')
		*ret_exit = ctl_help(name);
	else if (c == '?' || c == ':')
		*ret_exit = ctl_option_error(c, argv);
	else
		return c;
	return -1;
}
