/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * life_server - a small pre-forking TCP server with a service's day, shaped
 * like nginx: start-up builds a configuration (load_config, built again
 * at each reload), a table (load_types, built once) and a cache
 * (init_cache), all only read while serving; listen() on 127.0.0.1 (port
 * 0: the kernel chooses); the port goes to PORTFILE and the pid to
 * PIDFILE; then WORKERS children wait in ppoll() and accept connections,
 * each a line:
 *   "get\n"  answers the configuration's name and a type (reads only)
 *   "set\n"  writes the cache (the path a learn load never sent), answers "set"
 *   "who\n"  looks up a user and a service that exist nowhere (answers "who"):
 *            the C library loads the name-service modules the start-up's
 *            lookup (load_config: its user, as nginx's) did not need, and
 *            writes their records, which it allocated at that lookup
 * The master waits for signals in sigsuspend(): it respawns a worker that
 * dies; SIGHUP rebuilds the configuration (a reload); SIGTERM stops the
 * workers (each exits 0) and exits 0.  Knows nothing of pmalloc.
 *   life_server PORTFILE PIDFILE [WORKERS]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define WORKERS_MAX 8

struct config {
	char name[64];
	int workers;
	uid_t user;
};

struct cache {
	char last[64];
	long sets;
};

static struct config *config;
static struct cache *cache;
static char **types;
static volatile sig_atomic_t hup, term;

NOINLINE static struct config *load_config(void)
{
	struct config *c = malloc(sizeof(*c));
	if (!c)
		exit(2);
	snprintf(c->name, sizeof(c->name), "life");
	c->workers = 2;
	struct passwd *pw = getpwnam("root");
	c->user = pw ? pw->pw_uid : 0;
	return c;
}

NOINLINE static char **load_types(void)
{
	static const char *const names[] = { "text/html", "text/plain", "image/png", NULL };
	char **t = malloc(sizeof(names));
	if (!t)
		exit(2);
	for (size_t i = 0; names[i]; i++)
		t[i] = strdup(names[i]);
	t[3] = NULL;
	return t;
}

NOINLINE static struct cache *init_cache(void)
{
	struct cache *c = malloc(sizeof(*c));
	if (!c)
		exit(2);
	memset(c, 0, sizeof(*c));
	return c;
}

NOINLINE static void cache_set(struct cache *c, const char *v)
{
	snprintf(c->last, sizeof(c->last), "%s", v);
	c->sets++;
}

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hup = 1;
	else if (sig == SIGTERM)
		term = 1;
}

/* SIGTERM stays blocked but in ppoll(), which takes it with the wait: a
 * TERM between the look at term and a plain poll() left the worker in it
 * for good, and the master waiting for it.  The listening socket is
 * non-blocking (as nginx's): both workers wake for one connection, and
 * the one that finds it taken must come back here, not wait in accept()
 * with SIGTERM blocked. */
static void serve(int lfd)
{
	sigset_t waiting;
	sigemptyset(&waiting);
	while (!term) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		if (ppoll(&p, 1, NULL, &waiting) <= 0)
			continue;                /* EINTR: term is looked at */
		int fd = accept(lfd, NULL, NULL);    /* a blocking socket, the listener's flag not inherited */
		if (fd < 0)
			continue;                /* EAGAIN: the other worker took it */
		char buf[64];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			char reply[96];
			if (strncmp(buf, "set", 3) == 0) {
				cache_set(cache, "x");
				snprintf(reply, sizeof(reply), "set\n");
			} else if (strncmp(buf, "who", 3) == 0) {
				(void)getpwnam("pmalloc-no-such-user");
				(void)getservbyname("pmalloc-no-such-service", "tcp");
				snprintf(reply, sizeof(reply), "who\n");
			} else {
				snprintf(reply, sizeof(reply), "%s %s\n", config->name, types[0]);
			}
			(void)!write(fd, reply, strlen(reply));
		}
		close(fd);
	}
	exit(0);
}

static pid_t spawn(int lfd)
{
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t term_only;
		sigemptyset(&term_only);
		sigaddset(&term_only, SIGTERM);
		signal(SIGHUP, SIG_IGN);
		signal(SIGCHLD, SIG_DFL);
		sigprocmask(SIG_SETMASK, &term_only, NULL);   /* taken in ppoll() only */
		serve(lfd);
	}
	return pid;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int n = argc > 3 ? atoi(argv[3]) : 2;
	if (n < 1 || n > WORKERS_MAX)
		n = 2;
	config = load_config();
	types = load_types();
	cache = init_cache();
	struct sigaction sa = { .sa_handler = on_signal };     /* no SA_RESTART: poll wakes */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);    /* taken in sigsuspend() only */
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 64) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &len) < 0)
		return 1;
	pid_t workers[WORKERS_MAX];
	for (int i = 0; i < n; i++)
		workers[i] = spawn(lfd);
	FILE *f = fopen(argv[2], "w");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	f = fopen(argv[1], "w");
	if (f) {
		fprintf(f, "%u\n", ntohs(a.sin_port));
		fclose(f);
	}
	while (!term) {
		sigsuspend(&old);
		if (hup) {
			hup = 0;
			config = load_config();  /* a reload: the configuration built again */
		}
		pid_t dead;
		while ((dead = waitpid(-1, NULL, WNOHANG)) > 0)
			for (int i = 0; i < n && !term; i++)
				if (workers[i] == dead)
					workers[i] = spawn(lfd);
	}
	for (int i = 0; i < n; i++)
		if (workers[i] > 0)      /* a fork that failed: never kill(-1) */
			kill(workers[i], SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}
