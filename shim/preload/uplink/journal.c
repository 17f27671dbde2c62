/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * journal.c - journal entries written by the shim itself when pmallocd is
 * not there or cannot take them (the MESSAGE_IDs and fields of pmallocd(8)),
 * in the journal's native protocol: "FIELD=value\n" lines in one datagram.
 * Values are ours or escaped (escape.h, shared with pmallocd), so none
 * needs the binary form.  Async-signal-safe: a static buffer under a flag,
 * socket + sendto, nothing allocated.  A violation entry is the record's
 * (report.c fills it: the fault symbol is the exported function's, the
 * backtrace module+offset, which a person can symbolise) formatted by
 * violation_fmt.c, the formatter pmallocd uses: this file adds only the
 * envelope (MESSAGE_ID, PRIORITY, what journald cannot read from a dead
 * process) and the rate limit.
 *
 * Nothing is dropped without trace: a violation entry held back by the
 * rate limit, one that journald did not take, or one that another report
 * under way kept out, is counted, and the count goes out in one "reports
 * dropped" entry when the next window opens or the process exits.
 * Never waits for journald beyond a bounded send timeout (a violation
 * entry not at all: a full socket queue loses it, counted), never
 * allocates, and never writes a field it did not escape.
 */
#define _GNU_SOURCE
#include "journal.h"
#include "life.h"
#include "cgroup.h"
#include "escape.h"
#include "fmt.h"
#include "msgid.h"
#include "armed.h"
#include "os.h"
#include "violation_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
/* A notice said once (a rule matching nothing, the handler replaced, a
 * role unprotected) waits up to
 * this long for room in journald's queue: the administrator has no other
 * word of it.  Without a booted systemd the queue holds ten datagrams, and
 * a journald busy with other senders lost such notices (rules_waiting.sh,
 * on a loaded machine).  Rare by design, so the wait is bounded per
 * process by their number; never when the queue has room. */
#define NOTICE_WAIT_MS 50u

/* The rate limit pmallocd would apply (daemon.report_burst per
 * report_interval_s), kept by the shim when it writes the journal itself:
 * an audit-mode program writing in a loop must not flood the journal.  Per
 * process rather than per site; lock-free, as it runs in the handler. */
static _Atomic uint64_t window_start_ns;
static _Atomic unsigned int window_count, window_dropped;

static char entry[8192];
static atomic_flag entry_busy = ATOMIC_FLAG_INIT;
/* The violations' own buffer: they come under report.c's lock only, one
 * at a time, so they never wait for entry_busy (another entry being
 * written, or the flag overwritten: issue 27, row 7) and are never
 * dropped for it.  A kill is always reported. */
static char violation_entry[8192];

/* This process as it was at start-up (journal_init); "" where unknown. */
static const char *self_exe = "";   /* client.c's read-only page */
static char self_comm[17];
static char self_cgroup[512];
static char self_unit[256];

/* The journal's socket, connected before a chroot (journal_keep_socket):
 * inside, its path is gone (haproxy's /var/lib/haproxy), the connected
 * socket still reaches journald.  Believed only while the descriptor is
 * still the socket opened (device and inode): a program that closes every
 * descriptor may have reused its number; then the path is tried alone. */
static _Atomic int kept_fd = -1;
static dev_t kept_dev;
static ino_t kept_ino;

void journal_keep_socket(void)
{
	if (atomic_load(&kept_fd) >= 0) {
		struct stat st;
		int fd = atomic_load(&kept_fd);
		if (fstat(fd, &st) == 0 && st.st_dev == kept_dev && st.st_ino == kept_ino)
			return;
		atomic_store(&kept_fd, -1);
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct stat st;
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || fstat(fd, &st) < 0) {
		close(fd);
		return;
	}
	kept_dev = st.st_dev;
	kept_ino = st.st_ino;
	atomic_store(&kept_fd, fd);
}

/* The kept socket, when it is still ours; -1 else. */
static int kept_socket(void)
{
	int fd = atomic_load(&kept_fd);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != kept_dev || st.st_ino != kept_ino)
		return -1;
	return fd;
}

/* The entry on the kept socket, waiting up to wait_ms for room in
 * journald's queue as send_entry_wait does on its own: a poll, since the
 * socket is shared by every thread (a send timeout set on it would be
 * theirs too), and a connected datagram socket polls writable once its
 * peer's queue has room.  Without the wait, a chrooted process (haproxy's
 * worker) lost every entry of a flush past the queue's first ten
 * (net.unix.max_dgram_qlen without a booted systemd): 1,734 of 3,543 at
 * its trigger. */
static ssize_t send_kept(int fd, const struct fmt *f, unsigned int wait_ms)
{
	uint64_t end = os_monotonic_ns(false) + (uint64_t)wait_ms * 1000000u;
	for (;;) {
		ssize_t n = send(fd, f->start, fmt_len(f), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return n;
		uint64_t now = os_monotonic_ns(false);
		short revents;
		if (now >= end || os_wait_fd(fd, POLLOUT, (int)((end - now + 999999u) / 1000000u), &revents) < 0 ||
		    !(revents & POLLOUT))
			return n;
	}
}

/* true when journald took the entry.  Never blocks, unless wait_ms: then
 * up to that long for room in journald's queue (at exit only: a busy
 * journald must not cost the summary, a stalled one not the exit). */
static bool send_entry_wait(struct fmt *f, unsigned int wait_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	int flags = MSG_NOSIGNAL | MSG_DONTWAIT;
	if (wait_ms) {
		struct timeval tv = { (time_t)(wait_ms / 1000u), (suseconds_t)(wait_ms % 1000u) * 1000 };
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0)
			flags &= ~MSG_DONTWAIT;
	}
	ssize_t n = sendto(fd, f->start, fmt_len(f), flags, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	close(fd);
	int kept;
	if (n < 0 && (e == ENOENT || e == ECONNREFUSED || e == EACCES) && (kept = kept_socket()) >= 0)
		n = send_kept(kept, f, wait_ms);
	return n == (ssize_t)fmt_len(f);
}


/* The whole of a small /proc/self file into buf (NUL-terminated); length. */
static size_t read_self(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	if (fd >= 0) {
		ssize_t r;
		while (n + 1 < size && (r = os_read(fd, buf + n, size - 1 - n)) > 0)
			n += (size_t)r;
		close(fd);
	}
	buf[n] = '\0';
	return n;
}

void journal_init(const char *exe, const char *comm)
{
	char buf[2048];
	self_exe = exe;
	size_t n = strnlen(comm, sizeof(self_comm) - 1);
	memcpy(self_comm, comm, n);
	self_comm[n] = '\0';
	read_self("/proc/self/cgroup", buf, sizeof(buf));
	const char *path = cgroup_systemd_path(buf, NULL);
	if (path && strlen(path) < sizeof(self_cgroup)) {
		memcpy(self_cgroup, path, strlen(path) + 1);
		cgroup_unit(self_cgroup, self_unit, sizeof(self_unit));
	}
}

/* The fields every entry of the shim's has, one "KEY=value\n" each; the
 * values of the process's are escaped (fmt_printf's %s). */
static void common_fields(struct fmt *f, const char *mid, int priority)
{
	fmt_printf(f, "MESSAGE_ID=%s\nPRIORITY=%d\nSYSLOG_IDENTIFIER=pmalloc\nOBJECT_PID=%d\n", mid, priority,
		   (int)getpid());
	if (self_comm[0])
		fmt_printf(f, "PMALLOC_COMM=%s\n", self_comm);
	if (strcmp(mid, MID_VIOLATION) != 0)        /* a violation's record carries it */
		fmt_printf(f, "PMALLOC_ROLE=%s\n", life_role());   /* life.h: its place since exec */
	if (self_unit[0])
		fmt_printf(f, "OBJECT_SYSTEMD_UNIT=%s\n", self_unit);
	if (self_cgroup[0])
		fmt_printf(f, "OBJECT_SYSTEMD_CGROUP=%s\n", self_cgroup);
}

static void limits(unsigned int *burst, unsigned int *interval_s)
{
	const struct shim_state *st = shim;
	*burst = 20;
	*interval_s = 10;
	if (st) {
		*burst = st->image->report_burst;
		*interval_s = st->image->report_interval_s;
	}
}

/* The summary of what was dropped so far, if anything (entry_busy held);
 * wait_ms as for send_entry_wait. */
static void write_summary_in(char *buf, size_t size, unsigned int wait_ms)
{
	unsigned int dropped = atomic_exchange(&window_dropped, 0), burst, interval_s;
	if (!dropped)
		return;
	limits(&burst, &interval_s);
	struct fmt f;
	fmt_init(&f, buf, size);
	common_fields(&f, MID_DROPPED, 4);
	fmt_printf(&f, "PMALLOC_DROPPED=%u\nPMALLOC_DROPPED_KIND=violation\n"
		   "MESSAGE=pmalloc: PID %d: %u violation reports were not logged (rate limit: %u per %u s,"
		   " or pmallocd and journald could not take them)\n", dropped, (int)getpid(), dropped, burst,
		   interval_s);
	if (!send_entry_wait(&f, wait_ms))
		atomic_fetch_add(&window_dropped, dropped);   /* kept for the next try */
}

static void write_summary(unsigned int wait_ms)
{
	write_summary_in(entry, sizeof(entry), wait_ms);
}

/* May one more violation entry be written now?  Also writes the summary of
 * what the previous window dropped (into the violations' buffer: report.c's
 * lock held). */
static bool rate_allows(void)
{
	unsigned int burst, interval_s;
	limits(&burst, &interval_s);
	uint64_t now = os_monotonic_ns(false), start = atomic_load(&window_start_ns);
	if (start == 0 || now - start >= (uint64_t)interval_s * 1000000000u) {
		atomic_store(&window_start_ns, now);
		atomic_store(&window_count, 0);
		write_summary_in(violation_entry, sizeof(violation_entry), 0);
	}
	if (atomic_fetch_add(&window_count, 1) < burst)
		return true;
	atomic_fetch_add(&window_dropped, 1);
	return false;
}

void journal_note_dropped(void)
{
	atomic_fetch_add(&window_dropped, 1);
}

/* A forked child starts its own count: the parent's drops are the
 * parent's to summarise, and a report under way in another thread of the
 * parent holds no flag of the child's. */
static void journal_after_fork_child(void)
{
	atomic_store(&window_start_ns, 0);
	atomic_store(&window_count, 0);
	atomic_store(&window_dropped, 0);
	atomic_flag_clear(&entry_busy);
}

__attribute__((constructor)) static void journal_register_fork(void)
{
	pthread_atfork(NULL, NULL, journal_after_fork_child);
}

/* At exit, what the last window dropped. */
__attribute__((destructor)) static void journal_at_exit(void)
{
	if (!atomic_load(&window_dropped) || atomic_flag_test_and_set(&entry_busy))
		return;
	int e = errno;
	write_summary(250);
	errno = e;
	atomic_flag_clear(&entry_busy);
}

static int entry_errno;   /* the writer's errno, under entry_busy */

/* Take the one entry buffer into f and start an entry (MESSAGE_ID and the
 * fields every entry has); false when another entry is being written, or
 * it is not written then. */
static bool entry_begin(struct fmt *f, const char *mid, int priority)
{
	if (atomic_flag_test_and_set(&entry_busy))
		return false;
	entry_errno = errno;
	fmt_init(f, entry, sizeof(entry));
	common_fields(f, mid, priority);
	return true;
}

/* Send the entry (wait_ms as for send_entry_wait) and give the buffer
 * back; true when journald took it. */
static bool entry_end(struct fmt *f, unsigned int wait_ms)
{
	bool sent = send_entry_wait(f, wait_ms);
	errno = entry_errno;
	atomic_flag_clear(&entry_busy);
	return sent;
}

/* Under report.c's lock (the only caller is its sink): the violations'
 * own buffer, no flag to find taken. */
void journal_violation(const struct pmw_report *r)
{
	struct violation_shown shown = { .pid = (int)getpid(), .generation = r->generation };
	struct fmt f;
	int e = errno;
	if (rate_allows()) {
		fmt_init(&f, violation_entry, sizeof(violation_entry));
		common_fields(&f, MID_VIOLATION, violation_priority(r));
		violation_fmt_fields(&f, r, &shown);
		/* A kill waits up to 250 ms for room in a busy journald's
		 * queue (the process ends anyway); an audited write, which
		 * the program survives, up to 50 ms: it is reported once per
		 * site and process, and refining a proposal reads it (a site
		 * whose report was lost would be kept, and kill in enforce).
		 * Without the wait, a journald busy with other senders (ten
		 * datagrams queued, net.unix.max_dgram_qlen without a booted
		 * systemd) lost it. */
		if (!send_entry_wait(&f, r->mode == PMW_MODE_ENFORCE ? 250 : 50))
			journal_note_dropped();
	}
	errno = e;
}

void journal_protected(const struct pmw_protected *m)
{
	struct fmt f;
	if (!entry_begin(&f, MID_PROTECTED, 7))
		return;
	fmt_printf(&f, "PMALLOC_POLICY=%s\nPMALLOC_POOL=%s\nPMALLOC_TRIGGER=%s\nPMALLOC_PROTECTED_BYTES=%" PRIu64
		   "\nPMALLOC_NEW_BYTES=%" PRIu64 "\nPMALLOC_OBJECTS=%" PRIu64 "\nPMALLOC_GENERATION=%" PRIu64
		   "\nPMALLOC_FREED_BYTES=%" PRIu64 "\n"
		   "MESSAGE=pmalloc: pool \"%s\" of policy \"%s\": %" PRIu64 " bytes made read-only (%s, "
		   "generation %" PRIu64 ")\n",
		   m->policy, m->pool, m->trigger, m->protected_bytes, m->new_bytes, m->objects, m->pool_generation,
		   m->freed_bytes, m->pool, m->policy, m->new_bytes, m->trigger, m->pool_generation);
	entry_end(&f, 0);     /* at each trigger and reload, per pool: never waits */
}

bool journal_learned(const struct journal_learned *m)
{
	struct fmt f;
	/* The one buffer taken by another entry of this process (the "pool
	 * protected" entry that the protect writes while the trigger's flush
	 * begins on the shim's thread: preempted there, it cost that flush
	 * every entry): waited for as journald's queue is, up to wait_ms.
	 * Normal context only (the flush). */
	uint64_t end = os_monotonic_ns(true) + (uint64_t)m->wait_ms * 1000000u;
	while (!entry_begin(&f, MID_LEARNED, 6)) {
		if (os_monotonic_ns(true) >= end)
			return false;
		os_yield();
	}
	fmt_printf(&f, "PMALLOC_POLICY=%s\nPMALLOC_POOL=%s\nPMALLOC_RUN=%s\nPMALLOC_EXE_BUILD_ID=%s\n"
		   "PMALLOC_POLICY_LOADED=%" PRIu64 "\nPMALLOC_CHAIN=%s\n", m->policy, m->pool, m->run,
		   m->exe_build_id, m->policy_loaded_us, m->chain);
	fmt_printf(&f, "PMALLOC_OBJECTS=%" PRIu64 "\nPMALLOC_BYTES=%" PRIu64 "\nPMALLOC_LIVE_OBJECTS=%" PRIu64
		   "\nPMALLOC_LIVE_BYTES=%" PRIu64 "\nPMALLOC_FREED_OBJECTS=%" PRIu64 "\nPMALLOC_FREED_BYTES=%" PRIu64
		   "\nPMALLOC_LATE_OBJECTS=%" PRIu64 "\nPMALLOC_LATE_BYTES=%" PRIu64 "\nPMALLOC_WRITTEN=%d\n"
		   "PMALLOC_WRITTEN_BYTES=%" PRIu64 "\n", m->objects, m->bytes, m->live_objects, m->live_bytes,
		   m->freed_objects, m->freed_bytes, m->late_objects, m->late_bytes, m->written ? 1 : 0,
		   m->written_bytes);
	fmt_printf(&f, "PMALLOC_TRIGGER_LIVE_OBJECTS=%" PRIu64 "\nPMALLOC_TRIGGER_LIVE_BYTES=%" PRIu64 "\n",
		   m->trigger_live_objects, m->trigger_live_bytes);
	/* The site routing charged (frame 0 without wrappers), as before
	 * contexts: for readers of the round-2 entries. */
	fmt_printf(&f, "PMALLOC_SITE=%s\nPMALLOC_SITE_NAMED=%d\nPMALLOC_SITE_OBJECT=%s\nPMALLOC_SITE_OFFSET=0x%"
		   PRIx64 "\nPMALLOC_OBJECTS_LATE=%" PRIu64 "\n", m->site, m->named ? 1 : 0, m->object, m->offset,
		   m->late_objects);
	if (m->build_id[0])
		fmt_printf(&f, "PMALLOC_BUILD_ID=%s\n", m->build_id);
	for (size_t i = 0; i < m->n_wrappers; i++)
		fmt_printf(&f, "PMALLOC_WRAPPER=%s\n", m->wrappers[i]);
	fmt_printf(&f, "PMALLOC_LEARN_SEQ=%" PRIu32 "\nPMALLOC_LEARN_CTX=%" PRIu32 "\nPMALLOC_LEARN_UNSENT=%" PRIu64
		   "\nPMALLOC_LEARN_PROTECTED=%d\n", m->seq, m->ctx, m->unsent, m->protected ? 1 : 0);
	if (m->exec && m->exec[0])
		fmt_printf(&f, "PMALLOC_LEARN_EXEC=%s\nPMALLOC_LEARN_SECURE_EXEC=%d\n", m->exec, m->secure_exec ? 1 : 0);
	fmt_printf(&f, "PMALLOC_TRIGGERS=%s\nPMALLOC_LEARN_REASON=%s\nPMALLOC_EXE=%s\nMESSAGE=pmalloc: %s\n",
		   m->triggers, m->reason, m->exe, m->message);
	return entry_end(&f, m->wait_ms);
}

void journal_take_late(const char *policy, const char *pool, const char *site)
{
	struct fmt f;
	if (!entry_begin(&f, MID_LATE, 5))
		return;
	fmt_printf(&f, "PMALLOC_POLICY=%s\nPMALLOC_POOL=%s\nPMALLOC_TAKE=late\nPMALLOC_SITE=%s\nPMALLOC_EXE=%s\n"
		   "MESSAGE=pmalloc: PID %d (%s): site %s of pool \"%s\" (policy \"%s\") allocates after the pool's"
		   " trigger: to the heap, unprotected (take = \"until-trigger\"); said once\n", policy, pool, site,
		   self_exe, (int)getpid(), self_exe, site, pool, policy);
	entry_end(&f, 0);     /* in malloc's path, once per late site: never waits */
}

void journal_unmatched(const char *policy, const char *pool, const char *kind, const char *rule, bool dropped)
{
	struct fmt f;
	if (!entry_begin(&f, MID_UNMATCHED, 4))
		return;
	fmt_printf(&f, "PMALLOC_POLICY=%s\nPMALLOC_POOL=%s\nPMALLOC_RULE_KIND=%s\nPMALLOC_RULE=%s\nPMALLOC_EXE=%s\n"
		   "MESSAGE=pmalloc: PID %d (%s): %s rule \"%s\" of pool \"%s\" (policy \"%s\") ", policy, pool,
		   kind, rule, self_exe, (int)getpid(), self_exe, kind, rule, pool, policy);
	if (dropped)
		fmt_printf(&f, "is not applied in a loaded object that more than %d rules by name fit (the first %d"
			   " are): it protects nothing there\n", POLICY_OBJECT_NAME_RULES_MAX, POLICY_OBJECT_NAME_RULES_MAX);
	else
		fmt_printf(&f, "matches no function loaded at start-up: it protects nothing\n");
	entry_end(&f, NOTICE_WAIT_MS);
}

void journal_fault_notice(const char *what)
{
	struct fmt f;
	if (!entry_begin(&f, MID_HANDLER, 4))
		return;
	fmt_printf(&f, "PMALLOC_EXE=%s\nPMALLOC_HANDLER=%s\nMESSAGE=pmalloc: PID %d (%s): %s\n", self_exe, what,
		   (int)getpid(), self_exe, what);
	entry_end(&f, NOTICE_WAIT_MS);
}

void journal_role_unprotected(const char *policy, const char *role)
{
	struct fmt f;
	if (!entry_begin(&f, MID_ROLE, 4))
		return;
	fmt_printf(&f, "PMALLOC_POLICY=%s\nPMALLOC_EXE=%s\nPMALLOC_PROTECTION=none\n"
		   "MESSAGE=pmalloc: PID %d (%s): no pool of policy \"%s\" names role %s: this process runs "
		   "unprotected (learning never saw this role)\n", policy, self_exe, (int)getpid(), self_exe, policy,
		   role);
	entry_end(&f, NOTICE_WAIT_MS);
}
