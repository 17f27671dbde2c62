/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * match_cache.c - the policy each (exe, comm, uid) matched, kept per
 * generation of the policy set.
 *
 * Owns: one table of MATCH_CACHE entries (allocated at the first hand-out;
 * without memory, every hand-out matches as before), used by the event
 * loop's thread alone.
 * Never: answers what policy_set_match() would not.  An entry is what it
 * answered for exactly these three values under exactly this generation
 * (a reload makes every entry stale); a look-up compares all of them in
 * full, the hash only picks the slot; an exe that does not fit is not
 * kept.  Nothing about who a process is comes from here: its exe, comm and
 * uid are read for every process as ever (identify.c); only the glob
 * matching of those values is saved.
 *
 * Why: matching runs every policy's exe and comm globs through fnmatch()
 * until one fits: ~1,700 instructions a hand-out with the bench's two
 * policies (callgrind under tests/bench/daemon), and as many more per
 * policy tried before the one that fits, on a machine with many (61
 * policies, the bench's clients matching the last: 46,100 instructions a
 * hand-out in all, 12,800 through the cache).  A hit costs a hash and a
 * compare of the strings (~430).  The processes a
 * machine starts are mostly a few programs started again and again.
 */
#define _GNU_SOURCE
#include "match_cache.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "proc.h"

struct match_entry {
	uint64_t generation;             /* 0: empty (generations start at 1) */
	uint64_t hash;
	uid_t uid;
	int index;                       /* config_policy_index(), or -1: none matched */
	char comm[PROC_COMM_MAX];
	char exe[MATCH_CACHE_EXE];
};

static struct match_entry *table;
static bool table_failed;

/* FNV-1a over exe, comm (each with its NUL, so that ("ab", "c") and
 * ("a", "bc") differ) and uid. */
static uint64_t match_hash(const char *exe, const char *comm, uid_t uid)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	do
		h = (h ^ (unsigned char)*exe) * 0x100000001b3ULL;
	while (*exe++);
	do
		h = (h ^ (unsigned char)*comm) * 0x100000001b3ULL;
	while (*comm++);
	return (h ^ (uint64_t)uid) * 0x100000001b3ULL;
}

int match_cache_policy(const struct config *c, const char *exe, const char *comm, uid_t uid,
		       const struct policy **ret)
{
	size_t exe_len = strlen(exe), comm_len = strlen(comm);
	struct match_entry *m = NULL;
	const struct policy *p;
	uint64_t h = 0;
	int idx;

	if (!table && !table_failed) {
		table = calloc(MATCH_CACHE, sizeof(*table));
		table_failed = !table;
	}
	if (table && c->generation != 0 && exe_len < MATCH_CACHE_EXE && comm_len < PROC_COMM_MAX) {
		h = match_hash(exe, comm, uid);
		m = &table[h % MATCH_CACHE];
		if (m->generation == c->generation && m->hash == h && m->uid == uid &&
		    memcmp(m->exe, exe, exe_len + 1) == 0 && memcmp(m->comm, comm, comm_len + 1) == 0) {
			*ret = m->index >= 0 ? &c->set->policies[m->index] : NULL;
			return m->index;
		}
	}
	p = policy_set_match(c->set, exe, comm, uid);
	idx = config_policy_index(c, p);
	if (m && (idx >= 0 || !p)) {
		m->generation = c->generation;
		m->hash = h;
		m->uid = uid;
		m->index = idx;
		memcpy(m->exe, exe, exe_len + 1);
		memcpy(m->comm, comm, comm_len + 1);
	}
	*ret = p;
	return idx;
}

void match_cache_done(void)
{
	free(table);
	table = NULL;
	table_failed = false;
}
