/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup.c - reading systemd's unit and slice out of a cgroup path, as
 * sd_pid_get_unit() and sd_pid_get_slice() do for system services.
 *
 * Pure string work on the caller's buffers: no allocation, no system call,
 * no lock, so the shim may use it at start-up and pmallocd inside its
 * seccomp sandbox (libsystemd's own functions probe the cgroup layout with
 * calls the sandbox refuses).  Async-signal-safe.
 */
#define _GNU_SOURCE
#include "cgroup.h"

#include <stdbool.h>
#include <string.h>

const char *cgroup_systemd_path(char *text, const char **ret_unified)
{
	const char *named = NULL, *unified = NULL;

	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');
		char *c1, *c2;

		if (nl)
			*nl = '\0';
		c1 = strchr(line, ':');
		c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 && c2 - c1 - 1 == 12 && memcmp(c1 + 1, "name=systemd", 12) == 0)
			named = c2 + 1;
		else if (c2 && c2 == c1 + 1 && c1 == line + 1 && line[0] == '0')
			unified = c2 + 1;
		if (!nl)
			break;
		line = nl + 1;
	}
	if (ret_unified)
		*ret_unified = unified;
	return named ? named : unified;
}

static bool is_slice(const char *s, size_t len)
{
	return len > 6 && memcmp(s + len - 6, ".slice", 6) == 0;
}

static void copy(char *dst, size_t size, const char *s, size_t len)
{
	if (len < size) {
		memcpy(dst, s, len);
		dst[len] = '\0';
	} else if (size) {
		dst[0] = '\0';
	}
}

/* Walk path's components: the last slice before the first other one, and
 * that one (the unit), each as pointer and length (NULL: none). */
static void walk(const char *path, const char **slice, size_t *slice_len, const char **unit,
		 size_t *unit_len)
{
	*slice = *unit = NULL;
	*slice_len = *unit_len = 0;
	for (const char *p = path; *p;) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (len == 0)
			return;
		if (!is_slice(p, len)) {
			/* A unit name has a dot and a type after it. */
			const char *dot = memrchr(p, '.', len);

			if (dot && dot != p && dot + 1 < p + len) {
				*unit = p;
				*unit_len = len;
			}
			return;
		}
		*slice = p;
		*slice_len = len;
		p += len;
	}
}

void cgroup_unit(const char *path, char *unit, size_t size)
{
	const char *s, *u;
	size_t sl, ul;

	walk(path, &s, &sl, &u, &ul);
	copy(unit, size, u ? u : "", ul);
}

void cgroup_slice(const char *path, char *slice, size_t size)
{
	const char *s, *u;
	size_t sl, ul;

	walk(path, &s, &sl, &u, &ul);
	if (s)
		copy(slice, size, s, sl);
	else
		copy(slice, size, "-.slice", 7);
}
