/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_preload.c - "pmallocctl preload enable|disable|status UNIT": the
 * systemd drop-in that preloads the shim into one service,
 * ROOT/etc/systemd/system/UNIT.d/pmalloc.conf with
 * Environment=LD_PRELOAD=<the installed runtime library, by its SONAME:
 * LIBDIR/libpmalloc_shim.so.0>, the development link libpmalloc_shim.so
 * being absent where the -dev package is not installed, and the unit
 * ordered after pmallocd.service (wanted), so its processes find it up.
 *
 * Owns the drop-in's name and content and how it composes with an
 * LD_PRELOAD the unit already sets: the shim comes first (the first object
 * defining malloc wins; the shim hands what it does not route to the next
 * one), then the unit's own libraries as its files set them before the
 * drop-in (ctl_unit_env.c).  Where the drop-in cannot win (a later drop-in
 * sets LD_PRELOAD, an EnvironmentFile= sets it, UnsetEnvironment= removes
 * it) enable refuses and says which file.  Never touches any other file of
 * the unit, never runs systemctl (the admin reloads when ready; the hint
 * says how).  Every path is resolved beneath ROOT (ctl_root.c): links in an
 * image tree never make it write or remove anything outside; the unit name
 * is checked against systemd's unit name rules first, so it cannot climb
 * out ("../x") or name a path.  The drop-in is written to a temporary file
 * and renamed, so a reader sees the old one or the new one.
 */
#define _GNU_SOURCE                  /* asprintf */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_escape.h"
#include "ctl_root.h"
#include "ctl_unit_env.h"
#include "ctl_util.h"
#include "paths.h"

#define PRELOAD_UNIT_MAX 255         /* systemd's UNIT_NAME_MAX */
#define PRELOAD_FILE "pmalloc.conf"
#define PRELOAD_KEY "Environment=LD_PRELOAD="
#define PRELOAD_SHIM_NAME "libpmalloc_shim.so"
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

/* Whether a word of LD_PRELOAD names the shim (any path, any version). */
static bool preload_is_shim(const char *word, size_t len)
{
	const char *base = word;

	for (size_t i = 0; i < len; i++)
		if (word[i] == '/')
			base = word + i + 1;
	return (size_t)(word + len - base) >= strlen(PRELOAD_SHIM_NAME) &&
	       strncmp(base, PRELOAD_SHIM_NAME, strlen(PRELOAD_SHIM_NAME)) == 0;
}

/* LD_PRELOAD for the drop-in: lib, then the words of before (separated by
 * spaces or colons, as ld.so reads them) that are not the shim.  0 and
 * *ret (malloc'ed), -EINVAL (before has '%' specifiers or control
 * characters, which the drop-in could not carry as they mean), -ENOMEM. */
static int preload_compose(const char *lib, const char *before, char **ret)
{
	size_t cap = strlen(lib) + (before ? strlen(before) : 0) + 2, n;
	char *v;

	for (const char *p = before; p && *p; p++)
		if (*p == '%' || (unsigned char)*p < 0x20 || *p == 0x7f)
			return -EINVAL;
	v = malloc(cap);
	if (!v)
		return -ENOMEM;
	n = (size_t)sprintf(v, "%s", lib);
	for (const char *p = before; p && *p; ) {
		size_t len;

		p += strspn(p, " :");
		len = strcspn(p, " :");
		if (len > 0 && !preload_is_shim(p, len))
			n += (size_t)sprintf(v + n, " %.*s", (int)len, p);
		p += len;
	}
	*ret = v;
	return 0;
}

/* The Environment= line for value, quoted for systemd when it has more than
 * one word ('"' and '\\' escaped inside the quotes). */
static void preload_put_line(FILE *f, const char *value)
{
	if (!strchr(value, ' ')) {
		fprintf(f, PRELOAD_KEY "%s\n", value);
		return;
	}
	fputs("Environment=\"LD_PRELOAD=", f);
	for (const char *p = value; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		fputc(*p, f);
	}
	fputs("\"\n", f);
}

/* The drop-in's text, malloc'ed in *ret (its length in *ret_len). */
static int preload_text(const char *unit, const char *value, const char *own_from, char **ret, size_t *ret_len)
{
	FILE *f = open_memstream(ret, ret_len);

	if (!f)
		return -errno;
	fprintf(f, "# Written by \"" CTL_NAME " preload enable %s\"; \"" CTL_NAME
		" preload disable %s\" removes it.\n"
		"# Every process of the unit loads the pmalloc shim; pmallocd (or\n"
		"# /etc/pmalloc.conf) decides what it protects: see pmallocctl(8).\n", unit, unit);
	if (own_from)
		fprintf(f, "# The shim comes first, then the unit's own LD_PRELOAD as %s\n"
			"# set it when this was written: enable again after changing that.\n", own_from);
	/* Started after pmallocd has started (Type=notify: ready), so that its
	 * processes find it answering: the first client of a socket-activated
	 * pmallocd can wait longer than the shim does (100 ms), and then runs
	 * on /etc/pmalloc.conf alone, out of pmallocd's sight. */
	fputs("[Unit]\nWants=pmallocd.service\nAfter=pmallocd.service\n[Service]\n", f);
	preload_put_line(f, value);
	if (fclose(f) != 0) {
		free(*ret);
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Whether the drop-in there holds exactly text (a link is not read). */
static bool preload_same(int dir_fd, const char *text, size_t len)
{
	char buf[8192];
	int fd = openat(dir_fd, PRELOAD_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n >= 0 && (size_t)n == len && memcmp(buf, text, len) == 0;
}

/* Writes the drop-in, unless it holds the same text already: its file is
 * then left as it is, so that systemd does not see it changed (and warn
 * "changed on disk" at the next systemctl) when enable is run again. */
static int preload_write(int dir_fd, const char *unit, const char *value, const char *own_from)
{
	char tmp[sizeof(".#" PRELOAD_FILE) + 16];
	char *text = NULL;
	size_t len = 0;
	uint64_t rnd = 0;
	FILE *f;
	int fd = -1, r;

	r = preload_text(unit, value, own_from, &text, &len);
	if (r < 0)
		return r;
	if (preload_same(dir_fd, text, len)) {
		free(text);
		return 0;
	}
	/* O_EXCL|O_NOFOLLOW: a name the tree's owner planted is never opened. */
	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd ^= (uint64_t)getpid() << 20 ^ (uint64_t)tries;
		snprintf(tmp, sizeof(tmp), ".#" PRELOAD_FILE "%08x", (unsigned)rnd);
		fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST) {
			r = -errno;
			free(text);
			return r;
		}
	}
	if (fd < 0) {
		free(text);
		return -EEXIST;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		goto out;
	}
	fwrite(text, 1, len, f);
	if (fchmod(fileno(f), 0644) < 0 || fflush(f) != 0 || fsync(fileno(f)) < 0)
		r = -errno;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dir_fd, tmp, dir_fd, PRELOAD_FILE) < 0)
		r = -errno;
out:
	if (r < 0)
		unlinkat(dir_fd, tmp, 0);
	free(text);
	return r;
}

/* Whether /etc/ld.so.preload (beneath the root) names the shim: then every
 * process has it, drop-in or not. */
static bool preload_global(int root_fd)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	if (ctl_root_fopen(root_fd, "/etc/ld.so.preload", &f) < 0)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, PRELOAD_SHIM_NAME) != NULL;
	free(line);
	fclose(f);
	return found;
}

static bool preload_exists(int root_fd, const char *path)
{
	int fd;

	if (ctl_root_openat(root_fd, path, O_PATH, 0, &fd) < 0)
		return false;
	close(fd);
	return true;
}

static void preload_error(const char *what, const char *root, const char *path, int r)
{
	fprintf(stderr, CTL_NAME ": %s ", what);
	ctl_put_str(stderr, root, 0);
	ctl_put_str(stderr, path, 0);
	fprintf(stderr, ": %s\n", r == -ENOSYS ? "the kernel has no openat2(2), which --root needs"
				 : r == -ELOOP ? "it is, or passes through, a symbolic link (give its real path)"
				 : r == -EPERM ? "it is owned by another user (chown it to root, or run as its owner)"
				 : strerror(-r));
}

/* The effective Environment= of the unit, as "systemctl show -p
 * Environment" prints it: words with spaces in double quotes. */
static void preload_put_env(const char *root, const struct ctl_unit_env *env)
{
	fputs("Environment=", stdout);
	for (size_t i = 0; i < env->n_vars; i++) {
		bool quote = strchr(env->vars[i], ' ') != NULL;

		fputs(i ? " " : "", stdout);
		fputs(quote ? "\"" : "", stdout);
		ctl_put_str(stdout, env->vars[i], 0);
		fputs(quote ? "\"" : "", stdout);
	}
	printf("\n  (what the unit files beneath %s say; systemd applies them after "
	       "\"systemctl daemon-reload\")\n", root[0] ? root : "/");
}

/* Who the unit's processes start as: what propose's --uid needs to know
 * (a program may still change user itself, as nginx's workers do). */
static void preload_put_user(const char *unit, const struct ctl_unit_env *env)
{
	printf("%s: starts as %s", unit, env->user ? "" : "root (no User=)");
	if (env->user)
		ctl_put_str(stdout, env->user, 0);
	putchar('\n');
}

static int preload_enable(int root_fd, const char *root, const char *unit, const char *dir,
			  const char *file, const char *lib)
{
	struct ctl_unit_env env;
	char *value = NULL;
	int dir_fd, r;

	r = ctl_unit_env_read(root_fd, unit, file, &env);
	if (r < 0)
		return r;
	if (env.blocker || env.after) {
		fprintf(stderr, CTL_NAME ": cannot preload %s: ", unit);
		if (env.blocker) {
			ctl_put_str(stderr, root, 0);
			ctl_put_str(stderr, env.blocker, 0);
		} else {
			ctl_put_str(stderr, root, 0);
			ctl_put_str(stderr, env.after, 0);
			fputs(" sets LD_PRELOAD after " PRELOAD_FILE " and would win", stderr);
		}
		fputs("; add the shim to the unit's own LD_PRELOAD by hand (see pmallocctl(8))\n",
		      stderr);
		r = CTL_EXIT_FAILURE;
		goto out;
	}
	r = preload_compose(lib, env.preload_before, &value);
	if (r == -EINVAL) {
		fprintf(stderr, CTL_NAME ": cannot preload %s: its LD_PRELOAD (", unit);
		ctl_put_str(stderr, root, 0);
		ctl_put_str(stderr, env.preload_before_from, 0);
		fputs(") has '%' specifiers or control characters; add the shim to it by hand\n",
		      stderr);
		r = CTL_EXIT_FAILURE;
		goto out;
	}
	if (r < 0)
		goto out;
	r = ctl_root_mkdirs(root_fd, dir, &dir_fd);
	if (r == 0) {
		r = preload_write(dir_fd, unit, value,
				  strcmp(value, lib) != 0 ? env.preload_before_from : NULL);
		close(dir_fd);
	}
	if (r < 0) {
		preload_error("cannot write", root, file, r);
		r = CTL_EXIT_FAILURE;
		goto out;
	}
	printf("%s: preloads %s (%s%s)\n", unit, lib, root, file);
	if (strcmp(value, lib) != 0) {
		printf("%s: LD_PRELOAD=", unit);
		ctl_put_str(stdout, value, 0);
		printf(": the shim, then the unit's own from %s%s\n", root, env.preload_before_from);
	}
	if (env.fragment)
		preload_put_user(unit, &env);
	if (!env.fragment)
		fprintf(stderr, CTL_NAME ": warning: no unit file %s beneath %s (yet)\n", unit,
			root[0] ? root : "/");
	if (!preload_exists(root_fd, lib))
		fprintf(stderr, CTL_NAME ": warning: %s%s does not exist (yet): the unit will "
			"run unprotected until it does\n", root, lib);
	if (!root[0])
		printf("Run \"systemctl daemon-reload && systemctl restart %s\" to apply.\n", unit);
	r = CTL_EXIT_OK;
out:
	free(value);
	ctl_unit_env_free(&env);
	return r;
}

static int preload_disable(int root_fd, const char *root, const char *unit, const char *dir,
			   const char *file)
{
	char *parent = strndup(dir, (size_t)(strrchr(dir, '/') - dir));
	int dir_fd, parent_fd, r;

	if (!parent)
		return -ENOMEM;
	r = ctl_root_openat(root_fd, dir, O_PATH | O_DIRECTORY, 0, &dir_fd);
	if (r == 0) {
		if (unlinkat(dir_fd, PRELOAD_FILE, 0) < 0 && errno != ENOENT)
			r = -errno;
		close(dir_fd);
	}
	if (r < 0 && r != -ENOENT && r != -ENOTDIR) {
		preload_error("cannot remove", root, file, r);
		free(parent);
		return CTL_EXIT_FAILURE;
	}
	/* The directory goes only when nothing else is in it, and only by its
	 * name in its parent: a link there is not a directory to remove. */
	if (ctl_root_openat(root_fd, parent, O_PATH | O_DIRECTORY, 0, &parent_fd) == 0) {
		(void)unlinkat(parent_fd, strrchr(dir, '/') + 1, AT_REMOVEDIR);
		close(parent_fd);
	}
	free(parent);
	printf("%s: not preloaded\n", unit);
	if (!root[0])
		printf("Run \"systemctl daemon-reload && systemctl restart %s\" to apply.\n", unit);
	return CTL_EXIT_OK;
}

/* The LD_PRELOAD value of our drop-in: 0 and *ret (malloc'ed), -ENOENT (no
 * drop-in), -ENODATA (a drop-in without the line), -errno. */
static int preload_read(int root_fd, const char *unit, const char *file, char **ret)
{
	struct ctl_unit_env env;
	int fd, r = ctl_root_openat(root_fd, file, O_PATH, 0, &fd);

	if (r < 0)
		return r;
	close(fd);
	/* Read as systemd reads it: the drop-in alone, then its LD_PRELOAD. */
	r = ctl_unit_env_read(root_fd, unit, file, &env);
	if (r < 0)
		return r;
	r = -ENODATA;
	if (env.preload && env.preload_from && strcmp(env.preload_from, file) == 0) {
		*ret = strdup(env.preload);
		r = *ret ? 0 : -ENOMEM;
	}
	ctl_unit_env_free(&env);
	return r;
}

static int preload_status(int root_fd, const char *root, const char *unit, const char *file)
{
	struct ctl_unit_env env;
	char *value = NULL;
	bool ours = false;
	int r, ret = CTL_EXIT_FAILURE;

	r = preload_read(root_fd, unit, file, &value);
	if (r == 0) {
		printf("%s: drop-in: LD_PRELOAD=", unit);
		ctl_put_str(stdout, value, 0);
		printf(" (%s%s)\n", root, file);
	} else if (r == -ENOENT || r == -ENODATA) {
		printf("%s: no drop-in%s\n", unit, r == -ENODATA ? " (the drop-in has no "
		       PRELOAD_KEY " line)" : "");
	} else {
		preload_error("cannot read", root, file, r);
		return CTL_EXIT_FAILURE;
	}
	r = ctl_unit_env_read(root_fd, unit, file, &env);
	if (r < 0) {
		free(value);
		return CTL_EXIT_FAILURE;
	}
	preload_put_env(root, &env);
	if (env.fragment)
		preload_put_user(unit, &env);
	if (env.preload) {
		size_t first = strcspn(env.preload + strspn(env.preload, " :"), " :");
		const char *lib = env.preload + strspn(env.preload, " :");

		ours = preload_is_shim(lib, first);
		if (ours && !env.blocker) {
			char *path = strndup(lib, first);

			if (!path) {
				ctl_unit_env_free(&env);
				free(value);
				return CTL_EXIT_FAILURE;
			}
			printf("%s: preloaded: LD_PRELOAD=", unit);
			ctl_put_str(stdout, env.preload, 0);
			printf(" (%s%s)\n", root, env.preload_from);
			if (!preload_exists(root_fd, path))
				printf("%s: but %s%s does not exist: the unit runs unprotected\n",
				       unit, root, path);
			else
				ret = CTL_EXIT_OK;
			free(path);
		}
	}
	if (ret != CTL_EXIT_OK && !(ours && !env.blocker)) {
		printf("%s: not preloaded", unit);
		if (env.blocker) {
			fputs(": ", stdout);
			ctl_put_str(stdout, env.blocker, 0);
		} else if (value && env.preload_from) {
			printf(": %s%s sets LD_PRELOAD after the drop-in", root, env.preload_from);
		}
		putchar('\n');
	}
	if (preload_global(root_fd)) {
		printf("%s/etc/ld.so.preload names the shim: every process loads it\n", root);
		ret = CTL_EXIT_OK;
	}
	ctl_unit_env_free(&env);
	free(value);
	return ret;
}

int ctl_cmd_preload(int argc, char **argv)
{
	const char *root = "", *lib = PMALLOC_SHIM_PATH, *action;
	char *unit = NULL, *dir = NULL, *file = NULL, *rootbuf = NULL;
	size_t rootlen;
	int c, r, root_fd = -1, ret = CTL_EXIT_FAILURE;

	while ((c = ctl_getopt(argc, argv, "preload", &r)) != -1) {
		if (c == CTL_OPT_ROOT)
			root = optarg;
		else if (c == CTL_OPT_LIBRARY)
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
	if (lib[0] != '/' || strpbrk(lib, " \t\n\\\"'%$:") != NULL)
		return ctl_usage_error("--library must be an absolute path without spaces, quotes, "
				       "':', '%', '$' or backslashes", lib);
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
	/* Paths beneath the root; printed after it. */
	if (asprintf(&dir, "/etc/systemd/system/%s.d", unit) < 0 ||
	    asprintf(&file, "%s/" PRELOAD_FILE, dir) < 0)
		goto oom;
	r = ctl_root_open(root, &root_fd);
	if (r < 0) {
		preload_error(r == -ELOOP || r == -EPERM ? "refusing root" : "no such root",
			      root[0] ? root : "/", "", r);
		goto out;
	}

	if (strcmp(action, "enable") == 0)
		ret = preload_enable(root_fd, root, unit, dir, file, lib);
	else if (strcmp(action, "disable") == 0)
		ret = preload_disable(root_fd, root, unit, dir, file);
	else
		ret = preload_status(root_fd, root, unit, file);
	if (ret == -ENOMEM)
		goto oom;
	goto out;
oom:
	fputs(CTL_NAME ": out of memory\n", stderr);
	ret = CTL_EXIT_FAILURE;
out:
	if (root_fd >= 0)
		close(root_fd);
	free(unit);
	free(dir);
	free(file);
	free(rootbuf);
	if (fflush(stdout) != 0)
		ret = CTL_EXIT_FAILURE;
	return ret;
}
