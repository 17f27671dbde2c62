/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pmallocctl.c - pmallocctl's entry point: global options, the command
 * table and the dispatch to a command (systemd's verbs table).
 *
 * Owns nothing else: every command lives in its own ctl_*.c, the usage,
 * help and option handling in ctl_util.c (handed the table here, so that
 * no command calls back into this file).  Must never read the journal, the
 * policy file or the socket itself.  Each command's help text and options
 * live here, in its one entry of the command table, beside its synopsis,
 * so that they cannot drift apart.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_util.h"
#include "paths.h"

/* A command's option table: options with a value (ARG) and without (FLAG). */
#define ARG(name, c) { name, required_argument, NULL, c }
#define FLAG(name, c) { name, no_argument, NULL, c }
#define OPTIONS(...) (const struct option[]){ __VA_ARGS__, { NULL, 0, NULL, 0 } }
#define HELP FLAG("help", 'h')

#define CTL_TIME_HELP \
	"TIME, as journalctl takes it: \"2026-03-01 09:40[:00[.123]]\", \"09:40\", \"Fri 09:40\",\n" \
	"\"today\", \"yesterday\", \"tomorrow\", \"now\", \"-1h30min\", \"5 min ago\", \"+10min\",\n" \
	"\"@SECONDS\"; a date or day may end in \" UTC\" or a zone (\"Europe/Berlin\").\n"

/* protect, learn-flush and sites: [--socket PATH] (ctl_process_args()). */
#define CTL_SOCKET_OPTIONS ":s:h", OPTIONS(ARG("socket", 's'), HELP)

static const struct ctl_command ctl_commands[] = {
	{ "check", ctl_cmd_check,
	  "  check [FILE]                validate a policy file (default " CTL_DEFAULT_CONF ")\n",
	  "Validates FILE as pmallocd would load it and lists its policies and pools.\n"
	  "Exit status: 0 valid, 1 refused (FILE:LINE: message on stderr), 2 usage.\n",
	  ":h", OPTIONS(HELP) },
	{ "status", ctl_cmd_status,
	  "  status [--socket PATH] [--json] [[--pid] PID]\n"
	  "                              processes pmallocd serves, their pools and rules,\n"
	  "                              policy file warnings, violations\n",
	  "With PID: that process alone, with every rule and its objects and bytes per site.\n"
	  "Options:\n"
	  "  --socket PATH   pmallocd's socket (default $PMALLOC_SOCKET, else " CTL_DEFAULT_SOCKET ")\n"
	  "  --json          one JSON object: {\"pmallocd\", \"policy_file\", \"served\", ...}\n"
	  "  -p, --pid PID   the detail view of process PID\n"
	  "Exit status: 0 ok, 1 failure (PID not served), 2 usage, 3 pmallocd not running.\n",
	  ":s:jp:h", OPTIONS(ARG("socket", 's'), FLAG("json", 'j'), ARG("pid", 'p'), HELP) },
	{ "violations", ctl_cmd_violations,
	  "  violations [--pid PID] [--unit UNIT] [--policy NAME] [--since TIME] [--until TIME]\n"
	  "             [-n N] [--reverse] [--cursor C | --after-cursor C] [--show-cursor]\n"
	  "             [--follow] [-o short|json|json-pretty|cat] [--full] [--no-pager]\n"
	  "             [--directory DIR | --file FILE]\n"
	  "                              list the violations recorded in the journal\n",
	  "Options (spelled as journalctl's where they mean the same):\n"
	  "  -p, --pid PID          only those of process PID\n"
	  "  -u, --unit UNIT        only those of processes of systemd unit UNIT (a glob;\n"
	  "                         no suffix: UNIT.service); may be given more than once\n"
	  "  -P, --policy NAME      only those under policy NAME\n"
	  "  -S, --since TIME       from TIME on\n"
	  "  -U, --until TIME       up to TIME\n"
	  "  -n, --lines N          only the last N (after a cursor: the first N)\n"
	  "  -r, --reverse          newest first\n"
	  "  -c, --cursor C         from the entry at cursor C on\n"
	  "      --after-cursor C   from the entry after cursor C on\n"
	  "      --show-cursor      end with \"-- cursor: C\" of the last entry shown\n"
	  "  -f, --follow           then wait for new ones and show them as they come\n"
	  "  -o, --output MODE      short (a table, the default), json (one object a line),\n"
	  "                         json-pretty, cat (the message alone)\n"
	  "  -j, --json             -o json\n"
	  "  -l, --full             every cell whole, however wide the table\n"
	  "      --no-full          fit the table to $COLUMNS or 80 even when not a terminal\n"
	  "      --no-pager         never page (on a terminal the output goes through\n"
	  "                         $SYSTEMD_PAGER, $PAGER or less, as journalctl's)\n"
	  "  -D, --directory DIR    read the journal files in DIR (systemd-journal-remote's\n"
	  "                         output, a copy of /var/log/journal): adds a HOST column\n"
	  "      --file FILE        read the journal file FILE (may be given more than once)\n"
	  "The table fits the terminal ($COLUMNS, else its width): long cells end in \"...\",\n"
	  "then the least needed columns go; --full shows everything.  BY says who wrote\n"
	  "the entry: pmallocd, self (the process itself, no daemon running) or FORGED\n"
	  "(any other process: the entry is not to be believed).\n"
	  CTL_TIME_HELP
	  "Exit status: 0 ok (violations found or not), 1 the journal cannot be read, 2 usage.\n",
	  ":p:u:P:S:U:n:rc:fo:jlD:h",
	  OPTIONS(ARG("pid", 'p'), ARG("unit", 'u'), ARG("policy", 'P'), ARG("since", 'S'),
		  ARG("until", 'U'), ARG("lines", 'n'), FLAG("reverse", 'r'), ARG("cursor", 'c'),
		  ARG("after-cursor", CTL_OPT_AFTER_CURSOR), FLAG("show-cursor", CTL_OPT_SHOW_CURSOR),
		  FLAG("follow", 'f'), ARG("output", 'o'), FLAG("json", 'j'), FLAG("full", 'l'),
		  FLAG("no-full", CTL_OPT_NO_FULL), FLAG("no-pager", CTL_OPT_NO_PAGER),
		  ARG("directory", 'D'), ARG("file", CTL_OPT_FILE), HELP) },
	{ "learn", ctl_cmd_learn,
	  "  learn --exe PATH [--output FILE] | learn UNIT [--output FILE]\n"
	  "                              the generic learn policy for a program\n",
	  "Writes a learn policy for PATH (its real path), or for the program of\n"
	  "UNIT's ExecStart: one pool, sites = [ \"*\" ], no wrappers, protected at the\n"
	  "program's first wait for events (\"on-wait\").  Its comments say how to learn\n"
	  "a program that is not a server and what to do next.\n"
	  "Options:\n"
	  "  -e, --exe PATH       the program\n"
	  "      --output FILE    put it into the policy file FILE: a new file, or in\n"
	  "                       place of PATH's policy in an existing one (every other\n"
	  "                       policy and the daemon group kept; FILE.bak the old file)\n"
	  "Exit status: 0 written, 1 failure, 2 usage.\n",
	  ":e:h", OPTIONS(ARG("exe", 'e'), ARG("output", CTL_OPT_OUTPUT_FILE), HELP) },
	{ "exercise", ctl_cmd_exercise,
	  "  exercise UNIT [--reload] [--respawn] [--stop]\n"
	  "                              do to a running service what a day does to it\n",
	  "While it learns or audits: a reload through the unit's ExecReload, one worker\n"
	  "(a child of the main process) killed by SIGKILL and its respawn awaited, a\n"
	  "stop through systemd.  Each step is said and checked: the unit active, its\n"
	  "main process alive, every TCP port its processes listen on answers.  A step\n"
	  "that does not apply (no ExecReload, no children) is refused with its reason.\n"
	  "Without an option: every step that applies, the stop last.  systemctl is\n"
	  "$PMALLOC_SYSTEMCTL when set.\n"
	  "Options:\n"
	  "      --reload    systemctl reload UNIT\n"
	  "      --respawn   one worker killed by SIGKILL, its respawn awaited\n"
	  "      --stop      systemctl stop UNIT\n"
	  "Exit status: 0 every step done and checked, 1 a check failed or a step asked\n"
	  "for does not apply, 2 usage.\n",
	  ":h", OPTIONS(FLAG("reload", CTL_OPT_RELOAD), FLAG("respawn", CTL_OPT_RESPAWN),
			      FLAG("stop", CTL_OPT_STOP), HELP) },
	{ "ready", ctl_cmd_ready,
	  "  ready (--exe PATH | POLICY) [--config FILE] [--min-time DURATION] [--since TIME] [--json]\n"
	  "                              is a policy in audit ready to enforce?\n",
	  "Reads the journal for the policy's executable since it was first handed out in\n"
	  "audit mode (after its last learn hand-out): time in audit, processes per role\n"
	  "(PMALLOC_ROLE; none: child when pmallocd saw it forked, else main), life-cycle\n"
	  "events per role (reloads: pools protected in a generation > 1; respawns:\n"
	  "processes of a child role first seen after the main process's first protect),\n"
	  "sites written in audit and whether the policy file still names them; then the\n"
	  "verdict and its reasons.  Ready when: the policy is in audit mode, it has been\n"
	  "for --min-time (default 24h), and no site it names was written in audit.\n"
	  "Reloads and workers not seen are said as notes: pmallocctl exercise them.\n"
	  "Options:\n"
	  "  -e, --exe PATH        the policy that matches PATH\n"
	  "      --config FILE     the policy file (default " CTL_DEFAULT_CONF ")\n"
	  "  -t, --min-time DUR    time in audit required (\"24h\", \"30min\", \"90s\", \"0\")\n"
	  "  -S, --since TIME      only evidence from TIME on\n"
	  "  -j, --json            one JSON object\n"
	  CTL_TIME_HELP
	  "Exit status: 0 ready, 1 not ready (or it cannot be told), 2 usage.\n",
	  ":e:t:S:jh", OPTIONS(ARG("exe", 'e'), ARG("config", CTL_OPT_CONFIG), ARG("min-time", 't'), ARG("since", 'S'),
			       FLAG("json", 'j'), HELP) },
	{ "propose", ctl_cmd_propose,
	  "  propose --exe PATH [--mode audit|enforce] [--run ID]... [--since TIME]\n"
	  "          [--uid USER]... [--unit UNIT] [--directory DIR | --file FILE]... [--output FILE]\n"
	  "                              a policy from what learn mode (and audit mode) recorded\n",
	  "Reads the learned contexts of PATH (its real path) and prints its policy: for\n"
	  "each call chain, the frame nearest the allocator whose allocations were all\n"
	  "made before the trigger, stayed live and were never written becomes a site,\n"
	  "the frames below it wrappers; each pool takes until its trigger (take =\n"
	  "\"until-trigger\") and says its coverage in comments.  Sites that audit mode\n"
	  "saw written (the journal's audit reports of PATH, same build) are left out,\n"
	  "each named in a comment with the writing function and how often.\n"
	  "By default the latest runs since the learn policy was loaded; entries of\n"
	  "another build of PATH are refused, entries from processes that did not run\n"
	  "PATH are not believed, entries of other users' runs are refused (counted).\n"
	  "Options:\n"
	  "  -e, --exe PATH       the program (required)\n"
	  "  -m, --mode MODE      audit (the default: the safe stage, writes reported and\n"
	  "                       let through) or enforce (a write kills)\n"
	  "      --run ID         this learn run (PMALLOC_RUN; may be given more than once)\n"
	  "  -S, --since TIME     only entries from TIME on\n"
	  "      --uid USER       also believe runs of USER (root's and yours are believed;\n"
	  "                       may be given more than once)\n"
	  "      --unit UNIT      also believe runs of UNIT's User=\n"
	  "  -D, --directory DIR  read the journal files in DIR (collected from hosts)\n"
	  "      --file FILE      read the journal file FILE (may be given more than once)\n"
	  "      --output FILE    put it into the policy file FILE, as learn --output does\n"
	  CTL_TIME_HELP
	  "Exit status: 0 proposed, 1 nothing to propose or the journal cannot be read, 2 usage.\n",
	  ":e:m:S:D:h", OPTIONS(ARG("exe", 'e'), ARG("mode", 'm'), ARG("run", CTL_OPT_RUN), ARG("since", 'S'),
				 ARG("output", CTL_OPT_OUTPUT_FILE), ARG("uid", CTL_OPT_UID), ARG("unit", CTL_OPT_UNIT),
				 ARG("directory", 'D'), ARG("file", CTL_OPT_FILE), HELP) },
	{ "learn-flush", ctl_cmd_learn_flush,
	  "  learn-flush PID [--socket PATH]\n"
	  "                              have PID (under a learn policy) write what it\n"
	  "                              learned to the journal now\n",
	  "Exit status: 0 sent, 1 refused, 2 usage, 3 pmallocd not running.\n",
	  CTL_SOCKET_OPTIONS },
	{ "sites", ctl_cmd_sites,
	  "  sites PID [--socket PATH]   live per-site objects and bytes of PID (learn mode)\n",
	  "Asks PID (under a learn policy) to write its sites to the journal, as\n"
	  "learn-flush does, and prints them: pool, site, objects, bytes, written.\n"
	  "Exit status: 0 ok, 1 refused or nothing came, 2 usage, 3 pmallocd not running.\n",
	  CTL_SOCKET_OPTIONS },
	{ "protect", ctl_cmd_protect,
	  "  protect PID POOL [--socket PATH]\n"
	  "                              ask process PID to protect its pool POOL now\n"
	  "                              (a pool with the \"manual\" trigger)\n",
	  "Exit status: 0 protected, 1 refused, 2 usage, 3 pmallocd not running.\n",
	  CTL_SOCKET_OPTIONS },
	{ "preload", ctl_cmd_preload,
	  "  preload enable|disable|status UNIT [--root DIR] [--library PATH]\n"
	  "                              preload the shim into a systemd service (drop-in)\n",
	  "enable writes DIR/etc/systemd/system/UNIT.d/pmalloc.conf with\n"
	  "  Environment=LD_PRELOAD=" PMALLOC_SHIM_PATH "\n"
	  "(then the unit's own LD_PRELOAD, if it has one; refused where a later setting\n"
	  "would win); disable removes it; status shows the unit's environment as its\n"
	  "files give it and whether the shim is preloaded.  UNIT without a suffix is\n"
	  "UNIT.service.  Then: systemctl daemon-reload && systemctl restart UNIT.\n"
	  "Options:\n"
	  "  --root DIR       the system's root (default /): an image, a container; every\n"
	  "                   path resolves inside DIR, links included\n"
	  "  --library PATH   preload PATH instead of the installed shim\n"
	  "Exit status: 0 ok (status: preloaded), 1 failure (status: not preloaded), 2 usage.\n",
	  ":h", OPTIONS(ARG("root", CTL_OPT_ROOT), ARG("library", CTL_OPT_LIBRARY), HELP) },
};

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct ctl_command *cmd;
	char **sub_argv;
	int c, sub_argc;

	ctl_commands_set(ctl_commands, sizeof(ctl_commands) / sizeof(ctl_commands[0]));
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
		return ctl_command_error("no command given", NULL);

	cmd = ctl_command(argv[optind]);
	if (!cmd)
		return ctl_command_error("unknown command", argv[optind]);
	sub_argc = argc - optind;
	sub_argv = argv + optind;
	optind = 0;                  /* glibc: start the next getopt_long afresh */
	return cmd->run(sub_argc, sub_argv);
}
