/*
 * journal.c - journal entries written by the shim itself when pmallocd is
 * not there (SPEC.md's MESSAGE_IDs and fields), in the journal's native
 * protocol: "FIELD=value\n" lines in one datagram.  Values are ours or
 * escaped (escape.h, shared with pmallocd), so none needs the binary
 * form.  Async-signal-safe: a static buffer under a flag, socket + sendto,
 * nothing allocated.  Symbols are not resolved here; PMALLOC_BACKTRACE
 * gives module+offset, which pmallocctl or a person can symbolise.
 */
#define _GNU_SOURCE
#include "journal.h"
#include "escape.h"
#include "fmt.h"
#include "shim.h"
#include "os.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
#define MID_VIOLATION "7df8f2fd7e8542c19da1343c00501acc"
#define MID_PROTECTED "4861793aed344e45916acf02f15da997"
#define MID_DROPPED "c1e835285fc54160a43c1065e7656999"

/* The rate limit pmallocd would apply (daemon.report_burst per
 * report_interval_s), kept by the shim when it writes the journal itself:
 * an audit-mode program writing in a loop must not flood the journal.  Per
 * process rather than per site; lock-free, as it runs in the handler. */
static _Atomic uint64_t window_start_ns;
static _Atomic unsigned int window_count, window_dropped;

static char entry[8192];
static atomic_flag entry_busy = ATOMIC_FLAG_INIT;

/* value escaped (escape.h): one entry, one line each field. */
static void sanitized(struct fmt *f, const char *value)
{
	if (f->p < f->end)
		f->p += text_escape(f->p, (size_t)(f->end - f->p), value);
}

static void field(struct fmt *f, const char *key, const char *value)
{
	fmt_str(f, key);
	fmt_str(f, "=");
	sanitized(f, value);
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

static void send_entry(struct fmt *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	sendto(fd, f->start, fmt_len(f), MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
}

static void common_fields(struct fmt *f, const char *mid, int priority)
{
	field(f, "MESSAGE_ID", mid);
	field_u64(f, "PRIORITY", (uint64_t)priority, false);
	field(f, "SYSLOG_IDENTIFIER", "pmalloc");
	field_u64(f, "OBJECT_PID", (uint64_t)getpid(), false);
}

/* May one more violation entry be written now?  Also writes the summary of
 * what the previous window dropped (entry_busy held). */
static bool rate_allows(void)
{
	unsigned int burst = 20, interval_s = 10;
	const struct shim_state *st = shim;
	if (st && st->set) {
		burst = st->set->daemon.report_burst;
		interval_s = st->set->daemon.report_interval_s;
	}
	uint64_t now = os_monotonic_ns(false), start = atomic_load(&window_start_ns);
	if (start == 0 || now - start >= (uint64_t)interval_s * 1000000000u) {
		atomic_store(&window_start_ns, now);
		atomic_store(&window_count, 0);
		unsigned int dropped = atomic_exchange(&window_dropped, 0);
		if (dropped) {
			struct fmt f;
			fmt_init(&f, entry, sizeof(entry));
			field(&f, "MESSAGE_ID", MID_DROPPED);
			field_u64(&f, "PRIORITY", 4, false);
			field(&f, "SYSLOG_IDENTIFIER", "pmalloc");
			field_u64(&f, "OBJECT_PID", (uint64_t)getpid(), false);
			field_u64(&f, "PMALLOC_DROPPED", dropped, false);
			fmt_str(&f, "MESSAGE=pmalloc: ");
			fmt_u64(&f, dropped);
			fmt_str(&f, " violation reports of this process were not logged (rate limit)\n");
			send_entry(&f);
		}
	}
	if (atomic_fetch_add(&window_count, 1) < burst)
		return true;
	atomic_fetch_add(&window_dropped, 1);
	return false;
}

void journal_violation(const struct pmw_report *m, const struct violation *v)
{
	if (atomic_flag_test_and_set(&entry_busy))
		return;
	int e = errno;
	if (!rate_allows()) {
		errno = e;
		atomic_flag_clear(&entry_busy);
		return;
	}
	struct fmt f;
	fmt_init(&f, entry, sizeof(entry));
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
	field_u64(&f, "PMALLOC_GENERATION", m->generation, false);
	field(&f, "PMALLOC_EXE", m->exe);
	fmt_str(&f, "PMALLOC_BACKTRACE=");
	for (uint32_t i = 0; i < m->n_frames; i++) {
		if (i)
			fmt_str(&f, " < ");
		uint32_t mod = m->frames[i].module;
		if (mod < m->n_modules) {
			const char *path = m->modules[mod].path, *slash = strrchr(path, '/');
			sanitized(&f, slash ? slash + 1 : path);
			fmt_str(&f, "+");
			fmt_hex(&f, m->frames[i].offset);
		} else {
			fmt_hex(&f, m->frames[i].ip);
		}
	}
	fmt_str(&f, "\nMESSAGE=pmalloc: PID ");
	fmt_u64(&f, (uint64_t)getpid());
	fmt_str(&f, " (");
	sanitized(&f, m->exe);
	fmt_str(&f, ") wrote to protected pool \"");
	sanitized(&f, m->pool);
	fmt_str(&f, "\"");
	if (m->policy[0]) {
		fmt_str(&f, " of policy \"");
		sanitized(&f, m->policy);
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
			sanitized(&f, m->object_site);
		}
		fmt_str(&f, ")");
	}
	fmt_str(&f, ", ip ");
	fmt_hex(&f, m->fault_ip);
	fmt_str(&f, v->audit ? "; write allowed (audit)\n" : "; process killed (enforce)\n");
	send_entry(&f);
	errno = e;
	atomic_flag_clear(&entry_busy);
}

void journal_protected(const struct pmw_protected *m)
{
	if (atomic_flag_test_and_set(&entry_busy))
		return;
	int e = errno;
	struct fmt f;
	fmt_init(&f, entry, sizeof(entry));
	common_fields(&f, MID_PROTECTED, 7);
	field(&f, "PMALLOC_POLICY", m->policy);
	field(&f, "PMALLOC_POOL", m->pool);
	field(&f, "PMALLOC_TRIGGER", m->trigger);
	field_u64(&f, "PMALLOC_PROTECTED_BYTES", m->protected_bytes, false);
	field_u64(&f, "PMALLOC_NEW_BYTES", m->new_bytes, false);
	field_u64(&f, "PMALLOC_OBJECTS", m->objects, false);
	fmt_str(&f, "MESSAGE=pmalloc: pool \"");
	sanitized(&f, m->pool);
	fmt_str(&f, "\" of policy \"");
	sanitized(&f, m->policy);
	fmt_str(&f, "\": ");
	fmt_u64(&f, m->new_bytes);
	fmt_str(&f, " bytes made read-only (");
	sanitized(&f, m->trigger);
	fmt_str(&f, ")\n");
	send_entry(&f);
	errno = e;
	atomic_flag_clear(&entry_busy);
}
