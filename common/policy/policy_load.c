/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_load.c - the policy file: read, checked, parsed into the model
 * (policy.h's policy_set_load_file and policy_set_load_string), and
 * whether a file may be trusted at all (policy_file_trusted).
 *
 * Owns the one parse on a policy's way to a process (pmallocd's, or the
 * shim's when no daemon answers), whose model policy_image.c then
 * compiles.  libconfig alone is not enough: it accepts unknown keys, wraps
 * integer literals silently (in 1.5, "4294967296" reads as 0, so a uid
 * would become root and a max_bytes cap would vanish), follows @include,
 * accepts an unterminated comment, stops at a NUL byte, and leaks memory
 * on a string that stands where its grammar has no place for one.  So the
 * text is read into memory here, pre-scanned for those traps
 * (policy_scan.c), parsed by libconfig, and every group is walked against
 * a fixed list of keys (policy_parse.c) before anything reaches the model.
 *
 * Must never print or log (the caller reports err), never keep state
 * between calls, and never be called from a signal handler or while the
 * shim interposes (it allocates with malloc and calls libconfig).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libconfig.h>

#include "policy.h"
#include "policy_parse.h"
#include "policy_scan.h"
#include "policy_setting.h"

#define FILE_MAX (1024 * 1024)

/* The first error in the file is the one reported.  libconfig reads a copy
 * in which the finding is blanked out and its last byte replaced by '!',
 * which libconfig refuses wherever it stands (and without leaking): if it
 * stops earlier than that, its error comes first. */
static int refuse_finding(const struct parse_ctx *c, const char *text, const struct finding *f)
{
	char *copy = strdup(text);
	config_t cfg;
	int r;

	if (!copy)
		return oom(c);
	if (f->end == 0) {
		copy[f->off] = '!';
		copy[f->off + 1] = '\0';
	} else {
		for (size_t i = f->off; i < f->end; i++)
			if (copy[i] != '\n')
				copy[i] = ' ';
		copy[f->end - 1] = '!';
	}
	config_init(&cfg);
	if (config_read_string(&cfg, copy) != CONFIG_TRUE) {
		unsigned int line = (unsigned int)config_error_line(&cfg);
		const char *why = config_error_text(&cfg) ? config_error_text(&cfg) : "syntax error";

		/* On the '!' line, only a different complaint proves an earlier error. */
		if (line < f->last_line || (line == f->last_line && strcmp(why, "syntax error") != 0))
			r = fail(c, line, "%s", why);
		else
			r = fail(c, f->line, "%s", f->msg);
	} else {
		r = fail(c, f->line, "%s", f->msg);
	}
	config_destroy(&cfg);
	free(copy);
	return r;
}

/* libconfig's "syntax error" alone tells a newcomer nothing: what was
 * expected, guessed from the line it names.  A bare word after = or :
 * (not a number, not true or false) is the usual one: an unquoted string. */
static const char *syntax_hint(const char *text, int line)
{
	const char *p = text;

	for (int l = 1; l < line && *p; p++)
		l += *p == '\n';
	for (; *p && *p != '\n' && *p != '#'; p++) {
		const char *w;
		size_t n;

		if (*p == '"') {
			for (p++; *p && *p != '"' && *p != '\n'; p++)
				p += *p == '\\' && p[1];
			if (*p != '"')
				break;
			continue;
		}
		if (*p != '=' && *p != ':')
			continue;
		for (w = p + 1; *w == ' ' || *w == '\t'; w++)
			;
		for (n = 0; isalpha((unsigned char)w[n]) || w[n] == '_' || w[n] == '/' || w[n] == '.' ||
			    w[n] == '-' || w[n] == '*' || (n && isdigit((unsigned char)w[n])); n++)
			;
		if (n && !(n == 4 && strncasecmp(w, "true", 4) == 0) && !(n == 5 && strncasecmp(w, "false", 5) == 0))
			return "syntax error: a string value must be in double quotes (name = \"demo\";)";
	}
	return "syntax error: expected NAME = VALUE; (strings in double quotes, lists in ( ), "
	       "arrays in [ ], groups in { }; a ';' or ',' missing or a bracket left open before here?)";
}

static int load_text(const struct parse_ctx *c, const char *text, struct policy_set **ret)
{
	struct finding f;
	struct policy_set *set;
	config_t cfg;
	int r;

	if (policy_prescan(text, &f) > 0)
		return refuse_finding(c, text, &f);

	config_init(&cfg);
	if (config_read_string(&cfg, text) != CONFIG_TRUE) {
		/* No @include got through, so the file is always ours to name.
		 * libconfig reports exhaustion as a parse error too: rare enough to
		 * leave as -EINVAL. */
		int line = config_error_line(&cfg);
		const char *why = config_error_text(&cfg);

		if (!why || strcmp(why, "syntax error") == 0)
			why = syntax_hint(text, line);
		r = fail(c, line > 0 ? (unsigned int)line : 0, "%s", why);
		config_destroy(&cfg);
		return r;
	}

	set = calloc(1, sizeof(*set));
	if (!set) {
		config_destroy(&cfg);
		return oom(c);
	}
	r = policy_parse_root(c, config_root_setting(&cfg), set);
	config_destroy(&cfg);
	if (r < 0) {
		policy_set_free(set);
		return r;
	}
	*ret = set;
	return 0;
}

int policy_set_load_string(const char *text, const char *name, struct policy_set **ret,
			   char *err, size_t errlen)
{
	const struct parse_ctx c = { name ? name : "<string>", err, errlen };

	if (!text || !ret)
		return fail(&c, 0, "no text");
	if (strnlen(text, FILE_MAX + 1) > FILE_MAX)
		return setting_fail_with(&c, -EFBIG, 0, "larger than %d bytes", FILE_MAX);
	return load_text(&c, text, ret);
}

int policy_file_trusted(const char *path, const struct stat *st, unsigned int euid, char *err,
			size_t errlen)
{
	if (euid != 0)
		return 0;
	if (st->st_uid != 0) {
		snprintf(err, errlen, "%s: refused: owned by uid %u, not by root", path,
			 (unsigned int)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s: refused: writable by group or others (mode %04o)", path,
			 (unsigned int)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Read here rather than by config_read_file(): the size is bounded, a FIFO
 * or device cannot block or feed us forever, and a NUL byte (after which
 * libconfig would silently stop reading) is refused. */
int policy_set_load_file(const char *path, struct policy_set **ret, char *err, size_t errlen)
{
	const struct parse_ctx c = { path ? path : "<null>", err, errlen };
	struct stat st;
	char *buf;
	size_t len = 0, cap;
	int fd, r;

	if (!path || !ret)
		return fail(&c, 0, "no file");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		return setting_fail_with(&c, r, 0, "cannot open: %s", strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return setting_fail_with(&c, r, 0, "cannot stat: %s", strerror(-r));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail(&c, 0, "not a regular file");
	}
	r = policy_file_trusted(c.name, &st, (unsigned int)geteuid(), err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (st.st_size > FILE_MAX) {
		close(fd);
		return setting_fail_with(&c, -EFBIG, 0, "larger than %d bytes", FILE_MAX);
	}
	/* Room for one byte more than fstat() saw, to notice a file that grew
	 * while it was read (rewritten in place): refused, the caller may retry. */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return oom(&c);
	}
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			close(fd);
			free(buf);
			return setting_fail_with(&c, r, 0, "cannot read: %s", strerror(-r));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		/* Short: the end of a regular file (one read, not two). */
		if (len < cap)
			break;
	}
	if (len == cap) {
		close(fd);
		free(buf);
		return setting_fail_with(&c, -EAGAIN, 0, "changed while being read");
	}
	close(fd);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		unsigned int line = 1;
		for (const char *p = buf; *p; p++)
			line += *p == '\n';
		free(buf);
		return fail(&c, line, "NUL byte in the file");
	}
	r = load_text(&c, buf, ret);
	free(buf);
	if (r == 0)
		(*ret)->written_us = (uint64_t)st.st_mtim.tv_sec * 1000000u + (uint64_t)st.st_mtim.tv_nsec / 1000u;
	return r;
}
