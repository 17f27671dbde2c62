/*
 * ctl_preload.c - "pmallocctl preload enable|disable|status UNIT": the
 * systemd drop-in that preloads the shim into one service,
 * ROOT/etc/systemd/system/UNIT.d/pmalloc.conf with
 * Environment=LD_PRELOAD=<the installed libpmalloc_shim.so>.
 *
 * Owns the drop-in's name and content.  Never touches any other file of the
 * unit, never runs systemctl (the admin reloads when ready; the hint says
 * how), and never writes outside ROOT/etc/systemd/system/UNIT.d: the unit
 * name is checked against systemd's unit name rules first, so it cannot
 * climb out ("../x") or name a path.  The drop-in is written to a temporary
 * file and renamed, so a reader sees the old one or the new one.
 */
#define _GNU_SOURCE                  /* asprintf */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "paths.h"

#define PRELOAD_UNIT_MAX 255         /* systemd's UNIT_NAME_MAX */
#define PRELOAD_FILE "pmalloc.conf"
#define PRELOAD_KEY "Environment=LD_PRELOAD="

/* A unit name as systemd accepts it: [A-Za-z0-9:_.\\@-]; a name without one
 * of the suffixes of units that run processes gets ".service", as systemctl
 * assumes; units that run none (targets, slices...) are refused.  0 and
 * *ret (malloc'ed), or -EINVAL. */
static int preload_unit_name(const char *s, char **ret)
{
	static const char *const runs[] = {
		".service", ".socket", ".mount", ".swap",
	};
	static const char *const none[] = {
		".target", ".slice", ".device", ".automount", ".timer", ".path", ".scope",
	};
	static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789:_.\\@-";
	const char *dot = strrchr(s, '.');
	size_t len = strlen(s);

	if (len == 0 || len > PRELOAD_UNIT_MAX || strspn(s, allowed) != len || s[0] == '.' ||
	    s[0] == '@' || s[len - 1] == '.')
		return -EINVAL;
	for (size_t i = 0; dot && i < sizeof(runs) / sizeof(runs[0]); i++)
		if (strcmp(dot, runs[i]) == 0)
			return (*ret = strdup(s)) ? 0 : -ENOMEM;
	for (size_t i = 0; dot && i < sizeof(none) / sizeof(none[0]); i++)
		if (strcmp(dot, none[i]) == 0)
			return -EINVAL;
	if (len + strlen(".service") > PRELOAD_UNIT_MAX)
		return -EINVAL;
	return asprintf(ret, "%s.service", s) < 0 ? -ENOMEM : 0;
}

/* mkdir -p of the parts of path below root (root itself must exist). */
static int preload_mkdirs(const char *root, const char *path)
{
	char *p = strdup(path);
	size_t skip = strlen(root);
	int r = 0;

	if (!p)
		return -ENOMEM;
	for (char *q = p + skip + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*q = '/';
	}
	if (r == 0 && mkdir(p, 0755) < 0 && errno != EEXIST)
		r = -errno;
	free(p);
	return r;
}

static int preload_write(const char *dir, const char *file, const char *unit, const char *lib)
{
	char *tmp = NULL;
	FILE *f;
	int fd, r = 0;

	if (asprintf(&tmp, "%s/.#" PRELOAD_FILE "XXXXXX", dir) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		return r;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		goto out;
	}
	fprintf(f, "# Written by \"" CTL_NAME " preload enable %s\"; \"" CTL_NAME
		" preload disable %s\" removes it.\n"
		"# Every process of the unit loads the pmalloc shim; pmallocd (or\n"
		"# /etc/pmalloc.conf) decides what it protects: see pmallocctl(8).\n"
		"[Service]\n" PRELOAD_KEY "%s\n", unit, unit, lib);
	if (fchmod(fileno(f), 0644) < 0 || fflush(f) != 0 || fsync(fileno(f)) < 0)
		r = -errno;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, file) < 0)
		r = -errno;
out:
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}

/* The LD_PRELOAD value of our drop-in file: 0 and *ret (malloc'ed),
 * -ENOENT (no drop-in), -ENODATA (a drop-in without the line), -errno. */
static int preload_read(const char *file, char **ret)
{
	FILE *f = fopen(file, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = -ENODATA;

	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (strncmp(line, PRELOAD_KEY, strlen(PRELOAD_KEY)) == 0) {
			free(*ret);
			*ret = strdup(line + strlen(PRELOAD_KEY));
			r = *ret ? 0 : -ENOMEM;
		}
	}
	free(line);
	fclose(f);
	return r;
}

/* Whether /etc/ld.so.preload (under root) names the shim: then every
 * process has it, drop-in or not. */
static bool preload_global(const char *root)
{
	char *path = NULL, *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	if (asprintf(&path, "%s/etc/ld.so.preload", root) < 0)
		return false;
	f = fopen(path, "re");
	free(path);
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, "libpmalloc_shim.so") != NULL;
	free(line);
	fclose(f);
	return found;
}

static void preload_error(const char *what, const char *path, int r)
{
	fprintf(stderr, CTL_NAME ": %s ", what);
	ctl_put_str(stderr, path, 0);
	fprintf(stderr, ": %s\n", strerror(-r));
}

int ctl_cmd_preload(int argc, char **argv)
{
	const char *root = "", *lib = PMALLOC_SHIM_PATH, *action;
	char *unit = NULL, *dir = NULL, *file = NULL, *value = NULL, *libpath = NULL;
	char *rootbuf = NULL;
	size_t rootlen;
	int c, r, ret = CTL_EXIT_FAILURE;

	while ((c = ctl_getopt(argc, argv, "preload", &r)) != -1) {
		if (c == 'r')
			root = optarg;
		else
			lib = optarg;
	}
	if (r >= 0)
		return r;
	if (argc - optind != 2)
		return ctl_usage_error(argc - optind < 2 ? "preload needs an action and a unit"
							 : "preload takes one unit, got",
				       argc - optind > 2 ? argv[optind + 2] : NULL);
	action = argv[optind];
	if (strcmp(action, "enable") != 0 && strcmp(action, "disable") != 0 &&
	    strcmp(action, "status") != 0)
		return ctl_usage_error("preload: unknown action (enable, disable, status)", action);
	if (lib[0] != '/' || strpbrk(lib, " \t\n\\\"'%$") != NULL)
		return ctl_usage_error("--library must be an absolute path without spaces, quotes, "
				       "'%', '$' or backslashes", lib);
	r = preload_unit_name(argv[optind + 1], &unit);
	if (r == -ENOMEM)
		goto oom;
	if (r < 0)
		return ctl_usage_error("not a unit name that runs processes", argv[optind + 1]);
	/* "--root /" and "--root DIR/" name the same files as without the slash. */
	rootlen = strlen(root);
	while (rootlen > 0 && root[rootlen - 1] == '/')
		rootlen--;
	root = rootbuf = strndup(root, rootlen);
	if (!rootbuf)
		goto oom;
	if (asprintf(&dir, "%s/etc/systemd/system/%s.d", root, unit) < 0 ||
	    asprintf(&file, "%s/" PRELOAD_FILE, dir) < 0 ||
	    asprintf(&libpath, "%s%s", root, lib) < 0)
		goto oom;

	if (strcmp(action, "enable") == 0) {
		if (root[0] && access(root, F_OK) < 0) {
			preload_error("no such root", root, -errno);
			goto out;
		}
		r = preload_mkdirs(root, dir);
		if (r == 0)
			r = preload_write(dir, file, unit, lib);
		if (r < 0) {
			preload_error("cannot write", file, r);
			goto out;
		}
		printf("%s: preloads %s (%s)\n", unit, lib, file);
		if (access(libpath, F_OK) < 0)
			fprintf(stderr, CTL_NAME ": warning: %s does not exist (yet): the unit will "
				"run unprotected until it does\n", libpath);
		if (!root[0])
			printf("Run \"systemctl daemon-reload && systemctl restart %s\" to apply.\n", unit);
		ret = CTL_EXIT_OK;
	} else if (strcmp(action, "disable") == 0) {
		if (unlink(file) < 0 && errno != ENOENT) {
			preload_error("cannot remove", file, -errno);
			goto out;
		}
		(void)rmdir(dir);            /* only when nothing else is in it */
		printf("%s: not preloaded\n", unit);
		if (!root[0])
			printf("Run \"systemctl daemon-reload && systemctl restart %s\" to apply.\n", unit);
		ret = CTL_EXIT_OK;
	} else {
		r = preload_read(file, &value);
		if (r == 0) {
			printf("%s: preloaded: LD_PRELOAD=", unit);
			ctl_put_str(stdout, value, 0);
			printf(" (%s)\n", file);
			ret = CTL_EXIT_OK;
		} else if (r == -ENOENT || r == -ENODATA) {
			printf("%s: not preloaded%s\n", unit, r == -ENODATA ? " (the drop-in has no "
			       PRELOAD_KEY " line)" : "");
		} else {
			preload_error("cannot read", file, r);
		}
		if (preload_global(root)) {
			printf("%s/etc/ld.so.preload names the shim: every process loads it\n", root);
			ret = CTL_EXIT_OK;
		}
	}
	goto out;
oom:
	fputs(CTL_NAME ": out of memory\n", stderr);
out:
	free(unit);
	free(dir);
	free(file);
	free(value);
	free(libpath);
	free(rootbuf);
	if (fflush(stdout) != 0)
		ret = CTL_EXIT_FAILURE;
	return ret;
}
