/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daemon_clients - load for the pmallocd benchmark (tests/bench/daemon).
 *
 *   daemon_clients run SOCKET THREADS MS MODE [DAEMON_PID [SINK_PID]]
 *       THREADS clients start at once (a barrier) and, for MS milliseconds,
 *       each repeats one exchange with pmallocd on SOCKET, a new connection
 *       every time, as a starting process does:
 *         policy    connect, PMW_HELLO, receive PMW_POLICY, close
 *         nopolicy  connect, PMW_HELLO, receive PMW_NO_POLICY, close
 *         refused   connect, PMW_HELLO of protocol version 0, receive
 *                   PMW_REFUSED, close: the daemon's cheapest answer (no
 *                   identification, matching, policy text or journal
 *                   entry), the floor of a round trip through its loop
 *       The process names itself "dc-MODE" first (comm), which the bench's
 *       policy matches on, and says so in its HELLO as the shim does.
 *       Prints one line:
 *         EXCHANGES_PER_S ERRORS P50_US P99_US MAX_US OVER_100MS EXCHANGES
 *         [DAEMON_CPU_US LOOP_CPU_US OTHER_CPU_US CLIENT_CPU_US IDLE_PCT
 *          SINK_CPU_US LOOP_PREEMPTED]
 *       (latency of one whole exchange; OVER_100MS: exchanges slower than
 *       the shim's handshake timeout, whose process would have fallen back;
 *       DAEMON_CPU_US, given DAEMON_PID: the CPU time, user and system, that
 *       process spent per exchange over the run, from /proc/PID/stat - what
 *       an exchange costs the daemon, however busy the machine is; then
 *       that of its main thread, the event loop, and of its other threads
 *       together, from /proc/PID/task/PID/stat; then what the exchange
 *       cost these clients, from getrusage(); the share of the machine's
 *       CPU time left idle over the run, from /proc/stat (0: every core was
 *       busy, the rate is what the CPU allows); and the CPU time of
 *       SINK_PID per exchange, the journal stand-in below, 0 without it;
 *       and how often the main thread was switched out while it could
 *       run, per exchange: nonvoluntary_ctxt_switches of
 *       /proc/PID/task/PID/status).
 *   daemon_clients sink PATH
 *       A journald stand-in: binds a SOCK_DGRAM socket at PATH and discards
 *       what arrives; prints "ready"; exits when standard input closes.
 */
#define _GNU_SOURCE
#include "../../common/proto/wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BUCKET_US 10                   /* latency histogram: 10 us buckets ... */
#define BUCKETS 100000                 /* ... up to 1 s, then one overflow bucket */

enum mode { MODE_POLICY, MODE_NOPOLICY, MODE_REFUSED };

struct worker {
	pthread_t thread;
	unsigned long done, errors;
	unsigned int *hist;              /* BUCKETS + 1 */
	uint64_t max_ns;
};

static struct sockaddr_un addr = { .sun_family = AF_UNIX };
static enum mode mode;
static uint64_t deadline_ns;
static pthread_barrier_t start;

/* utime + stime of pid (all its threads), or of its thread tid when tid
 * > 0, in clock ticks; -1 when unknown. */
static long long cpu_ticks(long pid, long tid)
{
	char path[96], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%ld/task/%ld/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');       /* comm may hold spaces: fields resume after it */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (long long)(ut + st);
}

/* The involuntary context switches of thread tid of pid (switched out
 * while it could run: preempted), or -1 when unknown. */
static long long preempted(long pid, long tid)
{
	char path[96], line[128];
	long long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/status", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "nonvoluntary_ctxt_switches: %lld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Idle and total jiffies of all cores, from /proc/stat ("cpu" line);
 * false when unreadable. */
static bool cpu_idle(unsigned long long *ret_idle, unsigned long long *ret_total)
{
	unsigned long long v[10] = { 0 }, t = 0;
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return false;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	fclose(f);
	if (n < 5)
		return false;
	for (int i = 0; i < 8; i++)          /* guest time is in user time already */
		t += v[i];
	*ret_idle = v[3] + v[4];             /* idle, iowait */
	*ret_total = t;
	return true;
}

static double rusage_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One exchange; 0 when the answer is the one this mode expects. */
static char hello_comm[PMW_COMM];

static int exchange(void)
{
	static _Thread_local char buf[PMW_MAX_MSG + 1];
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct timeval tv = { .tv_sec = 2 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int r = -1;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		goto out;
	struct pmw_hello hello = { 0 };
	pmw_header_init(&hello.h, PMW_HELLO, sizeof(hello));
	hello.flags = PMW_HELLO_COMM;    /* as the shim: its comm, read once at start */
	memcpy(hello.comm, hello_comm, sizeof(hello.comm));
	if (mode == MODE_REFUSED)
		hello.h.version = 0;
	if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello))
		goto out;
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	const struct pmw_header *h = (const void *)buf;
	if (n < (ssize_t)sizeof(*h) || h->magic != PMW_MAGIC || h->length != (uint32_t)n)
		goto out;
	switch (mode) {
	case MODE_POLICY:
		r = h->type == PMW_POLICY && n > (ssize_t)sizeof(struct pmw_policy) ? 0 : -1;
		break;
	case MODE_NOPOLICY:
		r = h->type == PMW_NO_POLICY && n == (ssize_t)sizeof(struct pmw_answer) ? 0 : -1;
		break;
	case MODE_REFUSED:
		r = h->type == PMW_REFUSED && n == (ssize_t)sizeof(struct pmw_answer) ? 0 : -1;
		break;
	}
out:
	close(fd);
	return r;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	pthread_barrier_wait(&start);
	for (;;) {
		uint64_t t0 = now_ns();
		if (t0 >= deadline_ns)
			break;
		int r = exchange();
		uint64_t dt = now_ns() - t0;
		if (r < 0) {
			w->errors++;
			continue;
		}
		w->done++;
		uint64_t b = dt / 1000u / BUCKET_US;
		w->hist[b < BUCKETS ? b : BUCKETS]++;
		if (dt > w->max_ns)
			w->max_ns = dt;
	}
	return NULL;
}

/* The latency (us) below which fraction q of the exchanges fall. */
static double quantile(const unsigned long *hist, unsigned long total, double q)
{
	unsigned long want = (unsigned long)((double)total * q), seen = 0;
	for (size_t b = 0; b <= BUCKETS; b++) {
		seen += hist[b];
		if (seen > want)
			return (double)((b + 1) * BUCKET_US);
	}
	return (double)(BUCKETS * BUCKET_US);
}

static int run(int argc, char **argv)
{
	if (argc < 6 || argc > 8 || strlen(argv[2]) >= sizeof(addr.sun_path))
		return 2;
	long daemon_pid = argc >= 7 ? atol(argv[6]) : 0, sink_pid = argc == 8 ? atol(argv[7]) : 0;
	strcpy(addr.sun_path, argv[2]);
	int threads = atoi(argv[3]), ms = atoi(argv[4]);
	if (threads < 1 || threads > 4096 || ms < 1)
		return 2;
	if (strcmp(argv[5], "policy") == 0)
		mode = MODE_POLICY;
	else if (strcmp(argv[5], "nopolicy") == 0)
		mode = MODE_NOPOLICY;
	else if (strcmp(argv[5], "refused") == 0)
		mode = MODE_REFUSED;
	else
		return 2;
	char comm[16];
	snprintf(comm, sizeof(comm), "dc-%s", argv[5]);
	prctl(PR_SET_NAME, comm);
	prctl(PR_GET_NAME, hello_comm);  /* what the shim reads from /proc/self/comm */

	struct worker *w = calloc((size_t)threads, sizeof(*w));
	unsigned long *hist = calloc(BUCKETS + 1, sizeof(*hist));
	if (!w || !hist)
		return 1;
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		w[i].hist = calloc(BUCKETS + 1, sizeof(*w[i].hist));
		if (!w[i].hist || pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) {
			fprintf(stderr, "daemon_clients: cannot start client %d\n", i);
			return 1;
		}
	}
	long long cpu0 = daemon_pid > 0 ? cpu_ticks(daemon_pid, 0) : -1;
	long long loop0 = daemon_pid > 0 ? cpu_ticks(daemon_pid, daemon_pid) : -1;
	long long sink0 = sink_pid > 0 ? cpu_ticks(sink_pid, 0) : -1;
	long long pre0 = daemon_pid > 0 ? preempted(daemon_pid, daemon_pid) : -1;
	unsigned long long idle0 = 0, total0 = 0, idle1 = 0, total1 = 0;
	bool have_idle = cpu_idle(&idle0, &total0);
	double self0 = rusage_us();
	uint64_t t0 = now_ns();
	deadline_ns = t0 + (uint64_t)ms * 1000000u;
	pthread_barrier_wait(&start);
	unsigned long done = 0, errors = 0;
	uint64_t max_ns = 0;
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].thread, NULL);
	/* The run's end: before the histograms are summed (this thread's
	 * work, not the exchanges'). */
	double secs = (double)(now_ns() - t0) / 1e9;
	long long cpu1 = cpu0 >= 0 ? cpu_ticks(daemon_pid, 0) : -1;
	long long loop1 = loop0 >= 0 ? cpu_ticks(daemon_pid, daemon_pid) : -1;
	long long sink1 = sink0 >= 0 ? cpu_ticks(sink_pid, 0) : -1;
	long long pre1 = pre0 >= 0 ? preempted(daemon_pid, daemon_pid) : -1;
	double self1 = rusage_us();
	have_idle = have_idle && cpu_idle(&idle1, &total1) && total1 > total0;
	for (int i = 0; i < threads; i++) {
		done += w[i].done;
		errors += w[i].errors;
		if (w[i].max_ns > max_ns)
			max_ns = w[i].max_ns;
		for (size_t b = 0; b <= BUCKETS; b++)
			hist[b] += w[i].hist[b];
	}
	unsigned long over = 0;
	for (size_t b = 100000 / BUCKET_US; b <= BUCKETS; b++)
		over += hist[b];
	printf("%.0f %lu %.0f %.0f %.0f %lu %lu", (double)done / secs, errors, quantile(hist, done, 0.5),
	       quantile(hist, done, 0.99), (double)max_ns / 1e3, over, done);
	if (cpu0 >= 0 && cpu1 >= 0 && loop0 >= 0 && loop1 >= 0 && done > 0) {
		double per = 1e6 / (double)sysconf(_SC_CLK_TCK) / (double)done;

		printf(" %.1f %.1f %.1f", (double)(cpu1 - cpu0) * per, (double)(loop1 - loop0) * per,
		       (double)((cpu1 - cpu0) - (loop1 - loop0)) * per);
		printf(" %.1f %.1f %.1f", (self1 - self0) / (double)done,
		       have_idle ? 100.0 * (double)(idle1 - idle0) / (double)(total1 - total0) : 0.0,
		       sink0 >= 0 && sink1 >= 0 ? (double)(sink1 - sink0) * per : 0.0);
		printf(" %.2f", pre0 >= 0 && pre1 >= pre0 ? (double)(pre1 - pre0) / (double)done : 0.0);
	}
	printf("\n");
	return 0;
}

static int sink(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (argc != 3 || strlen(argv[2]) >= sizeof(sa.sun_path))
		return 2;
	strcpy(sa.sun_path, argv[2]);
	unlink(argv[2]);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("daemon_clients sink");
		return 2;
	}
	int big = 8 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	printf("ready\n");
	fflush(stdout);
	static char buf[1 << 16];
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = 0, .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 2;
		if (p[0].revents & POLLIN)
			while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
				;
		if (p[1].revents && read(0, buf, sizeof(buf)) <= 0)
			break;
	}
	unlink(argv[2]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "run") == 0)
		return run(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "sink") == 0)
		return sink(argc, argv);
	fprintf(stderr, "usage: daemon_clients run SOCKET THREADS MS policy|nopolicy|refused [DAEMON_PID [SINK_PID]]\n"
			"       daemon_clients sink PATH\n");
	return 2;
}
