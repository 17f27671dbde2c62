/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup_cache.c - cgroup paths by the kernel's id of the cgroup.
 *
 * Owns: a fixed table of CGROUP_CACHE slots (id, path), direct-mapped by
 * the id, and the lock over it.
 * Never: allocates, makes a system call, grows, or keeps a path the caller
 * did not read from the kernel for that id.
 *
 * Why: a hand-out read /proc/PID/cgroup for the journal's unit, slice and
 * cgroup fields - 8.9 us of pmallocd's ~60 us per hand-out, most of it the
 * kernel printing the ten hierarchies of a hybrid layout - while nearly
 * every client is in one of a few cgroups.  PIDFD_GET_INFO, which the
 * identification makes anyway (the ids and the proof the pid was the
 * peer's), also gives the id of the client's cgroup in the unified
 * hierarchy.  Keyed by it, the path is read once per cgroup.
 * Which path: the unified hierarchy's where it is systemd's, found as
 * systemd finds it (cg_unified_cached(): /sys/fs/cgroup is cgroup2, or a
 * tmpfs with cgroup2 at unified/ or systemd/), which is where
 * sd_pid_get_unit() reads a unit too; on legacy layouts name=systemd's,
 * read every time (there the unified id says nothing).
 * Why exact: a unified-hierarchy cgroup's id is 64 bits and never given
 * twice in a boot (kernfs: a cyclic 32-bit inode number with a generation
 * above it), and a cgroup2 directory cannot be renamed (only v1
 * hierarchies can): while an id names a live cgroup, its path is fixed,
 * and a removed cgroup's slot is never hit again.  A process moved to
 * another cgroup and back between the two GET_INFO calls around the read
 * could file one path under the other's id: only who may move it (root,
 * or the owner of a delegated subtree holding both) can, and it then
 * misnames only processes of its own cgroup.
 * Cost: a lock, a compare and a copy of the path (< 0.2 us) for a hit.
 */
#define _GNU_SOURCE
#include "cgroup_cache.h"

#include <linux/magic.h>
#include <pthread.h>
#include <string.h>
#include <sys/vfs.h>

struct slot {
	uint64_t id;                     /* 0: empty */
	char path[CGROUP_CACHE_PATH];
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[CGROUP_CACHE];
static bool by_id;                       /* set before threads: read without the lock */

static bool is_fs(const char *path, long magic)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && (long)fs.f_type == magic;
}

void cgroup_cache_init(void)
{
	by_id = is_fs("/sys/fs/cgroup/", CGROUP2_SUPER_MAGIC) ||
		(is_fs("/sys/fs/cgroup/", TMPFS_MAGIC) &&
		 (is_fs("/sys/fs/cgroup/unified/", CGROUP2_SUPER_MAGIC) ||
		  is_fs("/sys/fs/cgroup/systemd/", CGROUP2_SUPER_MAGIC)));
}

bool cgroup_cache_by_id(void)
{
	return by_id;
}

static struct slot *slot_of(uint64_t id)
{
	/* The low 32 bits count up as cgroups are made: consecutive ones
	 * take consecutive slots. */
	return &slots[(id ^ (id >> 32)) % CGROUP_CACHE];
}

bool cgroup_cache_get(uint64_t id, char *ret, size_t size)
{
	bool hit = false;
	struct slot *s;

	if (id == 0 || !by_id)
		return false;
	s = slot_of(id);
	pthread_mutex_lock(&cache_lock);
	if (s->id == id) {
		size_t len = strlen(s->path);

		if (len < size) {
			memcpy(ret, s->path, len + 1);
			hit = true;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	return hit;
}

void cgroup_cache_put(uint64_t id, const char *path)
{
	size_t len = strlen(path);
	struct slot *s;

	if (id == 0 || !by_id || len == 0 || len >= CGROUP_CACHE_PATH)
		return;
	s = slot_of(id);
	pthread_mutex_lock(&cache_lock);
	s->id = id;
	memcpy(s->path, path, len + 1);
	pthread_mutex_unlock(&cache_lock);
}

void cgroup_cache_clear(void)
{
	pthread_mutex_lock(&cache_lock);
	memset(slots, 0, sizeof(slots));
	pthread_mutex_unlock(&cache_lock);
}
