/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_unit_env.c - the environment a systemd unit's files give its
 * processes, read from the files beneath a root as systemd would merge them.
 *
 * Owns the reading of unit files for "pmallocctl preload": which file is the
 * unit (the first of the search path that has UNIT or its template), its
 * drop-ins (UNIT.d/, TEMPLATE@.TYPE.d/ and TYPE.d/ in every directory of the
 * search path, one list sorted by file name, a name in an earlier directory
 * masking the same name in a later one), and in their sections that run
 * processes the settings Environment= (words unquoted and C-unescaped, "%%"
 * to "%", an empty value clearing the list), EnvironmentFile= and
 * UnsetEnvironment=, and User=.  What it cannot know from files it does not pretend to:
 * specifiers other than "%%" are kept as written, and the caller says that
 * the result is what the files say, which systemd applies after
 * "systemctl daemon-reload".  Every file is opened beneath the root
 * (ctl_root.c).  Never writes, never prints.
 */
#define _GNU_SOURCE                  /* asprintf */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_root.h"
#include "ctl_unit_env.h"

/* systemd's system unit search path, highest priority first. */
static const char *const unit_dirs[] = {
	"/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
	"/run/systemd/generator.early", "/etc/systemd/system", "/etc/systemd/system.attached",
	"/run/systemd/system", "/run/systemd/system.attached", "/run/systemd/generator",
	"/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system",
	"/run/systemd/generator.late",
};
#define N_UNIT_DIRS (sizeof(unit_dirs) / sizeof(unit_dirs[0]))
#define UNIT_LINE_MAX (64 * 1024)    /* longer settings are not environment */

struct dropin {
	char *name;                  /* sort key: the file name */
	char *path;
};

static int set_str(char **slot, const char *s)
{
	char *c = s ? strdup(s) : NULL;

	if (s && !c)
		return -ENOMEM;
	free(*slot);
	*slot = c;
	return 0;
}

/* One word of a setting as systemd's extract_first_word(UNQUOTE|CUNESCAPE|
 * RELAX) takes it: 1 and *ret (malloc'ed), 0 at the end, -ENOMEM. */
static int next_word(const char **p, char **ret)
{
	const char *s = *p;
	char *out, quote = 0;
	size_t n = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return 0;
	out = malloc(strlen(s) + 1);
	if (!out)
		return -ENOMEM;
	for (; *s && (quote || (*s != ' ' && *s != '\t')); s++) {
		if (quote && *s == quote) {
			quote = 0;
		} else if (!quote && (*s == '"' || *s == '\'')) {
			quote = *s;
		} else if (*s == '\\' && s[1]) {
			static const char from[] = "abfnrtv", to[] = "\a\b\f\n\r\t\v";
			const char *e = strchr(from, *++s);

			out[n++] = e ? to[e - from] : *s;
		} else if (*s == '%' && s[1] == '%') {
			out[n++] = *s++;
		} else {
			out[n++] = *s;
		}
	}
	out[n] = '\0';
	*p = s;
	*ret = out;
	return 1;
}

static bool is_preload(const char *assignment)
{
	return strncmp(assignment, "LD_PRELOAD", 10) == 0 &&
	       (assignment[10] == '=' || assignment[10] == '\0');
}

static int env_put(struct ctl_unit_env *env, char *assignment, const char *file)
{
	size_t name_len = strcspn(assignment, "=");
	char **vars;

	if (!assignment[name_len] || name_len == 0) {
		free(assignment);    /* not NAME=VALUE: systemd ignores it too */
		return 0;
	}
	if (is_preload(assignment) && (set_str(&env->preload, assignment + 11) < 0 ||
				       set_str(&env->preload_from, file) < 0)) {
		free(assignment);
		return -ENOMEM;
	}
	for (size_t i = 0; i < env->n_vars; i++)
		if (strncmp(env->vars[i], assignment, name_len + 1) == 0) {
			free(env->vars[i]);
			env->vars[i] = assignment;
			return 0;
		}
	vars = realloc(env->vars, (env->n_vars + 1) * sizeof(*vars));
	if (!vars) {
		free(assignment);
		return -ENOMEM;
	}
	env->vars = vars;
	env->vars[env->n_vars++] = assignment;
	return 0;
}

static int env_clear(struct ctl_unit_env *env)
{
	for (size_t i = 0; i < env->n_vars; i++)
		free(env->vars[i]);
	env->n_vars = 0;
	set_str(&env->preload_from, NULL);
	return set_str(&env->preload, NULL);
}

/* EnvironmentFile=: whether the file (beneath the root) assigns LD_PRELOAD;
 * such an assignment wins over every Environment= line. */
static bool envfile_sets_preload(int root_fd, const char *value)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	if (*value == '-')
		value++;
	if (ctl_root_fopen(root_fd, value, &f) < 0)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		const char *s = line + strspn(line, " \t");

		if (strncmp(s, "export ", 7) == 0)
			s += 7 + strspn(s + 7, " \t");
		found = strncmp(s, "LD_PRELOAD", 10) == 0 && strchr("= \t", s[10]);
	}
	free(line);
	fclose(f);
	return found;
}

static int note_blocker(struct ctl_unit_env *env, const char *file, const char *what)
{
	if (env->blocker)
		return 0;
	return asprintf(&env->blocker, "%s: %s", file, what) < 0 ? -ENOMEM : 0;
}

static int setting(struct ctl_unit_env *env, int root_fd, const char *file, const char *key,
		   const char *value)
{
	char *word;
	int r;

	if (strcmp(key, "Environment") == 0) {
		if (!*value)
			return env_clear(env);
		while ((r = next_word(&value, &word)) > 0) {
			bool preload = is_preload(word);

			r = env_put(env, word, file);
			if (r < 0)
				return r;
			if (preload && env->seen_ours && !env->in_ours && !env->after &&
			    set_str(&env->after, file) < 0)
				return -ENOMEM;
		}
		return r;
	}
	if (strcmp(key, "UnsetEnvironment") == 0) {
		while ((r = next_word(&value, &word)) > 0) {
			bool preload = is_preload(word);

			free(word);
			if (preload)
				return note_blocker(env, file, "UnsetEnvironment= removes LD_PRELOAD");
		}
		return r;
	}
	if (strcmp(key, "User") == 0)
		return set_str(&env->user, *value ? value : NULL);
	if (strcmp(key, "EnvironmentFile") == 0 && envfile_sets_preload(root_fd, value)) {
		char *what = NULL;

		if (asprintf(&what, "EnvironmentFile=%s sets LD_PRELOAD, over any Environment=",
			     value) < 0)
			return -ENOMEM;
		r = note_blocker(env, file, what);
		free(what);
		return r;
	}
	return 0;
}

/* Read one unit file or drop-in (beneath the root); a file that cannot be
 * opened adds nothing, as for systemd. */
static int read_unit_file(struct ctl_unit_env *env, int root_fd, const char *path)
{
	char *line = NULL, *joined = NULL;
	size_t cap = 0, len = 0;
	bool exec_section = false;
	ssize_t n;
	FILE *f;
	int r = 0;

	if (ctl_root_fopen(root_fd, path, &f) < 0)
		return 0;
	while (r == 0 && (n = getline(&line, &cap, f)) > 0) {
		char *s, *eq, *grown;

		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (len + (size_t)n + 2 > UNIT_LINE_MAX) {
			len = 0;     /* far too long for a setting we read */
			continue;
		}
		grown = realloc(joined, len + (size_t)n + 2);
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		joined = grown;
		memcpy(joined + len, line, (size_t)n + 1);
		len += (size_t)n;
		if (len > 0 && joined[len - 1] == '\\') {
			joined[len - 1] = ' ';       /* a continuation line follows */
			continue;
		}
		len = 0;
		s = joined + strspn(joined, " \t");
		if (*s == '#' || *s == ';' || !*s)
			continue;
		if (*s == '[') {
			exec_section = strncmp(s, "[Service]", 9) == 0 || strncmp(s, "[Socket]", 8) == 0 ||
				       strncmp(s, "[Mount]", 7) == 0 || strncmp(s, "[Swap]", 6) == 0;
			continue;
		}
		eq = strchr(s, '=');
		if (!exec_section || !eq)
			continue;
		for (char *e = eq; e > s && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		*eq = '\0';
		r = setting(env, root_fd, path, s, eq + 1 + strspn(eq + 1, " \t"));
	}
	free(line);
	free(joined);
	fclose(f);
	return r;
}

static int dropin_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dropin *)a)->name, ((const struct dropin *)b)->name);
}

/* Add the *.conf files of dir (beneath the root) whose names no earlier
 * directory had. */
static int collect_dropins(int root_fd, const char *dir, struct dropin **list, size_t *n)
{
	DIR *d;
	struct dirent *e;
	int fd, r = ctl_root_openat(root_fd, dir, O_RDONLY | O_DIRECTORY, 0, &fd);

	if (r < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (r == 0 && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		bool known = false;
		struct dropin *grown;

		if (len < 6 || strcmp(e->d_name + len - 5, ".conf") != 0 || e->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < *n && !known; i++)
			known = strcmp((*list)[i].name, e->d_name) == 0;
		if (known)
			continue;
		grown = realloc(*list, (*n + 1) * sizeof(**list));
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		*list = grown;
		grown[*n].name = strdup(e->d_name);
		grown[*n].path = NULL;
		if (!grown[*n].name || asprintf(&grown[*n].path, "%s/%s", dir, e->d_name) < 0) {
			free(grown[*n].name);
			r = -ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	return r;
}

int ctl_unit_env_read(int root_fd, const char *unit, const char *ours, struct ctl_unit_env *ret)
{
	struct ctl_unit_env env = { 0 };
	struct dropin *dropins = NULL;
	size_t n_dropins = 0;
	char *template = NULL, *names[3] = { NULL, NULL, NULL };
	const char *at = strchr(unit, '@'), *dot = strrchr(unit, '.');
	int r = 0;

	/* foo@bar.service falls back to foo@.service; TYPE.d/ applies to all. */
	if (at && dot && at + 1 < dot && asprintf(&template, "%.*s%s", (int)(at - unit + 1), unit,
						  dot) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < N_UNIT_DIRS && r == 0 && !env.fragment; i++) {
		const char *try[2] = { unit, template };

		for (size_t k = 0; k < 2 && try[k] && !env.fragment; k++) {
			char *path = NULL;
			int fd;

			if (asprintf(&path, "%s/%s", unit_dirs[i], try[k]) < 0) {
				r = -ENOMEM;
				break;
			}
			if (ctl_root_openat(root_fd, path, O_PATH, 0, &fd) == 0) {
				close(fd);
				env.fragment = path;
			} else {
				free(path);
			}
		}
	}
	if (r == 0 && env.fragment)
		r = read_unit_file(&env, root_fd, env.fragment);

	if (r == 0 && (asprintf(&names[0], "%s.d", unit) < 0 ||
		       (template && asprintf(&names[1], "%s.d", template) < 0) ||
		       asprintf(&names[2], "%s.d", dot ? dot + 1 : "service") < 0))
		r = -ENOMEM;
	for (size_t i = 0; i < N_UNIT_DIRS && r == 0; i++)
		for (size_t k = 0; k < 3 && r == 0; k++) {
			char *dir = NULL;

			if (!names[k])
				continue;
			if (asprintf(&dir, "%s/%s", unit_dirs[i], names[k]) < 0)
				r = -ENOMEM;
			else
				r = collect_dropins(root_fd, dir, &dropins, &n_dropins);
			free(dir);
		}
	if (dropins)
		qsort(dropins, n_dropins, sizeof(*dropins), dropin_cmp);
	/* The value before ours is taken where ours sorts, there or not. */
	for (size_t i = 0; i <= n_dropins && r == 0; i++) {
		bool at_ours = ours && !env.seen_ours &&
			       (i == n_dropins || strcmp(dropins[i].name, strrchr(ours, '/') + 1) >= 0);

		if (at_ours) {
			env.seen_ours = true;
			if (set_str(&env.preload_before, env.preload) < 0 ||
			    set_str(&env.preload_before_from, env.preload_from) < 0)
				r = -ENOMEM;
		}
		if (i < n_dropins && r == 0) {
			bool is_ours = ours && strcmp(dropins[i].path, ours) == 0;

			/* Ours, once written, masks its name in later directories. */
			if (ours && !is_ours && strcmp(dropins[i].name, strrchr(ours, '/') + 1) == 0)
				continue;
			env.in_ours = is_ours;
			r = read_unit_file(&env, root_fd, dropins[i].path);
			env.in_ours = false;
		}
	}
	for (size_t i = 0; i < n_dropins; i++) {
		free(dropins[i].name);
		free(dropins[i].path);
	}
	free(dropins);
	free(template);
	for (size_t k = 0; k < 3; k++)
		free(names[k]);
	if (r < 0) {
		ctl_unit_env_free(&env);
		return r;
	}
	*ret = env;
	return 0;
}

void ctl_unit_env_free(struct ctl_unit_env *env)
{
	env_clear(env);
	free(env->vars);
	free(env->fragment);
	free(env->preload_before);
	free(env->preload_before_from);
	free(env->after);
	free(env->blocker);
	free(env->user);
	*env = (struct ctl_unit_env){ 0 };
}
