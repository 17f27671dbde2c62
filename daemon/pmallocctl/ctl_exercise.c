/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_exercise.c - pmallocctl exercise UNIT: what an ordinary day does to
 * a running service, done now, while it learns or audits: a reload
 * through the unit's ExecReload, one worker (a child of the main process)
 * killed by SIGKILL and its respawn awaited, a stop through systemd.
 *
 * Owns the steps and their checks: before and after each, the main
 * process is alive, the unit active, and every TCP port the service's
 * processes listen on (their sockets in /proc/PID/fd against
 * /proc/net/tcp and tcp6) takes a connection.  A step that does not apply
 * (no ExecReload, no children) is refused with its reason.  Talks to
 * systemd only through the systemctl program ($PMALLOC_SYSTEMCTL, else
 * "systemctl" on PATH), so that a test can stand in for it.  Kills only
 * the one worker it names, a child of the unit's main process; never
 * writes a file.
 */
#define _GNU_SOURCE
#include "ctl.h"
#include "ctl_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EX_WAIT_MS 10000              /* a step's effect: respawn, stop */
#define EX_PORTS_MAX 32
#define EX_PIDS_MAX 1024
#define EX_CONNECT_MS 2000

struct ex_unit {
	char name[256];
	pid_t main_pid;
	bool has_reload;
	char state[64];
};

struct ex_port {
	bool v6;
	uint16_t port;
	uint8_t addr[16];
};

static const char *systemctl_path(void)
{
	const char *s = getenv("PMALLOC_SYSTEMCTL");
	return s && s[0] ? s : "systemctl";
}

/* Run systemctl with args; its stdout into out (NUL-terminated, may be
 * cut).  The exit status, or -errno. */
static int systemctl(const char *const *args, char *out, size_t len)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		char *argv[8] = { strdup(systemctl_path()) };
		size_t n = 1;
		for (; args[n - 1] && n < 7; n++)
			argv[n] = strdup(args[n - 1]);
		argv[n] = NULL;
		dup2(p[1], STDOUT_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	char chunk[512];
	/* All of it read (the child must not block on a full pipe), what fits kept. */
	while ((r = read(p[0], chunk, sizeof(chunk))) > 0 || (r < 0 && errno == EINTR)) {
		size_t n = r > 0 ? (size_t)r : 0;
		if (out && len && got + 1 < len) {
			size_t room = len - 1 - got;
			memcpy(out + got, chunk, n < room ? n : room);
			got += n < room ? n : room;
		}
	}
	if (out && len)
		out[got] = '\0';
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *show_value(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, n) == 0 && l[n] == '=')
			return l + n + 1;
	return NULL;
}

/* What systemctl show says of the unit now; 0, or -errno / the status. */
static int unit_read(struct ex_unit *u)
{
	char out[8192];
	const char *args[] = { "show", "-p", "MainPID,ExecReload,ActiveState", u->name, NULL };
	int r = systemctl(args, out, sizeof(out));
	if (r != 0)
		return r < 0 ? r : -EIO;
	const char *v = show_value(out, "MainPID");
	u->main_pid = v ? (pid_t)strtol(v, NULL, 10) : 0;
	v = show_value(out, "ExecReload");
	/* Empty, or "{ path=... }" per command. */
	u->has_reload = v && *v && *v != '\n';
	v = show_value(out, "ActiveState");
	snprintf(u->state, sizeof(u->state), "%.*s", v ? (int)strcspn(v, "\n") : 0, v ? v : "");
	return 0;
}

static bool pid_alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The children of pid (every thread's), at most max; their number. */
static size_t children_of(pid_t pid, pid_t *out, size_t max)
{
	char path[64];
	size_t n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.')
			continue;
		char cp[300];
		snprintf(cp, sizeof(cp), "/proc/%d/task/%s/children", (int)pid, de->d_name);
		FILE *f = fopen(cp, "re");
		if (!f)
			continue;
		long c;
		while (n < max && fscanf(f, "%ld", &c) == 1)
			if (pid_alive((pid_t)c))
				out[n++] = (pid_t)c;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* The main process and its descendants. */
static size_t tree_of(pid_t main_pid, pid_t *out, size_t max)
{
	size_t n = 0;
	if (max)
		out[n++] = main_pid;
	for (size_t i = 0; i < n && n < max; i++)
		n += children_of(out[i], out + n, max - n);
	return n;
}

static bool has_inode(const unsigned long *inodes, size_t n, unsigned long ino)
{
	for (size_t i = 0; i < n; i++)
		if (inodes[i] == ino)
			return true;
	return false;
}

/* The TCP ports the processes listen on (state 0A in /proc/net/tcp[6],
 * their socket inodes among the processes' descriptors). */
static size_t listening_ports(const pid_t *pids, size_t n_pids, struct ex_port *ports, size_t max)
{
	unsigned long *inodes = NULL;
	size_t n_inodes = 0, cap = 0, n_ports = 0;
	for (size_t i = 0; i < n_pids; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pids[i]);
		DIR *d = opendir(path);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d))) {
			char lp[600], target[64];
			snprintf(lp, sizeof(lp), "%s/%s", path, de->d_name);
			ssize_t k = readlink(lp, target, sizeof(target) - 1);
			if (k <= 0)
				continue;
			target[k] = '\0';
			unsigned long ino;
			if (sscanf(target, "socket:[%lu]", &ino) != 1)
				continue;
			if (n_inodes == cap) {
				size_t nc = cap ? cap * 2 : 64;
				unsigned long *t = realloc(inodes, nc * sizeof(*t));
				if (!t)
					break;
				inodes = t;
				cap = nc;
			}
			inodes[n_inodes++] = ino;
		}
		closedir(d);
	}
	for (int v6 = 0; v6 < 2; v6++) {
		FILE *f = fopen(v6 ? "/proc/net/tcp6" : "/proc/net/tcp", "re");
		if (!f)
			continue;
		char line[512];
		while (fgets(line, sizeof(line), f) && n_ports < max) {
			char local[64] = { 0 };
			unsigned int port, st;
			unsigned long ino;
			if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*s %*s %lu", local, &port, &st,
				   &ino) != 4 || st != 0x0A || !has_inode(inodes, n_inodes, ino))
				continue;
			struct ex_port *p = &ports[n_ports];
			memset(p, 0, sizeof(*p));
			p->v6 = v6;
			p->port = (uint16_t)port;
			/* /proc prints each 32-bit word in host order. */
			for (int w = 0; w < (v6 ? 4 : 1); w++) {
				char hex[9] = { 0 };
				memcpy(hex, local + 8 * w, 8);
				uint32_t word = (uint32_t)strtoul(hex, NULL, 16);
				memcpy(p->addr + 4 * w, &word, 4);
			}
			bool dup = false;
			for (size_t k = 0; k < n_ports && !dup; k++)
				dup = ports[k].port == p->port && ports[k].v6 == p->v6;
			n_ports += !dup;
		}
		fclose(f);
	}
	free(inodes);
	return n_ports;
}

/* A TCP connection to p (its own address, or loopback for a wildcard). */
static bool port_answers(const struct ex_port *p)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	static const uint8_t zero[16];
	if (p->v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(p->port);
		if (memcmp(p->addr, zero, 16) == 0)
			a->sin6_addr = in6addr_loopback;
		else
			memcpy(&a->sin6_addr, p->addr, 16);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(p->port);
		memcpy(&a->sin_addr, p->addr, 4);
		if (a->sin_addr.s_addr == 0)
			a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	bool ok = connect(fd, (struct sockaddr *)&ss, len) == 0;
	if (!ok && errno == EINPROGRESS) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		int err = 0;
		socklen_t el = sizeof(err);
		ok = poll(&pfd, 1, EX_CONNECT_MS) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0;
	}
	close(fd);
	return ok;
}

static void put_port(FILE *f, const struct ex_port *p)
{
	char a[INET6_ADDRSTRLEN];
	inet_ntop(p->v6 ? AF_INET6 : AF_INET, p->addr, a, sizeof(a));
	fprintf(f, p->v6 ? "[%s]:%u" : "%s:%u", a, p->port);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The unit active, its main process alive, each of the ports answering;
 * waits up to EX_WAIT_MS for it (a reload takes a moment).  Says what it
 * found; true when all holds. */
static bool check(struct ex_unit *u, const struct ex_port *ports, size_t n_ports, const char *step)
{
	bool ok = false;
	size_t failed_port = 0;
	for (long waited = 0; waited <= EX_WAIT_MS && !ok; waited += 100) {
		if (waited)
			sleep_ms(100);
		if (unit_read(u) < 0)
			continue;
		ok = strcmp(u->state, "active") == 0 && u->main_pid > 0 && pid_alive(u->main_pid);
		for (size_t i = 0; i < n_ports && ok; i++)
			if (!port_answers(&ports[i])) {
				ok = false;
				failed_port = i + 1;
			}
	}
	if (ok) {
		printf("  check: %s active, main PID %d alive", u->name, (int)u->main_pid);
		for (size_t i = 0; i < n_ports; i++) {
			fputs(i ? ", " : "; answers on ", stdout);
			put_port(stdout, &ports[i]);
		}
		putchar('\n');
		return true;
	}
	fprintf(stderr, CTL_NAME ": exercise: %s: check failed: %s is %s, main PID %d %s", step, u->name,
		u->state[0] ? u->state : "unknown", (int)u->main_pid,
		u->main_pid > 0 && pid_alive(u->main_pid) ? "alive" : "gone");
	if (failed_port) {
		fputs(", no answer on ", stderr);
		put_port(stderr, &ports[failed_port - 1]);
	}
	fputc('\n', stderr);
	return false;
}

static int step_reload(struct ex_unit *u, const struct ex_port *ports, size_t n_ports)
{
	printf("reload: systemctl reload %s (its ExecReload)\n", u->name);
	fflush(stdout);
	const char *args[] = { "reload", u->name, NULL };
	int r = systemctl(args, NULL, 0);
	if (r != 0) {
		fprintf(stderr, CTL_NAME ": exercise: reload: systemctl reload %s failed (%s %d)\n", u->name,
			r < 0 ? "error" : "status", r < 0 ? -r : r);
		return CTL_EXIT_FAILURE;
	}
	return check(u, ports, n_ports, "reload") ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

/* When pid started (clock ticks after boot: /proc/PID/stat's field 22);
 * 0 when it cannot be read. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	unsigned long long t = 0;
	/* After the name: state (field 3) ... starttime (field 22). */
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		t = strtoull(p + 1, NULL, 10);
	return t;
}

static int step_respawn(struct ex_unit *u, const struct ex_port *ports, size_t n_ports)
{
	pid_t kids[EX_PIDS_MAX], now[EX_PIDS_MAX];
	size_t n = children_of(u->main_pid, kids, EX_PIDS_MAX);
	/* The youngest child: after a reload the older ones may be the last
	 * generation's workers, finishing their requests before they exit,
	 * which the main process does not respawn. */
	pid_t victim = kids[0];
	unsigned long long youngest = start_time(victim);
	for (size_t i = 1; i < n; i++) {
		unsigned long long t = start_time(kids[i]);
		if (t > youngest) {
			youngest = t;
			victim = kids[i];
		}
	}
	printf("respawn: worker PID %d (a child of main PID %d) killed by SIGKILL\n", (int)victim, (int)u->main_pid);
	fflush(stdout);
	if (kill(victim, SIGKILL) < 0) {
		fprintf(stderr, CTL_NAME ": exercise: respawn: cannot kill PID %d: %s\n", (int)victim, strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	/* Respawned: the victim gone and a new child (not as many as before:
	 * the last generation's workers may exit meanwhile). */
	for (long waited = 0; waited <= EX_WAIT_MS; waited += 50) {
		size_t m = children_of(u->main_pid, now, EX_PIDS_MAX);
		bool gone = true, fresh = false;
		for (size_t i = 0; i < m; i++) {
			gone &= now[i] != victim;
			bool old = false;
			for (size_t k = 0; k < n && !old; k++)
				old = now[i] == kids[k];
			fresh |= !old;
		}
		if (gone && fresh) {
			for (size_t i = 0; i < m; i++) {
				bool old = false;
				for (size_t k = 0; k < n && !old; k++)
					old = now[i] == kids[k];
				if (!old) {
					printf("  respawned: worker PID %d\n", (int)now[i]);
					break;
				}
			}
			return check(u, ports, n_ports, "respawn") ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
		}
		if (!pid_alive(u->main_pid))
			break;
		sleep_ms(50);
	}
	fprintf(stderr, CTL_NAME ": exercise: respawn: no new worker of main PID %d within %d s\n", (int)u->main_pid,
		EX_WAIT_MS / 1000);
	check(u, ports, n_ports, "respawn");
	return CTL_EXIT_FAILURE;
}

static int step_stop(struct ex_unit *u)
{
	pid_t main_pid = u->main_pid;
	printf("stop: systemctl stop %s\n", u->name);
	fflush(stdout);
	const char *args[] = { "stop", u->name, NULL };
	int r = systemctl(args, NULL, 0);
	if (r != 0) {
		fprintf(stderr, CTL_NAME ": exercise: stop: systemctl stop %s failed (%s %d)\n", u->name,
			r < 0 ? "error" : "status", r < 0 ? -r : r);
		return CTL_EXIT_FAILURE;
	}
	for (long waited = 0; waited <= EX_WAIT_MS; waited += 50) {
		if (!pid_alive(main_pid) && unit_read(u) == 0 && strcmp(u->state, "active") != 0) {
			printf("  check: %s %s, main PID %d gone\n", u->name, u->state, (int)main_pid);
			return CTL_EXIT_OK;
		}
		sleep_ms(50);
	}
	fprintf(stderr, CTL_NAME ": exercise: stop: check failed: %s is %s, main PID %d %s\n", u->name,
		u->state[0] ? u->state : "unknown", (int)main_pid, pid_alive(main_pid) ? "alive" : "gone");
	return CTL_EXIT_FAILURE;
}

enum { EX_RELOAD = 1, EX_RESPAWN = 2, EX_STOP = 4 };

int ctl_cmd_exercise(int argc, char **argv)
{
	unsigned int asked = 0;
	int c, ret;
	opterr = 0;
	while ((c = ctl_getopt(argc, argv, "exercise", &ret)) != -1) {
		switch (c) {
		case CTL_OPT_RELOAD:
			asked |= EX_RELOAD;
			break;
		case CTL_OPT_RESPAWN:
			asked |= EX_RESPAWN;
			break;
		case CTL_OPT_STOP:
			asked |= EX_STOP;
			break;
		}
	}
	if (ret >= 0)
		return ret;
	if (optind >= argc)
		return ctl_usage_error("a UNIT is required", NULL);
	if (optind + 1 < argc)
		return ctl_usage_error("unexpected argument", argv[optind + 1]);
	const char *arg = argv[optind];
	struct ex_unit u = { 0 };
	if (strchr(arg, '/') ||
	    snprintf(u.name, sizeof(u.name), "%s%s", arg, strchr(arg, '.') ? "" : ".service") >= (int)sizeof(u.name))
		return ctl_usage_error("not a unit name:", arg);
	int r = unit_read(&u);
	if (r < 0) {
		fprintf(stderr, CTL_NAME ": exercise: systemctl show %s: %s\n", u.name,
			r == -EIO ? "failed" : strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	if (strcmp(u.state, "active") != 0 || u.main_pid <= 0 || !pid_alive(u.main_pid)) {
		fprintf(stderr, CTL_NAME ": exercise: %s is not running (%s, main PID %d): start it first\n", u.name,
			u.state[0] ? u.state : "unknown", (int)u.main_pid);
		return CTL_EXIT_FAILURE;
	}
	pid_t pids[EX_PIDS_MAX], kids[1];
	struct ex_port ports[EX_PORTS_MAX];
	size_t n_pids = tree_of(u.main_pid, pids, EX_PIDS_MAX);
	size_t n_ports = listening_ports(pids, n_pids, ports, EX_PORTS_MAX);
	printf("%s: main PID %d, %zu processes, listening on %zu TCP ports\n", u.name, (int)u.main_pid, n_pids,
	       n_ports);
	if (!check(&u, ports, n_ports, "start"))
		return CTL_EXIT_FAILURE;

	unsigned int todo = asked ? asked : EX_RELOAD | EX_RESPAWN | EX_STOP;
	int status = CTL_EXIT_OK;
	if (todo & EX_RELOAD) {
		if (!u.has_reload) {
			printf("reload: refused: %s has no ExecReload\n", u.name);
			if (asked & EX_RELOAD)
				status = CTL_EXIT_FAILURE;
		} else if (step_reload(&u, ports, n_ports) != CTL_EXIT_OK) {
			return CTL_EXIT_FAILURE;
		}
	}
	if (todo & EX_RESPAWN) {
		if (children_of(u.main_pid, kids, 1) == 0) {
			printf("respawn: refused: the main process (PID %d) has no children (no workers to kill)\n",
			       (int)u.main_pid);
			if (asked & EX_RESPAWN)
				status = CTL_EXIT_FAILURE;
		} else if (step_respawn(&u, ports, n_ports) != CTL_EXIT_OK) {
			return CTL_EXIT_FAILURE;
		}
	}
	if ((todo & EX_STOP) && step_stop(&u) != CTL_EXIT_OK)
		return CTL_EXIT_FAILURE;
	if (status == CTL_EXIT_OK)
		printf("exercise: done\n");
	return status;
}
