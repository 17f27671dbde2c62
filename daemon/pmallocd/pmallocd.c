/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pmallocd.c - the policy daemon: command line, start-up order, the
 * sd-event loop, signals, sd_notify, reloads.
 *
 * Owns: struct manager and the order of start-up: journal socket, policy
 * file, listening socket, the "policy loaded" entry, the server's worker
 * thread (server_start()), then the sandbox (over both threads), then
 * READY=1.  SIGHUP swaps in a new policy set only when the file is
 * good (the old one stays otherwise); SIGTERM/SIGINT stop cleanly with
 * exit 0, whatever journald does.
 * Never: handles a signal in a handler (sd-event's signalfd does it), or
 * serves a client before the sandbox is up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "policy.h"
#include "config.h"
#include "journal.h"
#include "jwriter.h"
#include "log.h"
#include "match_cache.h"
#include "manager.h"
#include "sandbox.h"
#include "paths.h"
#include "server.h"
#include "status.h"
#include "symbolize.h"

#define DEFAULT_CONFIG POLICY_DEFAULT_FILE
#define DEFAULT_SOCKET POLICY_DEFAULT_SOCKET

struct args {
	const char *config;
	const char *socket;
	const char *subuid;
	bool check;
	bool test_sandbox;
	bool debug;
};

static void help(void)
{
	printf("Usage: pmallocd [--config FILE] [--socket PATH]\n"
	       "       pmallocd --check [--config FILE]\n"
	       "\n"
	       "The pmalloc policy daemon: hands each preloaded process (libpmalloc_shim.so) the\n"
	       "policy that matches it and logs the violations processes report to the journal.\n"
	       "Runs in the foreground (systemd Type=notify, or socket-activated). SIGHUP reloads\n"
	       "the policy file, keeping the old policy if the new file is refused; SIGTERM stops.\n"
	       "\n"
	       "  -c, --config FILE   policy file (default " DEFAULT_CONFIG ")\n"
	       "  -s, --socket PATH   socket to listen on (default: the socket passed by systemd,\n"
	       "                      else daemon.socket of the policy file, " DEFAULT_SOCKET ")\n"
	       "      --check         validate the policy file: exit 0, or print FILE:LINE: message\n"
	       "                      and exit 1\n"
	       "      --subuid FILE   subordinate uid ranges: their uids count as their owner\n"
	       "                      for the per-user limits (default " PERSON_SUBUID_FILE ")\n"
	       "      --debug         log debug messages\n"
	       "      --test-sandbox  test aid: start up, enter the seccomp sandbox, then make a\n"
	       "                      forbidden system call (ptrace); the daemon must die by SIGSYS\n"
	       "  -h, --help          this text\n"
	       "  -V, --version       the version\n"
	       "\n"
	       "Exit status: 0 stopped cleanly (or --check: the file is valid), 1 failure (or\n"
	       "--check: the file is refused), 2 usage error.  See pmallocd(8).\n");
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { OPT_CHECK = 0x100, OPT_TEST_SANDBOX, OPT_DEBUG, OPT_SUBUID };
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "test-sandbox", no_argument, NULL, OPT_TEST_SANDBOX },
		{ "debug", no_argument, NULL, OPT_DEBUG },
		{ "subuid", required_argument, NULL, OPT_SUBUID },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	a->config = DEFAULT_CONFIG;
	a->subuid = PERSON_SUBUID_FILE;
	while ((c = getopt_long(argc, argv, "c:s:hV", options, NULL)) >= 0) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 's':
			a->socket = optarg;
			break;
		case OPT_CHECK:
			a->check = true;
			break;
		case OPT_TEST_SANDBOX:
			a->test_sandbox = true;
			break;
		case OPT_DEBUG:
			a->debug = true;
			break;
		case OPT_SUBUID:
			a->subuid = optarg;
			break;
		case 'h':
			help();
			exit(EXIT_SUCCESS);
		case 'V':
			printf("pmallocd " PMALLOC_VERSION "\n");
			exit(EXIT_SUCCESS);
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pmallocd: unexpected argument: %s\n", argv[optind]);
		return -EINVAL;
	}
	if (a->check && (a->socket || a->test_sandbox)) {
		fprintf(stderr, "pmallocd: --check takes only --config\n");
		return -EINVAL;
	}
	return 0;
}

static uint64_t monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* Root refuses a policy file others could have written. */
static bool check_owner(void)
{
	return geteuid() == 0;
}

static int run_check(const struct args *a)
{
	char err[POLICY_ERR_MAX];
	struct config *c;
	int r;

	r = config_read(a->config, check_owner(), &c, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return r;
	}
	config_free(c);
	return 0;
}

static void notify_ready(const struct manager *m)
{
	(void)sd_notifyf(false, "READY=1\nSTATUS=Serving %s, generation %" PRIu64 " (%zu %s) on %s",
			 m->config_path, m->config->generation, m->config->set->n_policies,
			 m->config->set->n_policies == 1 ? "policy" : "policies",
			 server_socket_path(m->server));
}

/* The subordinate uid ranges (person.h); on failure the ones read before stay. */
static void load_persons(struct manager *m)
{
	size_t skipped = 0;
	int r = persons_load(&m->persons, m->subuid_path, PERSON_PASSWD_FILE, &skipped);

	if (r < 0)
		log_warning_errno(r, "cannot read %s, keeping the subordinate uid ranges read before: %m",
				  m->subuid_path);
	else if (skipped > 0)
		log_warning("%s: %zu lines not understood (or past %d ranges), ignored", m->subuid_path,
			    skipped, PERSON_RANGES_MAX);
}

static int on_sighup(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;
	char err[POLICY_ERR_MAX];
	struct config *c;
	int r;

	(void)src;
	(void)si;
	(void)sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading %s",
			 monotonic_usec(), m->config_path);

	load_persons(m);
	r = config_read(m->config_path, check_owner(), &c, err, sizeof(err));
	if (r < 0) {
		m->reloads_refused++;
		journal_policy_refused(m->config_path, err, m->config->generation, false);
		if (log_to_stderr())             /* the journal has the entry already */
			fprintf(stderr, "pmallocd: reload refused, keeping generation %" PRIu64 ": %s\n",
				m->config->generation, err);
	} else {
		const char *old_sock = m->config->set->daemon.socket, *new_sock = c->set->daemon.socket;

		c->generation = m->config->generation + 1;
		if (old_sock && new_sock && strcmp(old_sock, new_sock) != 0)
			log_notice("daemon.socket changed to %s: takes effect on restart", new_sock);
		config_free(m->config);
		m->config = c;
		(void)sd_event_now(m->event, CLOCK_MONOTONIC, &m->config_loaded_usec);
		journal_policy_loaded(m->config_path, c->generation, c->set, false);
		log_debug("reloaded %s: generation %" PRIu64, m->config_path, c->generation);
	}
	notify_ready(m);
	return 0;
}

static int on_stop(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	(void)src;
	log_debug("signal %u: stopping", si->ssi_signo);
	(void)sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
	return sd_event_exit(m->event, 0);
}

/* Each served process holds a connection: allow as many as the hard limit. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warning_errno(errno, "cannot raise RLIMIT_NOFILE: %m");
}

static int setup_signals(struct manager *m)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT };
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&mask, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return log_error_errno(errno, "sigprocmask: %m");
	signal(SIGPIPE, SIG_IGN);

	r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGTERM, on_stop, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGINT, on_stop, m);
	if (r < 0)
		return log_error_errno(r, "cannot watch signals: %m");
	return 0;
}

/* The event loop and what it watches before the policy is read: the
 * journal socket, the signals, systemd's watchdog; and the start time. */
static int setup_event(struct manager *m)
{
	int r = sd_event_default(&m->event);

	if (r < 0)
		return log_error_errno(r, "sd_event_default: %m");
	r = jwriter_attach(m->event);
	if (r < 0)
		log_warning_errno(r, "cannot watch the journal socket: %m");
	r = setup_signals(m);
	if (r < 0)
		return r;
	(void)sd_event_set_watchdog(m->event, true);
	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &m->start_usec);
	return 0;
}

/* --socket, else the socket systemd passed, else daemon.socket. */
static int open_socket(struct manager *m, const struct args *a)
{
	const char *path = a->socket;
	int n, fd = -1;

	n = sd_listen_fds(1);
	if (n < 0)
		return log_error_errno(n, "socket activation: %m");
	if (n > 1)
		return log_error_errno(EINVAL, "socket activation passed %d sockets, expected one", n);
	if (n == 1) {
		if (path) {
			log_notice("--socket %s given: ignoring the socket passed by systemd", path);
			close(SD_LISTEN_FDS_START);
		} else
			fd = SD_LISTEN_FDS_START;
	}
	if (!path && fd < 0)
		path = m->config->set->daemon.socket ? m->config->set->daemon.socket : DEFAULT_SOCKET;
	return server_open(m, path, fd, &m->server);
}

static int run(const struct args *a)
{
	struct manager m = { .config_path = a->config, .subuid_path = a->subuid, .render_status = status_render };
	char err[POLICY_ERR_MAX];
	int r, exit_code = 0;
	size_t left;

	/* No network lookups for debug info, ever (libdw honours this). */
	unsetenv("DEBUGINFOD_URLS");
	/* Before anything logs, and before the sandbox: the sandbox lets this
	 * one descriptor connect() again when journald comes back. */
	r = jwriter_open();
	if (r < 0)
		log_warning_errno(r, "cannot open a socket to the journal, entries are lost: %m");
	raise_nofile();
	registry_init(&m.registry);
	load_persons(&m);

	r = setup_event(&m);
	if (r < 0)
		goto out;

	r = config_read(a->config, check_owner(), &m.config, err, sizeof(err));
	if (r < 0) {
		journal_policy_refused(a->config, err, 0, true);
		log_error("cannot start: %s", err);
		goto out;
	}
	m.config->generation = 1;
	m.config_loaded_usec = m.start_usec;

	r = open_socket(&m, a);
	if (r < 0)
		goto out;
	/* Bound first: a client may connect while the entry is on its way. */
	journal_policy_loaded(a->config, 1, m.config->set, true);
	r = symbolizer_new(&m.symbolizer);
	if (r < 0) {
		log_error_errno(r, "cannot set up symbolization: %m");
		goto out;
	}
	r = server_start(m.server);
	if (r < 0)
		goto out;

	r = sandbox_apply(jwriter_fd());
	if (r < 0)
		goto out;
	if (a->test_sandbox) {
		/* Must not return: the filter kills the process with SIGSYS. */
		long rr = syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL);
		r = log_error_errno(EPERM, "--test-sandbox: ptrace returned %ld: the sandbox is not working", rr);
		goto out;
	}

	notify_ready(&m);
	log_debug("serving on %s", server_socket_path(m.server));
	r = sd_event_loop(m.event);
	if (r < 0)
		log_error_errno(r, "event loop failed: %m");
	else
		exit_code = r;
out:
	server_free(m.server);
	match_cache_done();
	registry_done(&m.registry);
	symbolizer_free(m.symbolizer);
	persons_free(&m.persons);
	config_free(m.config);
	left = jwriter_close();
	if (left > 0 && log_to_stderr())
		fprintf(stderr, "pmallocd: %zu journal %s not written: journald took none before exit\n",
			left, left == 1 ? "entry" : "entries");
	sd_event_unref(m.event);
	if (r < 0)
		return r;
	return exit_code == 0 ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };

	if (parse_args(argc, argv, &a) < 0) {
		fprintf(stderr, "Try 'pmallocd --help'.\n");
		return 2;                    /* usage, as pmallocctl */
	}
	log_setup();
	if (a.debug)
		log_set_max_level(LOG_DEBUG);
	if (a.check)
		return run_check(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	return run(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
