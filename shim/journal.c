/*
 * journal.c - journal entries written by the shim itself when pmallocd is
 * not there or cannot take them (the MESSAGE_IDs and fields of pmallocd(8)),
 * in the journal's native protocol: "FIELD=value\n" lines in one datagram.
 * Values are ours or escaped (escape.h, shared with pmallocd), so none
 * needs the binary form.  Async-signal-safe: a static buffer under a flag,
 * socket + sendto, nothing allocated.  Symbol files are not read here: the
 * fault symbol is the exported function's (dynsym.c) where there is one,
 * and PMALLOC_BACKTRACE gives module+offset, which a person can symbolise.
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
#include "cgroup.h"
#include "dynsym.h"
#include "escape.h"
#include "fmt.h"
#include "msgid.h"
#include "shim.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* The rate limit pmallocd would apply (daemon.report_burst per
 * report_interval_s), kept by the shim when it writes the journal itself:
 * an audit-mode program writing in a loop must not flood the journal.  Per
 * process rather than per site; lock-free, as it runs in the handler. */
static _Atomic uint64_t window_start_ns;
static _Atomic unsigned int window_count, window_dropped;

static char entry[8192];
static atomic_flag entry_busy = ATOMIC_FLAG_INIT;

/* This process as it was at start-up (journal_init); "" where unknown. */
static char self_comm[17];
static char self_cgroup[512];
static char self_unit[256];

/* value escaped (escape.h): one entry, one line each field. */
static void field(struct fmt *f, const char *key, const char *value)
{
	fmt_str(f, key);
	fmt_str(f, "=");
	fmt_escaped(f, value);
	fmt_str(f, "\n");
}

static void field_u64(struct fmt *f, const char *key, uint64_t v, bool hex)
{
	fmt_str(f, key);
	fmt_str(f, "=");
	if (hex)
		fmt_hex(f, v);
	else
		fmt_u64(f, v);
	fmt_str(f, "\n");
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
	close(fd);
	return n == (ssize_t)fmt_len(f);
}

static bool send_entry(struct fmt *f)
{
	return send_entry_wait(f, 0);
}

/* The whole of a small /proc/self file into buf (NUL-terminated); length. */
static size_t read_self(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	if (fd >= 0) {
		ssize_t r;
		while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
			n += (size_t)r;
		close(fd);
	}
	buf[n] = '\0';
	return n;
}

void journal_init(const char *comm)
{
	char buf[2048];
	size_t n = strnlen(comm, sizeof(self_comm) - 1);
	memcpy(self_comm, comm, n);
	self_comm[n] = '\0';
	read_self("/proc/self/cgroup", buf, sizeof(buf));
	const char *path = cgroup_systemd_path(buf);
	if (path && strlen(path) < sizeof(self_cgroup)) {
		memcpy(self_cgroup, path, strlen(path) + 1);
		cgroup_unit(self_cgroup, self_unit, sizeof(self_unit));
	}
}

static void common_fields(struct fmt *f, const char *mid, int priority)
{
	field(f, "MESSAGE_ID", mid);
	field_u64(f, "PRIORITY", (uint64_t)priority, false);
	field(f, "SYSLOG_IDENTIFIER", "pmalloc");
	field_u64(f, "OBJECT_PID", (uint64_t)getpid(), false);
	if (self_comm[0])
		field(f, "PMALLOC_COMM", self_comm);
	if (self_unit[0])
		field(f, "OBJECT_SYSTEMD_UNIT", self_unit);
	if (self_cgroup[0])
		field(f, "OBJECT_SYSTEMD_CGROUP", self_cgroup);
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
static void write_summary(unsigned int wait_ms)
{
	unsigned int dropped = atomic_exchange(&window_dropped, 0), burst, interval_s;
	if (!dropped)
		return;
	limits(&burst, &interval_s);
	struct fmt f;
	fmt_init(&f, entry, sizeof(entry));
	common_fields(&f, MID_DROPPED, 4);
	field_u64(&f, "PMALLOC_DROPPED", dropped, false);
	field(&f, "PMALLOC_DROPPED_KIND", "violation");
	fmt_str(&f, "MESSAGE=pmalloc: PID ");
	fmt_u64(&f, (uint64_t)getpid());
	fmt_str(&f, ": ");
	fmt_u64(&f, dropped);
	fmt_str(&f, " violation reports were not logged (rate limit: ");
	fmt_u64(&f, burst);
	fmt_str(&f, " per ");
	fmt_u64(&f, interval_s);
	fmt_str(&f, " s, or pmallocd and journald could not take them)\n");
	if (!send_entry_wait(&f, wait_ms))
		atomic_fetch_add(&window_dropped, dropped);   /* kept for the next try */
}

/* May one more violation entry be written now?  Also writes the summary of
 * what the previous window dropped (entry_busy held). */
static bool rate_allows(void)
{
	unsigned int burst, interval_s;
	limits(&burst, &interval_s);
	uint64_t now = os_monotonic_ns(false), start = atomic_load(&window_start_ns);
	if (start == 0 || now - start >= (uint64_t)interval_s * 1000000000u) {
		atomic_store(&window_start_ns, now);
		atomic_store(&window_count, 0);
		write_summary(0);
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

/* Take the one entry buffer into f, errno saved in *ret_errno; false when
 * another entry is being written (this one is then not). */
static bool entry_take(struct fmt *f, int *ret_errno)
{
	if (atomic_flag_test_and_set(&entry_busy))
		return false;
	*ret_errno = errno;
	fmt_init(f, entry, sizeof(entry));
	return true;
}

static void entry_give(int saved_errno)
{
	errno = saved_errno;
	atomic_flag_clear(&entry_busy);
}

void journal_violation(const struct pmw_report *m, const struct violation *v)
{
	struct fmt f;
	int e;
	if (!entry_take(&f, &e)) {
		journal_note_dropped();   /* another report is being written */
		return;
	}
	if (!rate_allows()) {
		entry_give(e);
		return;
	}
	common_fields(&f, MID_VIOLATION, m->mode == PMW_MODE_AUDIT ? 4 : 2);
	field(&f, "PMALLOC_POLICY", m->policy);
	field(&f, "PMALLOC_POOL", m->pool);
	field(&f, "PMALLOC_MODE", m->mode == PMW_MODE_AUDIT ? "audit" : "enforce");
	field_u64(&f, "PMALLOC_ADDRESS", m->address, true);
	field_u64(&f, "PMALLOC_OFFSET", m->offset, false);
	field_u64(&f, "PMALLOC_OBJECT_SIZE", m->object_size, false);
	if (m->object_site[0])
		field(&f, "PMALLOC_OBJECT_SITE", m->object_site);
	field_u64(&f, "PMALLOC_FAULT_IP", m->fault_ip, true);
	/* Exported functions only: no symbol file is read in a faulting process. */
	char sym[PMW_SYM];
	if (dynsym_name(m->fault_ip, sym, sizeof(sym)))
		field(&f, "PMALLOC_FAULT_SYMBOL", sym);
	field_u64(&f, "PMALLOC_GENERATION", m->generation, false);
	field(&f, "PMALLOC_EXE", m->exe);
	if (!v->audit) {
		field_u64(&f, "PMALLOC_SIGNAL", SIGSEGV, false);
		field(&f, "PMALLOC_SIGNAL_NAME", "SIGSEGV");
	}
	fmt_str(&f, "PMALLOC_BACKTRACE=");
	for (uint32_t i = 0; i < m->n_frames; i++) {
		if (i)
			fmt_str(&f, " < ");
		uint32_t mod = m->frames[i].module;
		if (mod < m->n_modules) {
			const char *path = m->modules[mod].path, *slash = strrchr(path, '/');
			fmt_escaped(&f, slash ? slash + 1 : path);
			fmt_str(&f, "+");
			fmt_hex(&f, m->frames[i].offset);
		} else {
			fmt_hex(&f, m->frames[i].ip);
		}
	}
	fmt_str(&f, "\nMESSAGE=pmalloc: PID ");
	fmt_u64(&f, (uint64_t)getpid());
	fmt_str(&f, " (");
	fmt_escaped(&f, m->exe);
	fmt_str(&f, ") wrote to protected pool \"");
	fmt_escaped(&f, m->pool);
	fmt_str(&f, "\"");
	if (m->policy[0]) {
		fmt_str(&f, " of policy \"");
		fmt_escaped(&f, m->policy);
		fmt_str(&f, "\"");
	}
	fmt_str(&f, " at ");
	fmt_hex(&f, m->address);
	if (m->object_start) {
		fmt_str(&f, " (offset ");
		fmt_u64(&f, m->offset);
		fmt_str(&f, " in ");
		fmt_u64(&f, m->object_size);
		fmt_str(&f, "-byte object");
		if (m->object_site[0]) {
			fmt_str(&f, " allocated at ");
			fmt_escaped(&f, m->object_site);
		}
		fmt_str(&f, ")");
	}
	fmt_str(&f, ", ip ");
	fmt_hex(&f, m->fault_ip);
	fmt_str(&f, v->audit ? "; write allowed (audit)\n" : "; process killed (enforce)\n");
	if (!send_entry(&f))
		journal_note_dropped();
	entry_give(e);
}

void journal_protected(const struct pmw_protected *m)
{
	struct fmt f;
	int e;
	if (!entry_take(&f, &e))
		return;
	common_fields(&f, MID_PROTECTED, 7);
	field(&f, "PMALLOC_POLICY", m->policy);
	field(&f, "PMALLOC_POOL", m->pool);
	field(&f, "PMALLOC_TRIGGER", m->trigger);
	field_u64(&f, "PMALLOC_PROTECTED_BYTES", m->protected_bytes, false);
	field_u64(&f, "PMALLOC_NEW_BYTES", m->new_bytes, false);
	field_u64(&f, "PMALLOC_OBJECTS", m->objects, false);
	fmt_str(&f, "MESSAGE=pmalloc: pool \"");
	fmt_escaped(&f, m->pool);
	fmt_str(&f, "\" of policy \"");
	fmt_escaped(&f, m->policy);
	fmt_str(&f, "\": ");
	fmt_u64(&f, m->new_bytes);
	fmt_str(&f, " bytes made read-only (");
	fmt_escaped(&f, m->trigger);
	fmt_str(&f, ")\n");
	send_entry(&f);
	entry_give(e);
}

void journal_learned(const struct journal_learned *m)
{
	struct fmt f;
	int e;
	if (!entry_take(&f, &e))
		return;
	common_fields(&f, MID_LEARNED, 6);
	field(&f, "PMALLOC_POLICY", m->policy);
	field(&f, "PMALLOC_POOL", m->pool);
	field(&f, "PMALLOC_SITE", m->site);
	field(&f, "PMALLOC_SITE_NAMED", m->named ? "1" : "0");
	field(&f, "PMALLOC_SITE_OBJECT", m->object);
	field_u64(&f, "PMALLOC_SITE_OFFSET", m->offset, true);
	if (m->build_id[0])
		field(&f, "PMALLOC_BUILD_ID", m->build_id);
	field_u64(&f, "PMALLOC_OBJECTS", m->objects, false);
	field_u64(&f, "PMALLOC_BYTES", m->bytes, false);
	field_u64(&f, "PMALLOC_WRITTEN", m->written, false);
	field(&f, "PMALLOC_TRIGGERS", m->triggers);
	field(&f, "PMALLOC_LEARN_REASON", m->reason);
	field(&f, "PMALLOC_EXE", m->exe);
	fmt_str(&f, "MESSAGE=pmalloc: learned: pool \"");
	fmt_escaped(&f, m->pool);
	fmt_str(&f, "\" of policy \"");
	fmt_escaped(&f, m->policy);
	fmt_str(&f, "\": site ");
	fmt_escaped(&f, m->site);
	fmt_str(&f, ": ");
	fmt_u64(&f, m->objects);
	fmt_str(&f, " objects, ");
	fmt_u64(&f, m->bytes);
	fmt_str(&f, m->written ? " bytes, written after protection\n" : " bytes, never written after protection\n");
	send_entry_wait(&f, 250);
	entry_give(e);
}

void journal_unmatched(const char *policy, const char *pool, const char *kind, const char *rule)
{
	const char *exe = report_program;    /* read at start-up */
	struct fmt f;
	int e;
	if (!entry_take(&f, &e))
		return;
	common_fields(&f, MID_UNMATCHED, 4);
	field(&f, "PMALLOC_POLICY", policy);
	field(&f, "PMALLOC_POOL", pool);
	field(&f, "PMALLOC_RULE_KIND", kind);
	field(&f, "PMALLOC_RULE", rule);
	field(&f, "PMALLOC_EXE", exe);
	fmt_str(&f, "MESSAGE=pmalloc: PID ");
	fmt_u64(&f, (uint64_t)getpid());
	fmt_str(&f, " (");
	fmt_escaped(&f, exe);
	fmt_str(&f, "): ");
	fmt_escaped(&f, kind);
	fmt_str(&f, " rule \"");
	fmt_escaped(&f, rule);
	fmt_str(&f, "\" of pool \"");
	fmt_escaped(&f, pool);
	fmt_str(&f, "\" (policy \"");
	fmt_escaped(&f, policy);
	fmt_str(&f, "\") matches no function loaded at start-up: it protects nothing\n");
	send_entry(&f);
	entry_give(e);
}
