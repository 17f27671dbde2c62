/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy.c - the policy model in memory (policy.h): freeing a policy set,
 * matching a process (its executable, comm and uid) against it, and which
 * objects are glibc's (which a site by glob never fits).  The
 * file is read by policy_load.c, which parses it through policy_scan.c,
 * policy_setting.c and policy_parse.c.
 *
 * Owns the model's lifetime: every field may be NULL or partly filled (a
 * parse stops at its first error), and is freed all the same.  Never
 * prints, logs or keeps state; matching never allocates.
 */
#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/* ---- freeing: every field may be NULL or partly filled ---- */

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void pool_free(struct policy_pool *pool)
{
	free(pool->name);
	for (size_t i = 0; i < pool->n_sites; i++) {
		free(pool->sites[i].object);
		free(pool->sites[i].function);
		free(pool->sites[i].build_id);
	}
	free(pool->sites);
	strv_free(pool->wrappers, pool->n_wrappers);
	free(pool->triggers);
}

static void policy_free(struct policy *p)
{
	free(p->name);
	strv_free(p->match_exe, p->n_match_exe);
	strv_free(p->match_comm, p->n_match_comm);
	free(p->match_uid);
	for (size_t i = 0; i < p->n_pools; i++)
		pool_free(&p->pools[i]);
	free(p->pools);
}

void policy_set_free(struct policy_set *set)
{
	if (!set)
		return;
	free(set->daemon.socket);
	for (size_t i = 0; i < set->n_policies; i++)
		policy_free(&set->policies[i]);
	free(set->policies);
	free(set);
}

/* ---- matching ---- */

static bool glob_any(char *const *globs, size_t n, const char *s)
{
	if (!s)
		return false;
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], s, 0) == 0)
			return true;
	return false;
}

bool policy_object_is_glibc(const char *path)
{
	static const char *const names[] = {
		"libc.so", "ld-linux", "ld64.so", "libm.so", "libmvec.so", "libpthread.so", "libdl.so",
		"librt.so", "libresolv.so", "libanl.so", "libutil.so", "libnsl.so", "libnss_", "libBrokenLocale.so",
		"libthread_db.so", "libc_malloc_debug.so", "libmemusage.so",
	};
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(b, names[i], strlen(names[i])) == 0)
			return true;
	return strstr(path, "/gconv/") != NULL;
}

const struct policy *policy_set_match(const struct policy_set *set, const char *exe,
				      const char *comm, uid_t uid)
{
	if (!set)
		return NULL;
	for (size_t i = 0; i < set->n_policies; i++) {
		const struct policy *p = &set->policies[i];
		bool uid_ok = p->n_match_uid == 0;

		if (p->n_match_exe == 0 && p->n_match_comm == 0 && p->n_match_uid == 0)
			continue;
		if (p->n_match_exe > 0 && !glob_any(p->match_exe, p->n_match_exe, exe))
			continue;
		if (p->n_match_comm > 0 && !glob_any(p->match_comm, p->n_match_comm, comm))
			continue;
		for (size_t j = 0; j < p->n_match_uid && !uid_ok; j++)
			uid_ok = p->match_uid[j] == uid;
		if (uid_ok)
			return p;
	}
	return NULL;
}
