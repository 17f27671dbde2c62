/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * learn_server.c - a small server-shaped program for learning without
 * knowing the program: every allocation goes through one wrapper
 * (xmalloc, and xstrdup on top of it), so the function that called malloc
 * is always the same and only the call chain tells the allocations apart.
 *
 * Start-up: reads a configuration (two sections, from a text kept here)
 * into entries through nested functions (read_config -> parse_section ->
 * parse_entry -> xmalloc / xstrdup -> xmalloc), freeing a scratch line per
 * entry; between the two sections it allocates a stats block (init_stats)
 * and an I/O buffer (init_io), so in one bump allocator they would share
 * pages with configuration entries.  Then it serves REQUESTS requests that
 * a thread of its own sends over a socketpair: epoll_wait, recv(2) into the
 * I/O buffer (a kernel write), the stats block counted (a program write),
 * a reply built in a buffer allocated per request (make_reply: allocating
 * while serving) and freed.  The configuration is only read after start-up.
 * Prints "served N requests, config ENTRIES entries, port P" and exits 0.
 *
 * learn_server inject: after serving, writes into a configuration value
 * (what an attacker would): with its context protected, death by SIGSEGV.
 * learn_server stop: after serving, forks a child that waits on a pipe;
 * then gets SIGTERM in a handler of its own (as a server being stopped),
 * lets the child go, and both free their configuration before they exit
 * (the child told only by the pipe, as nginx's workers by their channel).
 * learn_server fork: after serving, forks a child that exits at once (a
 * worker of the same run), and waits for it.
 * learn_server race: a thread started before the configuration is read
 * waits (epoll_wait) at a time that varies from run to run, while the main
 * thread fills a table it allocated, 20 ms after allocating it: the
 * on-wait trigger must not fire on that thread's wait (the table would be
 * protected before it is filled in one run and not in another).
 * learn_server reload [inject]: SIGHUP (sent by the client thread after
 * requests 1 and 3) re-reads the configuration on the main thread, as
 * nginx's master does: the resolver state allocated at start-up is
 * written (as glibc's NSS state is when nginx looks its user up again),
 * the old configuration freed and a new one read.  inject: then writes
 * into the new configuration (death by SIGSEGV when it is protected).
 * learn_server softstop [TURNS]: after serving, stops as haproxy's old
 * worker does when its master reloads: SIGUSR1 (sent to the main thread
 * while it waits, by a thread of its own) interrupts its epoll_wait; it
 * writes its handler record (allocated at start-up: the stop's first
 * work), makes TURNS more turns of its loop (epoll_wait, timeout 0; 1 by
 * default: haproxy's worker makes one or two, as its other thread
 * acknowledges the stop sooner or later), then writes its resolver state
 * (as haproxy's deinit() writes its other signal records) and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQUESTS 5
#define NOINLINE __attribute__((noinline))

struct entry {
	char *key;
	char *value;
	struct entry *next;
};

struct stats {
	long requests;
	long bytes;
};

static const char *const section_a[] = {
	"listen = 8080", "server_name = learn.example", "root = /srv/learn", "index = index.html",
	"workers = 4", "keepalive = 65", "log = /var/log/learn.log", "user = www-data",
};
static const char *const section_b[] = {
	"upstream = 127.0.0.1:9000", "timeout = 30", "buffer = 16k", "gzip = on",
	"charset = utf-8", "expires = 1h", "tls = off", "cache = /var/cache/learn",
};

NOINLINE static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fputs("out of memory\n", stderr);
		exit(2);
	}
	return p;
}

NOINLINE static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

NOINLINE static struct entry *parse_entry(const char *line)
{
	/* A scratch copy, freed before the trigger: counted as freed. */
	char *scratch = xstrdup(line);
	char *eq = strchr(scratch, '=');
	struct entry *e = xmalloc(sizeof(*e));
	if (eq) {
		*eq = '\0';
		eq[-1] = eq[-1] == ' ' ? '\0' : eq[-1];
	}
	e->key = xstrdup(scratch);
	e->value = xstrdup(eq ? eq + 2 : "");
	e->next = NULL;
	free(scratch);
	return e;
}

NOINLINE static struct entry *parse_section(const char *const *lines, size_t n, struct entry *list)
{
	for (size_t i = 0; i < n; i++) {
		struct entry *e = parse_entry(lines[i]);
		e->next = list;
		list = e;
	}
	return list;
}

NOINLINE static struct entry *read_config(const char *const *lines, size_t n, struct entry *list)
{
	return parse_section(lines, n, list);
}

NOINLINE static struct stats *init_stats(void)
{
	struct stats *s = xmalloc(sizeof(*s));
	memset(s, 0, sizeof(*s));
	return s;
}

NOINLINE static char *init_io(size_t n)
{
	return xmalloc(n);
}

/* The resolver's state, allocated at start-up, written at each lookup
 * (start-up, then each reload). */
struct resolver {
	long lookups;
	char user[32];
};

NOINLINE static struct resolver *init_resolver(void)
{
	struct resolver *r = xmalloc(sizeof(*r));
	memset(r, 0, sizeof(*r));
	return r;
}

NOINLINE static void lookup_user(struct resolver *r, const char *user)
{
	r->lookups++;
	snprintf(r->user, sizeof(r->user), "%s", user);
}

/* race: a table allocated, then filled 20 ms later. */
struct table {
	int slot[64];
};

NOINLINE static struct table *init_table(void)
{
	return xmalloc(sizeof(struct table));
}

static void *early_waiter(void *arg)
{
	int delay_ms = *(int *)arg;
	struct timespec ts = { 0, (long)delay_ms * 1000000L };
	nanosleep(&ts, NULL);
	int ep = epoll_create1(0);
	struct epoll_event got;
	epoll_wait(ep, &got, 1, 0);
	close(ep);
	return NULL;
}

NOINLINE static char *make_reply(const char *req, long n)
{
	char *r = xmalloc(64);
	snprintf(r, 64, "ok %ld %.8s", n, req);
	return r;
}

/* softstop: the record of the stop signal's handler, allocated at
 * start-up, written when the stop begins. */
struct handler_rec {
	int sig;
	int gone;
};

NOINLINE static struct handler_rec *init_handler_rec(int sig)
{
	struct handler_rec *h = xmalloc(sizeof(*h));
	h->sig = sig;
	h->gone = 0;
	return h;
}

static volatile sig_atomic_t terminated, reload_asked, stop_asked;
static int reload_pipe[2] = { -1, -1 };

static void on_hup(int sig)
{
	int e = errno;
	(void)sig;
	reload_asked = 1;
	if (write(reload_pipe[1], "", 1) < 0) {
		/* the flag is enough */
	}
	errno = e;
}

static void on_term(int sig)
{
	(void)sig;
	terminated = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	stop_asked = 1;
}

/* softstop: SIGUSR1 to the main thread (tid: the process id) once it
 * sleeps in epoll_wait (its wchan, up to 10 s: a busy machine), so that
 * the signal interrupts the wait (EINTR), as haproxy's worker is told. */
static void *stopper(void *arg)
{
	(void)arg;
	char path[64], wchan[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", (int)getpid());
	for (int k = 0; k < 1000; k++) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(wchan, 1, sizeof(wchan) - 1, f) : 0;
		if (f)
			fclose(f);
		wchan[n] = '\0';
		if (strcmp(wchan, "do_epoll_wait") == 0)
			break;
	}
	syscall(SYS_tgkill, getpid(), getpid(), SIGUSR1);
	return NULL;
}

/* softstop: the stop, as haproxy's old worker makes it. */
static int soft_stop(struct handler_rec *rec, struct resolver *res, int turns)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	int idle[2];
	if (pipe(idle) < 0 || sigaction(SIGUSR1, &sa, NULL) < 0)
		return 6;
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = idle[0] };
	pthread_t t;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, idle[0], &ev) < 0 || pthread_create(&t, NULL, stopper, NULL) != 0)
		return 6;
	struct epoll_event got;
	if (epoll_wait(ep, &got, 1, 5000) != -1 || errno != EINTR || !stop_asked)
		return 6;
	rec->gone = 1;                   /* its handler unregistered */
	for (int k = 0; k < turns; k++)
		if (epoll_wait(ep, &got, 1, 0) != 0)
			return 6;
	lookup_user(res, "stopped");     /* deinit() */
	pthread_join(t, NULL);
	return 0;
}

static void free_config(struct entry *e)
{
	while (e) {
		struct entry *next = e->next;
		free(e->key);
		free(e->value);
		free(e);
		e = next;
	}
}

static const char *lookup(const struct entry *e, const char *key)
{
	for (; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e->value;
	return "";
}

static bool reloading;

static void *client(void *arg)
{
	int fd = *(int *)arg;
	char reply[64];
	for (int i = 0; i < REQUESTS; i++) {
		char req[32];
		int n = snprintf(req, sizeof(req), "GET /%d", i);
		if (send(fd, req, (size_t)n, 0) != n || recv(fd, reply, sizeof(reply), 0) <= 0)
			break;
		if (reloading && (i == 1 || i == 3)) {
			kill(getpid(), SIGHUP);
			/* The next request after the reload is done. */
			struct timespec ts = { 0, 50 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	shutdown(fd, SHUT_WR);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	reloading = strcmp(mode, "reload") == 0;
	if (strcmp(mode, "race") == 0) {
		/* The other thread waits between 0 and 40 ms from now. */
		static int delay_ms;
		delay_ms = (int)(getpid() % 41);
		pthread_t w;
		struct table *tab = init_table();
		if (pthread_create(&w, NULL, early_waiter, &delay_ms) != 0)
			return 2;
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
		for (int i = 0; i < 64; i++)
			tab->slot[i] = i;
		pthread_join(w, NULL);
	}
	struct resolver *res = init_resolver();
	lookup_user(res, "www-data");
	struct handler_rec *rec = strcmp(mode, "softstop") == 0 ? init_handler_rec(SIGUSR1) : NULL;
	struct entry *cfg = read_config(section_a, sizeof(section_a) / sizeof(section_a[0]), NULL);
	struct stats *stats = init_stats();
	char *io = init_io(512);
	cfg = read_config(section_b, sizeof(section_b) / sizeof(section_b[0]), cfg);
	long reloads = 0;
	if (reloading) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_hup;
		if (pipe(reload_pipe) < 0 || sigaction(SIGHUP, &sa, NULL) < 0)
			return 2;
	}

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return 2;
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = sv[0] };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev) < 0)
		return 2;
	struct epoll_event pev = { .events = EPOLLIN, .data.fd = reload_pipe[0] };
	if (reloading && epoll_ctl(ep, EPOLL_CTL_ADD, reload_pipe[0], &pev) < 0)
		return 2;
	pthread_t t;
	if (pthread_create(&t, NULL, client, &sv[1]) != 0)
		return 2;
	/* The event loop: its first epoll_wait is the on-wait trigger. */
	for (;;) {
		struct epoll_event got;
		int r = epoll_wait(ep, &got, 1, 5000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 1)
			return 3;
		if (reload_asked) {
			/* The reload, on the main thread: the resolver state
			 * written, the old configuration freed, a new one read. */
			reload_asked = 0;
			lookup_user(res, "www-data");
			free_config(cfg);
			cfg = read_config(section_a, sizeof(section_a) / sizeof(section_a[0]), NULL);
			cfg = read_config(section_b, sizeof(section_b) / sizeof(section_b[0]), cfg);
			reloads++;
		}
		if (reloading && got.data.fd == reload_pipe[0]) {
			char c;
			if (read(reload_pipe[0], &c, 1) < 0)
				return 3;
			continue;
		}
		ssize_t n = recv(sv[0], io, 511, 0);
		if (n <= 0)
			break;
		io[n] = '\0';
		stats->requests++;
		stats->bytes += n;
		char *reply = make_reply(io, stats->requests);
		if (send(sv[0], reply, strlen(reply), 0) < 0)
			return 3;
		free(reply);
	}
	pthread_join(t, NULL);
	int entries = 0;
	for (const struct entry *e = cfg; e; e = e->next)
		entries++;
	printf("served %ld requests, config %d entries, port %s", stats->requests, entries, lookup(cfg, "listen"));
	if (reloading)
		printf(", %ld reloads, %ld lookups", reloads, res->lookups);
	printf("\n");
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		pid_t child = fork();
		if (child == 0)
			exit(0);
		int status;
		if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
			return 4;
	}
	if (rec)
		return soft_stop(rec, res, argc > 2 ? atoi(argv[2]) : 1);
	if (argc > 1 && strcmp(argv[1], "stop") == 0) {
		int go[2];
		char c = 0;
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_term;
		if (pipe(go) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
			return 5;
		pid_t child = fork();
		if (child == 0) {
			if (read(go[0], &c, 1) != 1)
				_exit(5);
			free_config(cfg);
			exit(0);
		}
		raise(SIGTERM);
		int status;
		if (child < 0 || !terminated || write(go[1], &c, 1) != 1 || waitpid(child, &status, 0) != child ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			return 5;
		free_config(cfg);
	}
	if ((argc > 1 && strcmp(argv[1], "inject") == 0) || (argc > 2 && strcmp(argv[2], "inject") == 0)) {
		char *v = cfg->value;        /* the last entry's value, read-only if protected */
		v[0] = 'X';
		printf("injected\n");
	}
	return 0;
}
