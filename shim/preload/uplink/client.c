/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * client.c - the shim's side of pmallocd: the start-up handshake that
 * fetches this process's policy (its image, validated by client_decode.c;
 * never text to parse), and the reports sent afterwards (pool
 * protected; write fault, from the signal handler).  With no daemon,
 * reports go to the journal directly (journal.c).
 *
 * The connection is a SOCK_SEQPACKET socket opened at start-up and kept,
 * moved to a high descriptor and checked by inode before each use: a
 * program that closes every descriptor, or reuses the number, never gets
 * our bytes in its files.  The daemon learns who sends from the kernel
 * (SO_PASSCRED), so a forked child reports as itself.
 *
 * The handshake never waits longer than its timeout; sends never block:
 * a report the daemon cannot take now goes to the journal directly.
 * client_report() is async-signal-safe: it sends report.c's record as it
 * is (report.c's lock serialises it), nothing is allocated or copied.
 */
#define _GNU_SOURCE
#include "armed.h"
#include "stderr.h"
#include "os.h"
#include "client.h"
#include "client_decode.h"
#include "dynsym.h"
#include "journal.h"
#include "fmt.h"
#include "heap.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_FD_MIN 600      /* out of the way of programs' own descriptors */

/* Where reports go and whose orders are read: decided once, at the
 * handshake, then read-only (client_freeze), with the program's path the
 * reports carry.  A static at a link-time address: a write into the
 * shim's data cannot point reports at another socket, nor make the checks
 * below agree with one. */
struct client_ro {
	int fd;                      /* the kept connection, -1 none */
	pid_t owner;                 /* the process that connected: pmallocd's orders are its */
	dev_t dev;                   /* the socket's identity, checked before each use */
	ino_t ino;
	char exe[PMW_PATH];          /* the program's path, as read at start-up */
};
static union {
	struct client_ro s;
	unsigned char pages[ALIGN_UP(sizeof(struct client_ro), RO_PAGE)];
} conn __attribute__((aligned(RO_PAGE))) = { .s = { .fd = -1 } };
const struct ro_span client_ro_span = { &conn, sizeof(conn) };   /* ro.h: init.c lists it */
static int program_frozen;          /* dynsym_set_program()'s result */
#define client_fd (conn.s.fd)
#define client_owner (conn.s.owner)
#define client_dev (conn.s.dev)
#define client_ino (conn.s.ino)

static bool client_fd_valid(void)
{
	struct stat st;
	return client_fd >= 0 && fstat(client_fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       st.st_dev == client_dev && st.st_ino == client_ino;
}

/* Hand msg to pmallocd without blocking: true when it is the daemon's now,
 * false when the caller writes the journal itself: no daemon, or one whose
 * socket is full (stopped, hung, or flooded).  The shim's own rate limit
 * (journal.c) then bounds what reaches the journal, and counts and
 * summarises the rest, so no report is lost without trace.
 * Async-signal-safe. */
static bool send_to_daemon(const void *msg, size_t len)
{
	if (!client_fd_valid())
		return false;
	return send(client_fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len;
}

bool client_has_daemon(void)
{
	return client_fd >= 0;
}

bool client_send_msg(const void *msg, size_t len)
{
	return send_to_daemon(msg, len);
}

static void keep_connection(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == 0) {
		client_dev = st.st_dev;
		client_ino = st.st_ino;
		client_owner = getpid();
		client_fd = fd;
	} else {
		close(fd);
	}
}

static int pending_fd = -1;      /* asked, not answered yet */

/* Connect to pmallocd and say hello; the answer is client_wait()'s. */
int client_start(const char *path, const char *comm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, CLIENT_FD_MIN);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	struct pmw_hello hello = { 0 };
	pmw_header_init(&hello.h, PMW_HELLO, sizeof(hello));
	/* Read at start already: pmallocd need not read it again. */
	size_t comm_len = strnlen(comm, sizeof(hello.comm));
	if (comm_len > 0 && comm_len < sizeof(hello.comm)) {
		memcpy(hello.comm, comm, comm_len);
		hello.flags = PMW_HELLO_COMM;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello)) {
		int r = -errno;
		close(fd);
		return r;
	}
	pending_fd = fd;
	return 0;
}

void client_abandon(void)
{
	if (pending_fd >= 0)
		close(pending_fd);
	pending_fd = -1;
}

/* The daemon's answer in buf[0, n): 1 and a copy of the policy image
 * (validated), 0 for no policy, -errno for anything else. */
static int read_answer(const char *buf, ssize_t n, void **ret_image, size_t *ret_len,
		       uint64_t *ret_generation)
{
	struct client_answer a;
	int r = client_decode_answer(buf, (size_t)n, &a);
	if (r == -EPROTONOSUPPORT && a.reason[0])
		debug_printf("pmallocd refused this process: %s", a.reason);
	if (r <= 0)
		return r;
	void *image = heap_malloc(a.image_len);
	if (!image)
		return -ENOMEM;
	memcpy(image, a.image, a.image_len);
	*ret_image = image;
	*ret_len = a.image_len;
	*ret_generation = a.generation;
	return 1;
}

/* Wait up to timeout_ms for the answer to client_start(): 1 and the policy
 * image (malloc'ed, validated), 0 when the daemon has none, -ETIMEDOUT (still pending: wait again
 * or abandon), other -errno when the exchange failed (abandoned). */
int client_wait(unsigned int timeout_ms, void **ret_image, size_t *ret_len, uint64_t *ret_generation)
{
	if (pending_fd < 0)
		return -ENOTCONN;
	uint64_t deadline = 0;
	ssize_t n;
	char peek;
	int r;
	/* The answer's length first (MSG_PEEK | MSG_TRUNC: the packet stays),
	 * then a buffer of that size: an answer (224 bytes for /bin/true's
	 * policy, 272 for python3's) then fits the load's first bytes in .bss
	 * (scratch.c), where a buffer for the largest packet took a 64 MiB
	 * reservation, its munmap and a page fault of every process pmallocd
	 * served (one system call more here: the peek).  The clock is read
	 * only when the answer is not there yet. */
	for (;;) {
		n = os_recv(pending_fd, &peek, 1, MSG_PEEK | MSG_TRUNC);
		if (n != -EAGAIN)
			break;
		uint64_t now = os_monotonic_ns(false) / 1000000u;
		if (!deadline)
			deadline = now + timeout_ms;
		if (now >= deadline)
			return -ETIMEDOUT;
		short revents;
		uint64_t left_ms = deadline - now;
		(void)os_wait_fd(pending_fd, POLLIN, left_ms > INT_MAX ? INT_MAX : (int)left_ms, &revents);
	}
	if (n <= 0) {               /* an error, or the daemon closed without answering */
		client_abandon();
		return n < 0 ? (int)n : -ECONNRESET;
	}
	/* Larger than any message: taken (and dropped) in a buffer one byte
	 * over the limit, which the decoder refuses as it always did. */
	size_t len = (size_t)n < PMW_MAX_MSG + 1 ? (size_t)n : PMW_MAX_MSG + 1;
	char *buf = heap_malloc(len);
	if (!buf) {
		client_abandon();
		return -ENOMEM;
	}
	n = os_recv(pending_fd, buf, len, MSG_TRUNC | MSG_DONTWAIT);
	r = n < 0 ? (int)n : read_answer(buf, n, ret_image, ret_len, ret_generation);
	/* No stale copy of the policy is left in writable memory: the one the
	 * shim reads is the read-only copy init.c makes. */
	if (n > 0)
		explicit_bzero(buf, (size_t)n < len ? (size_t)n : len);
	heap_free(buf);
	if (r < 0) {
		client_abandon();
		return r;
	}
	/* Kept for reports, also without a policy: violations in the
	 * program's own API pools still reach the daemon, which symbolises. */
	keep_connection(pending_fd);
	pending_fd = -1;
	return r;
}

static void copy_name(char *dst, size_t len, const char *src)
{
	size_t n = src ? strnlen(src, len - 1) : 0;
	memcpy(dst, src ? src : "", n);
	memset(dst + n, 0, len - n);
}

bool client_notify_protected(size_t i, const char *trigger, size_t new_bytes, uint32_t pool_generation)
{
	const struct shim_state *st = shim;
	struct pmalloc_pool *p = st->pools[i].pool;
	struct pmw_protected m;
	memset(&m, 0, sizeof(m));
	pmw_header_init(&m.h, PMW_PROTECTED, sizeof(m));
	copy_name(m.policy, sizeof(m.policy), pimg_policy_name(st->image));
	copy_name(m.pool, sizeof(m.pool), pimg_pool_name(st->image, i));
	copy_name(m.trigger, sizeof(m.trigger), trigger);
	m.generation = st->generation;
	m.new_bytes = new_bytes;
	m.pool_generation = pool_generation;
	struct pool_totals t;
	pool_totals(p, &t);
	m.protected_bytes = t.protected_bytes;
	m.objects = t.objects;
	m.freed_bytes = t.freed_protected < t.protected_bytes ? t.freed_protected : t.protected_bytes;
	if (send_to_daemon(&m, sizeof(m)))
		return true;
	journal_protected(&m);
	return false;
}

void client_notify_exiting(int status, uint32_t how)
{
	struct pmw_exiting m;
	memset(&m, 0, sizeof(m));
	pmw_header_init(&m.h, PMW_EXITING, sizeof(m));
	m.status = status;
	m.how = how;
	(void)send_to_daemon(&m, sizeof(m));
}

/* Orders name the process that connected: a forked child shares the
 * descriptor but never reads them (they are its parent's). */
static bool orders_ours(void)
{
	return client_fd_valid() && getpid() == client_owner;
}

int client_wait_orders(int timeout_ms)
{
	if (!orders_ours())
		return -ENOTCONN;
	short revents;
	int r = os_wait_fd(client_fd, POLLIN, timeout_ms, &revents);
	if (r < 0)
		return r == -EINTR ? 0 : r;
	if ((revents & (POLLHUP | POLLERR | POLLNVAL)) && !(revents & POLLIN))
		return -EPIPE;
	return revents != 0;
}

void client_read_orders(void (*fn)(const char *pool), void (*status_ask)(void))
{
	union {
		struct pmw_protect order;
		struct pmw_sites_req sites;
	} u;
	struct pmw_protect *m = &u.order;
	if (!orders_ours())
		return;
	for (int i = 0; i < 16; i++) {          /* bounded: never a loop a daemon can hold */
		ssize_t n = os_recv(client_fd, &u, sizeof(u), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0)
			return;                       /* EAGAIN: nothing (more) */
		if (n == 0) {
			return;                       /* the daemon went away */
		}
		if (client_decode_sites_req(&u, (size_t)n)) {
			status_ask();                 /* pmallocctl status PID: the sites table */
			continue;
		}
		const char *pool = client_decode_order(m, (size_t)n);
		if (pool)
			fn(pool);                     /* anything else is not an order: ignored */
	}
}

void client_report(struct pmw_report *r)
{
	pmw_header_init(&r->h, PMW_REPORT, sizeof(*r));
	if (!send_to_daemon(r, sizeof(*r)))
		journal_violation(r);
}

void client_init(const char *exe, const char *comm)
{
	/* Read once at start-up into the page frozen after the handshake:
	 * setproctitle() and the like overwrite argv[0] (and with it
	 * program_invocation_name), a heap bug cannot reach it either.  No
	 * /proc: the name it was started by, still intact. */
	copy_name(conn.s.exe, PMW_PATH, exe[0] ? exe : program_invocation_name);
	program_frozen = dynsym_set_program(conn.s.exe);
	journal_init(conn.s.exe, comm);
}

int client_freeze(void)
{
	int r = program_frozen < 0 ? program_frozen : os_freeze(&conn, sizeof(conn), false);
	if (r < 0 && client_fd >= 0) {
		/* Not kept writable: reports go to the journal directly. */
		close(client_fd);
		client_fd = -1;
	}
	return r;
}
