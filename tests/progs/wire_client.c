/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wire_client.c - a pmallocd client for the daemon tests, speaking
 * common/proto/wire.h exactly as the shim does (shim/preload/uplink/client.c), plus the ways a
 * broken or hostile client gets it wrong.
 *
 *   wire_client --socket PATH [ACTION...]
 *
 * Without an action: connect, send HELLO, print the answer:
 *   "POLICY generation=N" then the policy image (validated) one record a
 *   line, "NO_POLICY generation=N
 *   reason=...", or "REFUSED reason=...".
 * Actions (after the answer, in this order):
 *   --protect POOL          send PMW_PROTECTED for POOL (policy from --policy)
 *   --rules POOL            send PMW_RULES: one unresolved site rule "typo_fn" of POOL
 *                           (policy from --policy), N times with --rules-n N
 *   --report N              send N violation reports about this program's own code
 *   --fork-report           fork; the child sends one report on the shared connection
 *                           and prints "child=PID"
 *   --flood N               send N PMW_PROTECTED as fast as the socket takes them
 *   --hold MS               keep the connection open MS ms before exiting
 *   --wait-protect MS       stay connected MS ms and print "PROTECT generation=N
 *                           pool=NAME" for each PMW_PROTECT the daemon sends
 *                           (anything else: "unexpected type T"); stops early on EOF
 *   --exec PROG             attribution forgery: fork a child, keep the connection
 *                           across an exec of PROG (with --exec-arg ARG, if given) in
 *                           this process; the child waits for the exec, sends one
 *                           report on the connection, prints "child=PID" and exits
 *                           at once (before pmallocd can read its /proc entry)
 *   --hello-from-child      with --exec: the child sends the HELLO (after the exec),
 *                           prints the answer, then reports
 *   --hello-then-exec       with --exec: this process sends the HELLO and execs at
 *                           once, without reading the answer (the child reads it)
 * The HELLO says no comm (pmallocd reads /proc/PID/comm) unless:
 *   --comm NAME             HELLO with PMW_HELLO_COMM and NAME, as the shim sends it
 *   --hello-short           the HELLO without its comm field (as older shims sent it)
 * Instead of a HELLO:
 *   --version V             HELLO with protocol version V
 *   --garbage | --truncated | --oversized | --bad-length | --report-first | --fds
 *   | --comm-unterminated | --comm-short
 *                           send that, then print "closed" once the daemon hangs up
 *                           (the last two: PMW_HELLO_COMM with a comm of 16 bytes
 *                           and no NUL, or in a HELLO too short to hold one)
 *   --silent                connect, say nothing, print "closed after MS ms" when dropped
 *   --status                send PMW_STATUS_REQ and print the text
 *   --status-times N        N status requests 50 ms apart, each on a new
 *                           connection; prints "status_max_us=U" (connect to
 *                           answer, the slowest), "status_median_us=M" and
 *                           "status_over_100ms=K" (exit 1 if one is not answered)
 *   --status                print pmallocd's status text: run the pmallocctl built
 *                           beside this program (status is data, pmallocctl words it)
 *   --many N                N connections at once, each says HELLO; prints
 *                           "answered=K refused=R" (exit 0 when every one got either);
 *                           with --report K each answered one then sends K reports,
 *                           with --children C each forks C children that send one
 *                           report each on it (then "reports=N" is printed);
 *                           with --hold, they stay open that long; with --vanish,
 *                           each is closed right after its HELLO and "vanished=N"
 *                           is printed (the process lives on for --hold MS)
 *   --vanish                send HELLO and exit without reading the answer
 * Options: --policy NAME (default "demo"), --pool NAME (default "config"),
 *   --mode enforce|audit, --delay-ms MS between reports, --module-path PATH
 *   (reports name PATH as the program's module: a file the daemon must not
 *   trust), --kernel-call NAME (reports say the kernel wrote, in NAME),
 *   --cause N (the report's cause field, any value).
 * Prints "pid=PID" first.  Exit 0 on success, 1 on error, 2 on usage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <link.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/policy/policy_image.h"
#include "../../common/proto/wire.h"

static const char *opt_socket;
static const char *opt_policy = "demo";
static const char *opt_pool = "config";
static int opt_audit;
static int opt_delay_ms;
static const char *opt_module_path;
static const char *opt_kernel_call;
static long opt_cause = -1;
static const char *opt_comm;
static int opt_hello_short;

static uint64_t us_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int connect_daemon(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(opt_socket) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "socket path too long\n");
		exit(2);
	}
	strcpy(sa.sun_path, opt_socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("socket");
		exit(1);
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
	ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
	if (n != (ssize_t)len) {
		fprintf(stderr, "send: %s\n", n < 0 ? strerror(errno) : "short");
		exit(1);
	}
}

/* Wait up to ms for a packet; returns its size, 0 on EOF, -1 on timeout. */
static ssize_t recv_timeout(int fd, void *buf, size_t size, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return -1;
	n = recv(fd, buf, size, MSG_TRUNC);
	if (n < 0 && (errno == ECONNRESET || errno == EPIPE))
		return 0;
	return n;
}

static void hello(int fd, uint16_t version)
{
	struct pmw_hello h;
	size_t len = opt_hello_short ? PMW_HELLO_SHORT : sizeof(h);

	memset(&h, 0, sizeof(h));
	pmw_header_init(&h.h, PMW_HELLO, (uint32_t)len);
	h.h.version = version;
	if (opt_comm) {
		h.flags = PMW_HELLO_COMM;
		strncpy(h.comm, opt_comm, sizeof(h.comm) - 1);
	}
	send_all(fd, &h, len);
}

/* Print the daemon's answer to HELLO; 0 when a policy or no-policy came. */
/* The policy image, one line per record, as the shim reads it. */
static void print_image(const struct pimg_header *h)
{
	static const char *const modes[] = { "enforce", "audit", "learn" };
	static const char *const kinds[] = { "on-call", "after", "manual" };
	printf("policy \"%s\" mode=%s protection=%s report_burst=%u report_interval_s=%u\n",
	       pimg_policy_name(h), modes[h->mode], h->protection == POLICY_PROT_SEAL ? "seal" : "mprotect",
	       h->report_burst, h->report_interval_s);
	for (uint32_t i = 0; i < h->n_pools; i++) {
		const struct pimg_pool *p = pimg_pool(h, i);
		printf("pool \"%s\" max_bytes=%llu\n", pimg_str(h, p->name), (unsigned long long)p->max_bytes);
		for (uint32_t j = 0; j < p->n_sites; j++) {
			const struct pimg_site *s = pimg_pool_site(h, p, j);
			const char *obj = pimg_str(h, s->object), *id = pimg_str(h, s->build_id);
			printf("  site %s%s%s%s%s\n", obj ? obj : "", id ? "@" : "", id ? id : "", obj ? ":" : "",
			       pimg_str(h, s->function));
		}
		for (uint32_t j = 0; j < p->n_wrappers; j++)
			printf("  wrapper %s\n", pimg_pool_wrapper(h, p, j));
		for (uint32_t j = 0; j < p->n_triggers; j++) {
			const struct pimg_trigger *t = pimg_pool_trigger(h, p, j);
			printf("  trigger %s call=%u after_ns=%llu\n", kinds[t->kind], t->call,
			       (unsigned long long)t->after_ns);
		}
	}
}

static int print_answer(int fd)
{
	static char buf[PMW_MAX_MSG + 1] __attribute__((aligned(16)));
	ssize_t n = recv_timeout(fd, buf, sizeof(buf), 5000);
	const struct pmw_header *h = (const void *)buf;

	if (n < 0) {
		printf("timeout\n");
		return 1;
	}
	if (n == 0) {
		printf("closed\n");
		return 1;
	}
	if (n < (ssize_t)sizeof(*h) || h->magic != PMW_MAGIC || h->length != (uint32_t)n) {
		printf("bad answer (%zd bytes)\n", n);
		return 1;
	}
	if (h->type == PMW_POLICY) {
		const struct pmw_policy *p = (const void *)buf;
		if (n < (ssize_t)sizeof(*p) || sizeof(*p) + p->image_len != (size_t)n ||
		    policy_image_validate(p->image, p->image_len) < 0) {
			printf("bad policy answer\n");
			return 1;
		}
		printf("POLICY generation=%llu\n", (unsigned long long)p->generation);
		print_image((const void *)p->image);
		return 0;
	}
	if ((h->type == PMW_NO_POLICY || h->type == PMW_REFUSED) && n == sizeof(struct pmw_answer)) {
		const struct pmw_answer *a = (const void *)buf;
		char reason[PMW_SYM];
		memcpy(reason, a->reason, sizeof(reason));
		reason[sizeof(reason) - 1] = '\0';
		if (h->type == PMW_NO_POLICY)
			printf("NO_POLICY generation=%llu reason=%s\n", (unsigned long long)a->generation, reason);
		else
			printf("REFUSED reason=%s\n", reason);
		return h->type == PMW_NO_POLICY ? 0 : 1;
	}
	printf("unexpected answer type %u\n", h->type);
	return 1;
}

static void wait_closed(int fd, int ms)
{
	char buf[256];
	ssize_t n = recv_timeout(fd, buf, sizeof(buf), ms);
	printf(n == 0 ? "closed\n" : n < 0 ? "still open\n" : "answered\n");
}

/* ---- a report built the way shim/preload/uplink/client.c builds one ---- */

__attribute__((noinline, used)) void wire_alloc_site(void);
__attribute__((noinline, used)) void wire_alloc_site(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

__attribute__((noinline, used)) void wire_fault_site(void);
__attribute__((noinline, used)) void wire_fault_site(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static void copy_name(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);
	memcpy(dst, src, n);
	memset(dst + n, 0, len - n);
}

static uint32_t build_id_of(const struct link_map *lm, uint8_t *out)
{
	const ElfW(Ehdr) *eh;
	struct dl_find_object dlfo;

	if (_dl_find_object((void *)lm->l_ld, &dlfo) != 0)
		return 0;
	eh = dlfo.dlfo_map_start;
	for (int i = 0; i < eh->e_phnum; i++) {
		const ElfW(Phdr) *p = (const void *)((const char *)eh + eh->e_phoff + (size_t)i * sizeof(ElfW(Phdr)));
		uintptr_t n, end;
		if (p->p_type != PT_NOTE)
			continue;
		n = lm->l_addr + p->p_vaddr;
		end = n + p->p_memsz;
		while (n + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)n;
			uintptr_t name = n + sizeof(*nh);
			uintptr_t desc = name + ((nh->n_namesz + 3u) & ~3u);
			uintptr_t next = desc + ((nh->n_descsz + 3u) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp((void *)name, "GNU", 4)) {
				uint32_t len = nh->n_descsz < PMW_BUILD_ID ? nh->n_descsz : PMW_BUILD_ID;
				memcpy(out, (const void *)desc, len);
				return len;
			}
			n = next;
		}
	}
	return 0;
}

static uint32_t module_index(struct pmw_report *m, uintptr_t ip, uint64_t *ret_offset)
{
	struct dl_find_object dlfo;
	const struct link_map *lm;
	struct pmw_module *mod;

	if (_dl_find_object((void *)ip, &dlfo) != 0 || !dlfo.dlfo_link_map)
		return PMW_NO_MODULE;
	lm = dlfo.dlfo_link_map;
	*ret_offset = ip - lm->l_addr;
	for (uint32_t i = 0; i < m->n_modules; i++)
		if (m->modules[i].base == lm->l_addr)
			return i;
	if (m->n_modules >= PMW_MODULES)
		return PMW_NO_MODULE;
	mod = &m->modules[m->n_modules];
	copy_name(mod->path, sizeof(mod->path), lm->l_name && lm->l_name[0] ? lm->l_name : m->exe);
	mod->base = lm->l_addr;
	mod->build_id_len = build_id_of(lm, mod->build_id);
	return m->n_modules++;
}

static void build_report(struct pmw_report *m)
{
	uintptr_t frames[3];
	struct dl_find_object dlfo;
	const char *base;
	ssize_t n;

	memset(m, 0, sizeof(*m));
	pmw_header_init(&m->h, PMW_REPORT, sizeof(*m));
	copy_name(m->policy, sizeof(m->policy), opt_policy);
	copy_name(m->pool, sizeof(m->pool), opt_pool);
	m->mode = opt_audit ? PMW_MODE_AUDIT : PMW_MODE_ENFORCE;
	m->generation = 1;
	m->object_start = 0x7f0000001000ull;
	m->object_size = 32;
	m->address = m->object_start + 8;
	m->offset = 8;
	n = readlink("/proc/self/exe", m->exe, sizeof(m->exe) - 1);
	m->exe[n > 0 ? n : 0] = '\0';

	/* The object site as the shim writes it without a symbol: basename+0xoff. */
	if (_dl_find_object((void *)(uintptr_t)&wire_alloc_site, &dlfo) == 0) {
		char off[32];
		base = strrchr(m->exe, '/');
		base = base ? base + 1 : m->exe;
		snprintf(off, sizeof(off), "+0x%lx",
			 (unsigned long)((uintptr_t)&wire_alloc_site + 4 - dlfo.dlfo_link_map->l_addr));
		if (strlen(base) + strlen(off) < sizeof(m->object_site)) {
			strcpy(m->object_site, base);
			strcat(m->object_site, off);
		}
	}
	m->fault_ip = (uintptr_t)&wire_fault_site + 4;
	frames[0] = m->fault_ip;
	frames[1] = (uintptr_t)&build_report + 1;
	frames[2] = (uintptr_t)&printf;             /* into libc */
	for (int i = 0; i < 3; i++) {
		m->frames[i].ip = frames[i];
		m->frames[i].module = module_index(m, frames[i], &m->frames[i].offset);
		m->n_frames++;
	}
	if (opt_kernel_call) {
		m->cause = PMW_CAUSE_KERNEL;
		copy_name(m->kernel_call, sizeof(m->kernel_call), opt_kernel_call);
	}
	if (opt_cause >= 0)
		m->cause = (uint32_t)opt_cause;
	if (opt_module_path && m->n_modules > 0) {
		copy_name(m->modules[0].path, sizeof(m->modules[0].path), opt_module_path);
		m->modules[0].build_id_len = 0;
	}
}

static void send_report(int fd)
{
	static struct pmw_report m;
	build_report(&m);
	send_all(fd, &m, sizeof(m));
}

static void send_protected(int fd, const char *pool)
{
	struct pmw_protected m;

	memset(&m, 0, sizeof(m));
	pmw_header_init(&m.h, PMW_PROTECTED, sizeof(m));
	copy_name(m.policy, sizeof(m.policy), opt_policy);
	copy_name(m.pool, sizeof(m.pool), pool);
	copy_name(m.trigger, sizeof(m.trigger), "on-call:listen");
	m.generation = 1;
	m.new_bytes = 4096;
	m.protected_bytes = 8192;
	m.objects = 3;
	send_all(fd, &m, sizeof(m));
}

static void send_rules(int fd, const char *pool)
{
	static struct pmw_rules m;

	memset(&m, 0, sizeof(m));
	pmw_header_init(&m.h, PMW_RULES, sizeof(m));
	copy_name(m.policy, sizeof(m.policy), opt_policy);
	m.generation = 1;
	m.what = PMW_RULES_RULES;
	m.n_rows = m.total = m.unresolved = 1;
	copy_name(m.rows[0].pool, sizeof(m.rows[0].pool), pool);
	copy_name(m.rows[0].text, sizeof(m.rows[0].text), "typo_fn");
	m.rows[0].kind = PMW_ROW_SITE;
	m.rows[0].state = PMW_ROW_NO_FUNCTION;
	send_all(fd, &m, sizeof(m));
}

/* ---- bad clients ---- */

static void bad_message(int fd, const char *what)
{
	static char buf[PMW_MAX_MSG + 512];
	struct pmw_hello h;

	memset(&h, 0, sizeof(h));
	pmw_header_init(&h.h, PMW_HELLO, sizeof(h));
	if (!strcmp(what, "garbage")) {
		for (size_t i = 0; i < 200; i++)
			buf[i] = (char)(i * 37 + 11);
		send_all(fd, buf, 200);
	} else if (!strcmp(what, "truncated")) {
		send_all(fd, &h, 10);
	} else if (!strcmp(what, "oversized")) {
		struct pmw_header *hh = (struct pmw_header *)buf;
		memset(buf, 'A', sizeof(buf));
		pmw_header_init(hh, PMW_REPORT, sizeof(buf));
		send_all(fd, buf, sizeof(buf));
	} else if (!strcmp(what, "bad-length")) {
		h.h.length = sizeof(h) + 8;
		send_all(fd, &h, sizeof(h));
	} else if (!strcmp(what, "comm-unterminated")) {
		h.flags = PMW_HELLO_COMM;
		memset(h.comm, 'x', sizeof(h.comm));
		send_all(fd, &h, sizeof(h));
	} else if (!strcmp(what, "comm-short")) {
		h.flags = PMW_HELLO_COMM;
		h.h.length = PMW_HELLO_SHORT;
		send_all(fd, &h, PMW_HELLO_SHORT);
	} else if (!strcmp(what, "report-first")) {
		send_report(fd);
	} else if (!strcmp(what, "fds")) {
		union { struct cmsghdr a; char b[CMSG_SPACE(sizeof(int))]; } ctl;
		struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
				     .msg_controllen = sizeof(ctl) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		int pass = 0;
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass, sizeof(int));
		if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
			perror("sendmsg");
			exit(1);
		}
	}
	wait_closed(fd, 5000);
}

static void send_report(int fd);

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* --status-times: how long status takes, as another user's process sees it. */
static int status_timed(int n)
{
	static char buf[PMW_MAX_MSG + 1];
	uint64_t worst = 0, times[1000] = { 0 };
	int over = 0;

	if (n < 1 || n > 1000)
		n = n < 1 ? 1 : 1000;
	for (int i = 0; i < n; i++) {
		struct pmw_status_req req;
		struct timespec gap = { 0, 50 * 1000 * 1000 };
		uint64_t t0 = us_now(), t;
		int fd = connect_daemon();
		ssize_t got;

		memset(&req, 0, sizeof(req));
		pmw_header_init(&req.h, PMW_STATUS_REQ, sizeof(req));
		send_all(fd, &req, sizeof(req));
		got = recv_timeout(fd, buf, sizeof(buf), 30000);
		t = us_now() - t0;
		close(fd);
		if (got <= 0) {
			printf("status %d not answered\n", i);
			return 1;
		}
		if (t > worst)
			worst = t;
		over += t >= 100000;
		times[i] = t;
		nanosleep(&gap, NULL);
	}
	qsort(times, (size_t)n, sizeof(times[0]), cmp_u64);
	printf("status_max_us=%llu\nstatus_median_us=%llu\nstatus_over_100ms=%d\n",
	       (unsigned long long)worst, (unsigned long long)times[n / 2], over);
	return 0;
}

static int many(int n, int hold_ms, int reports, int children, int vanish)
{
	struct rlimit rl;
	int *fds = calloc((size_t)n, sizeof(int)), answered = 0, refused = 0;
	static char buf[PMW_MAX_MSG + 1];

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int i = 0; i < n; i++) {
		struct pmw_hello h;

		fds[i] = connect_daemon();
		memset(&h, 0, sizeof(h));
		pmw_header_init(&h.h, PMW_HELLO, sizeof(h));
		/* A client over the daemon's limit may be refused and closed
		 * before its HELLO goes out (EPIPE): the refusal is still there
		 * to read. */
		if (send(fds[i], &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h) && errno != EPIPE) {
			fprintf(stderr, "send: %s\n", strerror(errno));
			exit(1);
		}
		if (vanish)
			close(fds[i]);
	}
	if (vanish) {
		printf("vanished=%d\n", n);
		free(fds);
		if (hold_ms)
			usleep((useconds_t)hold_ms * 1000);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		ssize_t r = recv_timeout(fds[i], buf, sizeof(buf), 10000);
		const struct pmw_header *h = (const void *)buf;
		if (r >= (ssize_t)sizeof(*h) && (h->type == PMW_POLICY || h->type == PMW_NO_POLICY))
			answered++;
		else if (r >= (ssize_t)sizeof(*h) && h->type == PMW_REFUSED)
			refused++;
	}
	printf("answered=%d refused=%d\n", answered, refused);
	if (reports || children) {
		long sent = 0;
		for (int i = 0; i < n; i++) {
			char probe;
			/* Answered and still open: the refused are closed by now. */
			if (recv(fds[i], &probe, 1, MSG_DONTWAIT | MSG_PEEK) == 0)
				continue;
			for (int k = 0; k < reports; k++, sent++)
				send_report(fds[i]);
			for (int k = 0; k < children; k++, sent++) {
				pid_t pid = fork();
				if (pid == 0) {
					send_report(fds[i]);
					_exit(0);
				}
				if (pid > 0)
					waitpid(pid, NULL, 0);
			}
		}
		printf("reports=%ld\n", sent);
	}
	if (hold_ms)
		usleep((useconds_t)hold_ms * 1000);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return answered + refused == n ? 0 : 1;
}

/* Print each PMW_PROTECT received within ms; 0, or 1 on anything else. */
static int wait_protect(int fd, int ms)
{
	static char buf[PMW_MAX_MSG + 1];
	uint64_t end = ms_now() + (uint64_t)ms;
	int ret = 0;

	for (uint64_t now = ms_now(); now < end; now = ms_now()) {
		ssize_t n = recv_timeout(fd, buf, sizeof(buf), (int)(end - now));
		const struct pmw_protect *p = (const void *)buf;

		if (n < 0)
			break;
		if (n == 0) {
			printf("closed\n");
			return 1;
		}
		if (n != (ssize_t)sizeof(*p) || p->h.magic != PMW_MAGIC || p->h.type != PMW_PROTECT ||
		    p->h.length != (uint32_t)n || !memchr(p->pool, '\0', sizeof(p->pool))) {
			printf("unexpected type %u (%zd bytes)\n", n >= 8 ? (unsigned)p->h.type : 0u, n);
			ret = 1;
			continue;
		}
		printf("PROTECT generation=%llu pool=%s\n", (unsigned long long)p->generation, p->pool);
	}
	return ret;
}

/* The parent's exe changed (or can no longer be read: a setuid exec). */
static int parent_execd(const char *self)
{
	char path[64], buf[PMW_PATH];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)getppid());
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return 1;
	buf[n] = '\0';
	return strcmp(buf, self) != 0;
}

/* --exec: see the top.  Returns only on a failed exec. */
static int exec_trick(int fd, const char *prog, const char *arg, int hello_from_child, int hello_then_exec)
{
	char self[PMW_PATH];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	pid_t pid;

	self[n > 0 ? n : 0] = '\0';
	if (!hello_from_child) {
		hello(fd, PMW_VERSION);
		if (!hello_then_exec && print_answer(fd) != 0)
			return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		for (int i = 0; i < 300 && !parent_execd(self); i++)
			usleep(10 * 1000);
		if (hello_from_child)
			hello(fd, PMW_VERSION);
		if ((hello_from_child || hello_then_exec) && print_answer(fd) != 0)
			_exit(1);
		send_report(fd);
		printf("child=%d\n", (int)getpid());
		_exit(0);
	}
	if (fcntl(fd, F_SETFD, 0) < 0) {
		perror("fcntl");
		return 1;
	}
	execl(prog, prog, arg, (char *)NULL);
	perror(prog);
	return 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: wire_client --socket PATH [options]; see the source\n");
	exit(2);
}

int main(int argc, char **argv)
{
	enum { O_SOCKET = 1, O_VERSION, O_BAD, O_SILENT, O_STATUS, O_MANY, O_PROTECT, O_REPORT,
	       O_FORK, O_HOLD, O_POLICY, O_POOL, O_MODE, O_DELAY, O_VANISH, O_FLOOD, O_MODPATH,
	       O_WAITPROT, O_CHILDREN, O_EXEC, O_EXECARG, O_HELLOCHILD, O_HELLOEXEC, O_RULES, O_RULESN,
	       O_KCALL, O_CAUSE, O_COMM, O_HELLOSHORT, O_STATUS_TIMES };
	static const struct option opts[] = {
		{ "socket", 1, NULL, O_SOCKET }, { "version", 1, NULL, O_VERSION },
		{ "garbage", 0, NULL, O_BAD }, { "truncated", 0, NULL, O_BAD },
		{ "oversized", 0, NULL, O_BAD }, { "bad-length", 0, NULL, O_BAD },
		{ "report-first", 0, NULL, O_BAD }, { "fds", 0, NULL, O_BAD },
		{ "comm-unterminated", 0, NULL, O_BAD }, { "comm-short", 0, NULL, O_BAD },
		{ "comm", 1, NULL, O_COMM }, { "hello-short", 0, NULL, O_HELLOSHORT },
		{ "silent", 0, NULL, O_SILENT }, { "status", 0, NULL, O_STATUS },
		{ "many", 1, NULL, O_MANY }, { "protect", 1, NULL, O_PROTECT },
		{ "report", 1, NULL, O_REPORT }, { "fork-report", 0, NULL, O_FORK },
		{ "hold", 1, NULL, O_HOLD }, { "policy", 1, NULL, O_POLICY },
		{ "pool", 1, NULL, O_POOL }, { "mode", 1, NULL, O_MODE },
		{ "delay-ms", 1, NULL, O_DELAY }, { "vanish", 0, NULL, O_VANISH },
		{ "flood", 1, NULL, O_FLOOD }, { "module-path", 1, NULL, O_MODPATH },
		{ "wait-protect", 1, NULL, O_WAITPROT },
		{ "children", 1, NULL, O_CHILDREN }, { "exec", 1, NULL, O_EXEC }, { "exec-arg", 1, NULL, O_EXECARG },
		{ "hello-from-child", 0, NULL, O_HELLOCHILD }, { "hello-then-exec", 0, NULL, O_HELLOEXEC },
		{ "rules", 1, NULL, O_RULES }, { "rules-n", 1, NULL, O_RULESN },
		{ "kernel-call", 1, NULL, O_KCALL }, { "cause", 1, NULL, O_CAUSE },
		{ "status-times", 1, NULL, O_STATUS_TIMES },
		{ NULL, 0, NULL, 0 },
	};
	const char *bad = NULL, *protect = NULL, *exec_prog = NULL, *exec_arg = NULL, *rules = NULL;
	int n_rules = 1;
	int hello_child = 0, hello_exec = 0, n_children = 0;
	int version = PMW_VERSION, silent = 0, status = 0, n_many = 0, n_reports = 0, fork_report = 0;
	int status_times = 0;
	int hold = 0, vanish = 0, flood = 0, wait_prot = 0, c, idx, fd, r;

	while ((c = getopt_long(argc, argv, "", opts, &idx)) >= 0) {
		switch (c) {
		case O_SOCKET: opt_socket = optarg; break;
		case O_VERSION: version = atoi(optarg); break;
		case O_BAD: bad = opts[idx].name; break;
		case O_SILENT: silent = 1; break;
		case O_STATUS: status = 1; break;
		case O_MANY: n_many = atoi(optarg); break;
		case O_PROTECT: protect = optarg; break;
		case O_RULES: rules = optarg; break;
		case O_RULESN: n_rules = atoi(optarg); break;
		case O_REPORT: n_reports = atoi(optarg); break;
		case O_FORK: fork_report = 1; break;
		case O_HOLD: hold = atoi(optarg); break;
		case O_POLICY: opt_policy = optarg; break;
		case O_POOL: opt_pool = optarg; break;
		case O_MODE: opt_audit = !strcmp(optarg, "audit"); break;
		case O_DELAY: opt_delay_ms = atoi(optarg); break;
		case O_VANISH: vanish = 1; break;
		case O_FLOOD: flood = atoi(optarg); break;
		case O_MODPATH: opt_module_path = optarg; break;
		case O_WAITPROT: wait_prot = atoi(optarg); break;
		case O_CHILDREN: n_children = atoi(optarg); break;
		case O_EXEC: exec_prog = optarg; break;
		case O_EXECARG: exec_arg = optarg; break;
		case O_HELLOCHILD: hello_child = 1; break;
		case O_HELLOEXEC: hello_exec = 1; break;
		case O_KCALL: opt_kernel_call = optarg; break;
		case O_CAUSE: opt_cause = atol(optarg); break;
		case O_STATUS_TIMES: status_times = atoi(optarg); break;
		case O_COMM: opt_comm = optarg; break;
		case O_HELLOSHORT: opt_hello_short = 1; break;
		default: usage();
		}
	}
	if (!opt_socket)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid=%d\n", (int)getpid());

	if (status) {
		char self[4096], ctl[4200];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		char *slash;

		if (n <= 0)
			return 1;
		self[n] = '\0';
		slash = strrchr(self, '/');          /* BUILD/progs/wire_client -> BUILD/pmallocctl */
		if (slash)
			*slash = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		snprintf(ctl, sizeof(ctl), "%s/pmallocctl", self);
		fflush(stdout);
		execl(ctl, "pmallocctl", "status", "--socket", opt_socket, (char *)NULL);
		printf("cannot run %s: %s\n", ctl, strerror(errno));
		return 1;
	}
	if (n_many)
		return many(n_many, hold, n_reports, n_children, vanish);
	if (status_times > 0)
		return status_timed(status_times);
	fd = connect_daemon();
	if (silent) {
		uint64_t t0 = ms_now();
		char buf[64];
		ssize_t n = recv_timeout(fd, buf, sizeof(buf), 60000);
		printf(n == 0 ? "closed after %llu ms\n" : "not closed after %llu ms\n",
		       (unsigned long long)(ms_now() - t0));
		return n == 0 ? 0 : 1;
	}
	if (bad) {
		bad_message(fd, bad);
		return 0;
	}
	if (exec_prog)
		return exec_trick(fd, exec_prog, exec_arg, hello_child, hello_exec);
	hello(fd, (uint16_t)version);
	if (vanish)
		return 0;
	r = print_answer(fd);
	if (r != 0)
		return version == PMW_VERSION ? 1 : 0;
	if (protect)
		send_protected(fd, protect);
	for (int i = 0; rules && i < n_rules; i++)
		send_rules(fd, rules);
	for (int i = 0; i < flood; i++)
		send_protected(fd, opt_pool);
	for (int i = 0; i < n_reports; i++) {
		send_report(fd);
		if (opt_delay_ms)
			usleep((useconds_t)opt_delay_ms * 1000);
	}
	if (fork_report) {
		pid_t pid = fork();
		int st;
		if (pid == 0) {
			printf("child=%d\n", (int)getpid());
			send_report(fd);
			usleep(300 * 1000);          /* let the daemon read /proc/PID/exe */
			_exit(0);
		}
		waitpid(pid, &st, 0);
	}
	if (wait_prot) {
		r = wait_protect(fd, wait_prot);
		close(fd);
		return r;
	}
	if (hold)
		usleep((useconds_t)hold * 1000);
	close(fd);
	return 0;
}
