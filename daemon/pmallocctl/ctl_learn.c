/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_learn.c - "pmallocctl learn": the generic learn policy for one
 * executable (or a unit's ExecStart program), which needs no knowledge of
 * the program: one pool, every site, no wrappers, protected at the first
 * wait for events.
 *
 * Owns the text of that policy and finding a unit's program.  Must never
 * name a function of the program: what it learns is propose's to choose.
 * Writes stdout, or --output through ctl_conf_put_policy() (which keeps
 * every other policy of an existing file).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_conf_merge.h"
#include "ctl_escape.h"
#include "ctl_quote.h"
#include "ctl_util.h"

/* The program of ExecStart= in a line: its first word after the prefixes
 * systemd allows (-, @, :, +, !), malloc'ed; NULL when none. */
static char *exec_program(const char *v)
{
	v += strspn(v, " \t");
	v += strspn(v, "-@:+!");
	size_t n = strcspn(v, " \t\n");
	return n ? strndup(v, n) : NULL;
}

/* The unit's ExecStart program as `systemctl show` says it, else from its
 * unit file and drop-ins (the last ExecStart= after the last reset). */
static char *unit_program(const char *unit)
{
	char name[NAME_MAX + 1], *line = NULL, *prog = NULL;
	size_t cap = 0;
	if (snprintf(name, sizeof(name), "%s%s", unit, strchr(unit, '.') ? "" : ".service") >= (int)sizeof(name) ||
	    strchr(unit, '/'))
		return NULL;
	/* systemctl as exercise runs it ($PMALLOC_SYSTEMCTL, else on PATH), so
	 * that the one stand-in a test gives answers both. */
	const char *sc = getenv("PMALLOC_SYSTEMCTL");
	if (!sc || !sc[0])
		sc = "systemctl";
	char cmd[PATH_MAX + NAME_MAX + 64];
	int cn = snprintf(cmd, sizeof(cmd), "'%s' show -P ExecStart -- '%s' 2>/dev/null", sc, name);
	if (cn > 0 && cn < (int)sizeof(cmd) && !strchr(name, '\'') && !strchr(sc, '\'')) {
		FILE *p = popen(cmd, "re");
		if (p) {
			if (getline(&line, &cap, p) > 0) {
				char *path = strstr(line, "path=");
				if (path)
					prog = exec_program(path + 5);
				if (prog && prog[strlen(prog) - 1] == ';')
					prog[strlen(prog) - 1] = '\0';
			}
			pclose(p);
		}
	}
	static const char *const dirs[] = { "/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
					    "/lib/systemd/system", "/usr/lib/systemd/system" };
	for (size_t d = 0; !prog && d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dirs[d], name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		/* The unit file, then its drop-ins in every directory, in name order. */
		for (size_t k = 0;; k++) {
			while (f && getline(&line, &cap, f) > 0) {
				if (strncmp(line, "ExecStart=", 10) != 0)
					continue;
				char *p = exec_program(line + 10);
				free(prog);
				prog = p;            /* an empty ExecStart= resets */
			}
			if (f)
				fclose(f);
			f = NULL;
			if (k == sizeof(dirs) / sizeof(dirs[0]))
				break;
			char dropdir[PATH_MAX];
			struct dirent **ents = NULL;
			snprintf(dropdir, sizeof(dropdir), "%s/%s.d", dirs[k], name);
			int n = scandir(dropdir, &ents, NULL, alphasort);
			for (int i = 0; i < n; i++) {
				size_t len = strlen(ents[i]->d_name);
				if (len > 5 && strcmp(ents[i]->d_name + len - 5, ".conf") == 0) {
					char drop[PATH_MAX + NAME_MAX + 2];
					snprintf(drop, sizeof(drop), "%s/%s", dropdir, ents[i]->d_name);
					FILE *g = fopen(drop, "re");
					while (g && getline(&line, &cap, g) > 0)
						if (strncmp(line, "ExecStart=", 10) == 0) {
							char *p = exec_program(line + 10);
							free(prog);
							prog = p;
						}
					if (g)
						fclose(g);
				}
				free(ents[i]);
			}
			free(ents);
		}
		break;
	}
	free(line);
	return prog;
}

/* The policy element, every value through ctl_conf_quote(). */
static char *learn_policy(const char *exe)
{
	char name[64], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	const char *base = strrchr(exe, '/');
	ctl_conf_ident(base ? base + 1 : exe, name, sizeof(name));
	if (!name[0])
		snprintf(name, sizeof(name), "learn");
	fputs("{\n"
	      "    # The generic learn policy, written by pmallocctl learn: every allocation\n"
	      "    # goes to one pool, protected at the program's first wait for events\n"
	      "    # (\"on-wait\": epoll_wait, poll, select, accept, sigsuspend, ... see\n"
	      "    # pmalloc.conf(5)), which is when a server has read its configuration.\n"
	      "    # Learning records, per allocation context, what was written after that.\n"
	      "    # A program that is not a server: protect = [ \"after:30s\" ] (a time by\n"
	      "    # which its start-up is done), or [ \"manual\" ] and then\n"
	      "    # \"pmallocctl protect PID learned\" when it is ready.\n"
	      "    # Next: run the program under its usual load (the shim preloaded:\n"
	      "    # pmallocctl preload enable UNIT), stop it (what it learned goes to the\n"
	      "    # journal at exit; or pmallocctl learn-flush PID), then\n"
	      "    # pmallocctl propose --exe ", f);
	ctl_conf_quote(f, exe);
	fputs(" --output FILE\n"
	      "    # writes the enforce policy in place of this one.\n"
	      "    name = ", f);
	ctl_conf_quote(f, name);
	fputs(";\n    match = { exe = [ ", f);
	ctl_conf_quote(f, exe);
	fputs(" ]; };\n"
	      "    mode = \"learn\";\n"
	      "    pools = (\n"
	      "      {\n"
	      "        name = \"learned\";\n"
	      "        sites = [ \"*\" ];\n"
	      "        protect = [ \"on-wait\" ];\n"
	      "      }\n"
	      "    );\n"
	      "  }", f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int ctl_cmd_learn(int argc, char **argv)
{
	const char *exe_arg = NULL, *output = NULL, *unit = NULL;
	char exe[PATH_MAX], *prog = NULL;
	int c, ret;

	opterr = 0;
	while ((c = ctl_getopt(argc, argv, "learn", &ret)) != -1) {
		if (c == 'e')
			exe_arg = optarg;
		else if (c == CTL_OPT_OUTPUT_FILE)
			output = optarg;
	}
	if (ret >= 0)
		return ret;
	if (optind < argc)
		unit = argv[optind++];
	if (optind < argc)
		return ctl_usage_error("unexpected argument", argv[optind]);
	if (!exe_arg == !unit)
		return ctl_usage_error("give either --exe PATH or a UNIT", NULL);
	if (unit) {
		prog = unit_program(unit);
		if (!prog || prog[0] != '/') {
			fprintf(stderr, CTL_NAME ": learn: no ExecStart program found for unit ");
			ctl_put_str(stderr, unit, 0);
			fputc('\n', stderr);
			free(prog);
			return CTL_EXIT_FAILURE;
		}
		exe_arg = prog;
	}
	/* exe globs match the real path (/usr/bin/redis-server is a link). */
	if (!realpath(exe_arg, exe)) {
		fprintf(stderr, CTL_NAME ": learn: ");
		ctl_put_str(stderr, exe_arg, 0);
		fprintf(stderr, ": %s\n", strerror(errno));
		free(prog);
		return CTL_EXIT_FAILURE;
	}
	free(prog);
	char *text = learn_policy(exe);
	if (!text)
		return CTL_EXIT_FAILURE;
	int status = CTL_EXIT_FAILURE;
	if (output) {
		if (ctl_conf_put_policy(output, exe, text, "learn") == 0)
			status = CTL_EXIT_OK;
	} else {
		struct policy_set *set = NULL;
		char err[POLICY_ERR_MAX], *whole = NULL;
		if (asprintf(&whole, "version = 1;\npolicies = (\n  %s\n);\n", text) < 0)
			whole = NULL;
		if (whole && policy_set_load_string(whole, "learn policy", &set, err, sizeof(err)) < 0)
			fprintf(stderr, CTL_NAME ": learn: the policy does not load (a bug): %s\n", err);
		else if (whole && fputs(whole, stdout) >= 0 && fflush(stdout) == 0)
			status = CTL_EXIT_OK;
		policy_set_free(set);
		free(whole);
	}
	free(text);
	return status;
}
