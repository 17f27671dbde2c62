/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_conf_merge.c - puts one generated policy (learn, propose) into a
 * policy file: a new file, or an existing one where it replaces that
 * executable's policy and keeps everything else byte for byte.
 *
 * Owns the file edit: where in the text the policies list's elements lie,
 * what is replaced, the backup (FILE.bak, the old bytes exactly) and the
 * atomic replacement (a temporary file renamed over FILE).  Must never drop
 * what it did not write without saying so: the result is parsed before it
 * is written, and every policy and the daemon group of the old file must be
 * found in it unchanged, else nothing is written.  The first policy that
 * matches the executable is replaced when its only match is exactly that
 * path (the executable's policy); otherwise the new one is put before it,
 * where it decides.  Every other policy that matches is kept and said.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_conf_merge.h"
#include "ctl_quote.h"
#include "policy.h"

#define CONF_MAX (16u << 20)         /* a policy file larger than this is not edited */
#define ELEMENTS_MAX 4096

/* The policies list in a file's text: the '(' and ')' offsets and each
 * element's '{' .. '}' (end is past the '}') and the comma after it (or 0). */
struct conf_list {
	size_t open, close;
	size_t n;
	struct { size_t start, end, comma; } e[ELEMENTS_MAX];
};

/* Past a comment or string at p, or p when there is none there. */
static const char *skip_token(const char *p)
{
	if (*p == '#' || (p[0] == '/' && p[1] == '/'))
		return p + strcspn(p, "\n");
	if (p[0] == '/' && p[1] == '*') {
		const char *e = strstr(p + 2, "*/");
		return e ? e + 2 : p + strlen(p);
	}
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++)
			if (*p == '\\' && p[1])
				p++;
		return *p ? p + 1 : p;
	}
	return p;
}

/* Finds the top-level "policies = ( ... )" of a text the parser accepted;
 * 0, -ENOENT when there is none, -E2BIG past ELEMENTS_MAX elements. */
static int find_list(const char *text, struct conf_list *l)
{
	const char *p = text;
	int depth = 0;

	l->n = 0;
	while (*p) {
		const char *q = skip_token(p);
		if (q != p) {
			p = q;
			continue;
		}
		if (*p == '{' || *p == '(' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ')' || *p == ']') {
			depth--;
		} else if (depth == 0 && strncmp(p, "policies", 8) == 0 && (p == text || !isalnum((unsigned char)p[-1])) &&
			   !isalnum((unsigned char)p[8]) && p[8] != '_' && p[8] != '-') {
			p += 8;
			while (*p && (isspace((unsigned char)*p) || *p == '=' || *p == ':'))
				p++;
			if (*p != '(')
				return -ENOENT;
			l->open = (size_t)(p - text);
			int d = 0;
			for (p++; *p;) {
				q = skip_token(p);
				if (q != p) {
					p = q;
					continue;
				}
				if (*p == '{' || *p == '(' || *p == '[') {
					if (d++ == 0 && *p == '{') {
						if (l->n == ELEMENTS_MAX)
							return -E2BIG;
						l->e[l->n].start = (size_t)(p - text);
						l->e[l->n].comma = 0;
					}
				} else if (*p == '}' || *p == ')' || *p == ']') {
					if (d == 0) {
						l->close = (size_t)(p - text);
						return 0;
					}
					if (--d == 0 && *p == '}')
						l->e[l->n++].end = (size_t)(p - text) + 1;
				} else if (*p == ',' && d == 0 && l->n) {
					l->e[l->n - 1].comma = (size_t)(p - text);
				}
				p++;
			}
			return -ENOENT;
		}
		p++;
	}
	return -ENOENT;
}

static bool only_this_exe(const struct policy *p, const char *exe)
{
	return p->n_match_exe == 1 && strcmp(p->match_exe[0], exe) == 0 && p->n_match_comm == 0 &&
	       p->n_match_uid == 0;
}

static bool matches_exe(const struct policy *p, const char *exe)
{
	for (size_t i = 0; i < p->n_match_exe; i++)
		if (fnmatch(p->match_exe[i], exe, 0) == 0)
			return true;
	return false;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int read_all(const char *path, char **ret, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_size > CONF_MAX) {
		int r = S_ISREG(st->st_mode) ? -EFBIG : -EINVAL;
		close(fd);
		return r;
	}
	char *buf = malloc((size_t)st->st_size + 1);
	size_t n = 0;
	ssize_t k = 0;
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (n < (size_t)st->st_size && (k = read(fd, buf + n, (size_t)st->st_size - n)) > 0)
		n += (size_t)k;
	close(fd);
	if (k < 0 || memchr(buf, '\0', n)) {
		free(buf);
		return k < 0 ? -EIO : -EINVAL;
	}
	buf[n] = '\0';
	*ret = buf;
	return 0;
}

/* text to path by a temporary file beside it renamed over it, mode kept. */
static int write_atomic(const char *path, const char *text, mode_t mode)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text), done = 0;
	int r = 0;
	while (done < n) {
		ssize_t k = write(fd, text + done, n - done);
		if (k < 0) {
			r = -errno;
			break;
		}
		done += (size_t)k;
	}
	if (r == 0 && fchmod(fd, mode & 07777) < 0)
		r = -errno;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Is new the old set with policy `at` replaced by ours (replace) or ours
 * inserted before it: every other policy in the same order with its name,
 * matches, mode and pools, and the daemon group the same? */
static bool kept_all(const struct policy_set *old, const struct policy_set *new, size_t at, bool replace,
		     const char *exe)
{
	if (!same_str(old->daemon.socket, new->daemon.socket) ||
	    old->daemon.handshake_timeout_ms != new->daemon.handshake_timeout_ms ||
	    old->daemon.report_burst != new->daemon.report_burst ||
	    old->daemon.report_interval_s != new->daemon.report_interval_s ||
	    new->n_policies != old->n_policies + !replace || at >= new->n_policies ||
	    !only_this_exe(&new->policies[at], exe))
		return false;
	for (size_t i = 0, j = 0; i < old->n_policies; i++, j++) {
		if (i == at) {
			if (replace)
				continue;
			j++;
		}
		const struct policy *p = &old->policies[i], *q = &new->policies[j];
		if (strcmp(p->name, q->name) != 0 || p->n_match_exe != q->n_match_exe ||
		    p->n_match_comm != q->n_match_comm || p->n_match_uid != q->n_match_uid ||
		    p->n_pools != q->n_pools || p->mode != q->mode)
			return false;
		for (size_t k = 0; k < p->n_match_exe; k++)
			if (strcmp(p->match_exe[k], q->match_exe[k]) != 0)
				return false;
	}
	return true;
}

/* Is name taken by a policy of set other than the one at skip? */
static bool name_taken(const struct policy_set *set, size_t skip, const char *name)
{
	for (size_t i = 0; i < set->n_policies; i++)
		if (i != skip && strcmp(set->policies[i].name, name) == 0)
			return true;
	return false;
}

/* policy with its name line ("\n    name = \"NAME\";", the first: values
 * in comments are quoted, so that text cannot stand there) renamed to the
 * first of NAME-2, NAME-3, ... that no other policy has; NULL without
 * memory, or the text as it is when its name is free. */
static char *unique_name(const struct policy_set *set, size_t skip, const char *policy)
{
	const char *line = strstr(policy, "\n    name = \""), *end;
	char name[64], *out = NULL;
	if (!line || !(end = strchr(line + 13, '"')) || (size_t)(end - line - 13) >= sizeof(name) - 8)
		return strdup(policy);
	memcpy(name, line + 13, (size_t)(end - line - 13));
	name[end - line - 13] = '\0';
	if (!name_taken(set, skip, name))
		return strdup(policy);
	name[55] = '\0';                    /* room for "-NNNNNNN" within 63 */
	for (unsigned int n = 2; n < 10000000; n++) {
		char cand[80];
		snprintf(cand, sizeof(cand), "%s-%u", name, n);
		if (name_taken(set, skip, cand))
			continue;
		if (asprintf(&out, "%.*s%s%s", (int)(line + 13 - policy), policy, cand, end) < 0)
			out = NULL;
		return out;
	}
	return NULL;
}

int ctl_conf_put_policy(const char *path, const char *exe, const char *policy_text, const char *cmd)
{
	char *policy = NULL;
	char real[PATH_MAX], err[POLICY_ERR_MAX], *old = NULL, *text = NULL;
	struct policy_set *old_set = NULL, *new_set = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	/* FILE may be a link (to /etc/pmalloc.conf from elsewhere): edit its target. */
	if (!realpath(path, real)) {
		if (errno != ENOENT || strlen(path) >= sizeof(real))
			goto io;
		strcpy(real, path);
	}
	r = read_all(real, &old, &st);
	if (r == -ENOENT) {
		FILE *f = open_memstream(&text, &len);
		if (!f)
			return -ENOMEM;
		fprintf(f, "# Written by pmallocctl %s; pmallocctl check FILE validates it.\n"
			   "version = 1;\npolicies = (\n  %s\n);\n", cmd, policy_text);
		if (fclose(f) != 0)
			return -ENOMEM;
		if (policy_set_load_string(text, real, &new_set, err, sizeof(err)) < 0) {
			fprintf(stderr, CTL_NAME ": %s: the policy does not load (a bug): %s\n", cmd, err);
			free(text);
			return -EINVAL;
		}
		policy_set_free(new_set);
		r = write_atomic(real, text, 0644);
		free(text);
		if (r < 0)
			fprintf(stderr, CTL_NAME ": %s: %s: %s\n", cmd, path, strerror(-r));
		return r;
	}
	if (r < 0) {
		errno = -r;
		goto io;
	}
	if (policy_set_load_string(old, real, &old_set, err, sizeof(err)) < 0) {
		fprintf(stderr, CTL_NAME ": %s: %s does not load, so it is left as it is: %s\n", cmd, path, err);
		free(old);
		return -EINVAL;
	}
	struct conf_list *l = calloc(1, sizeof(*l));
	size_t at = 0;
	bool replace = false;
	r = l ? find_list(old, l) : -ENOMEM;
	at = l ? l->n : 0;
	if (r == 0 && l->n != old_set->n_policies)
		r = -EBADMSG;                /* the text and the parser disagree: do not guess */
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, CTL_NAME ": %s: cannot find the policies of %s in its text (%s); nothing written\n",
			cmd, path, strerror(-r));
		goto out;
	}
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		r = -ENOMEM;
		goto out;
	}
	if (r == -ENOENT) {
		/* A file without a policies list: add one at the end. */
		fprintf(f, "%s%spolicies = (\n  %s\n);\n", old, old[0] && old[strlen(old) - 1] != '\n' ? "\n" : "",
			policy_text);
	} else {
		/* Where ours goes: in place of the first policy that is this
		 * executable's alone, else before the first that matches it too,
		 * else after the last. */
		for (size_t i = 0; i < l->n && at == l->n; i++)
			if (matches_exe(&old_set->policies[i], exe)) {
				at = i;
				replace = only_this_exe(&old_set->policies[i], exe);
			}
		for (size_t i = 0; i < l->n; i++) {
			if (!matches_exe(&old_set->policies[i], exe))
				continue;
			fprintf(stderr, CTL_NAME ": %s: %s: policy ", cmd, path);
			ctl_conf_quote(stderr, old_set->policies[i].name);
			fprintf(stderr, " (line %d) %s\n", old_set->policies[i].line,
				i == at && replace ? "replaced"
				: i < at ? "matches this executable too and comes first: the new one will not apply"
				: "matches this executable too; kept, after the new one");
		}
		policy = unique_name(old_set, replace ? at : SIZE_MAX, policy_text);
		if (!policy) {
			fclose(f);
			r = -ENOMEM;
			goto out;
		}
		size_t pos = 0;
		if (at < l->n) {
			fwrite(old, 1, l->e[at].start, f);
			fprintf(f, "%s%s", policy, replace ? "" : ",\n  ");
			pos = replace ? l->e[at].end : l->e[at].start;
		} else {
			size_t end = l->n ? (l->e[l->n - 1].comma ? l->e[l->n - 1].comma + 1 : l->e[l->n - 1].end)
					  : l->open + 1;
			fwrite(old, 1, end, f);
			fprintf(f, "%s\n  %s", l->n && !l->e[l->n - 1].comma ? "," : "", policy);
			pos = end;
		}
		fputs(old + pos, f);
	}
	if (fclose(f) != 0) {
		r = -ENOMEM;
		goto out;
	}
	if (policy_set_load_string(text, real, &new_set, err, sizeof(err)) < 0) {
		fprintf(stderr, CTL_NAME ": %s: the edited %s does not load (a bug), nothing written: %s\n", cmd, path,
			err);
		r = -EINVAL;
		goto out;
	}
	if (!kept_all(old_set, new_set, at, replace, exe)) {
		fprintf(stderr, CTL_NAME ": %s: the edit of %s would not keep its other policies as they are "
				"(a bug); nothing written\n", cmd, path);
		r = -EINVAL;
		goto out;
	}
	char bak[PATH_MAX];
	if (snprintf(bak, sizeof(bak), "%s.bak", real) >= (int)sizeof(bak)) {
		r = -ENAMETOOLONG;
		goto out;
	}
	r = write_atomic(bak, old, st.st_mode);
	if (r == 0)
		r = write_atomic(real, text, st.st_mode);
	if (r < 0)
		fprintf(stderr, CTL_NAME ": %s: %s: %s\n", cmd, r == 0 ? path : bak, strerror(-r));
	else
		fprintf(stderr, CTL_NAME ": %s: %s written; the old file is %s\n", cmd, path, bak);
out:
	free(policy);
	policy_set_free(old_set);
	policy_set_free(new_set);
	free(l);
	free(old);
	free(text);
	return r;
io:
	r = -errno;
	fprintf(stderr, CTL_NAME ": %s: %s: %s\n", cmd, path, strerror(errno));
	return r;
}
