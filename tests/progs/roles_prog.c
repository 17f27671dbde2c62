/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * roles_prog - a master and its worker, each writing a different start-up
 * object once it serves: make_config() builds what both only read,
 * make_master() what the master writes once it listens, make_worker()
 * what the worker writes once it waits.  The master forks the worker
 * before its own trigger (as nginx's master does), listens, writes its
 * object, and waits for the worker; the worker polls (its trigger), writes
 * its object and exits.  Each object is 4096 bytes (a page of its own).
 *   roles_prog        as above; prints "master done" (and "worker done")
 *   roles_prog deep   the worker also forks a grandchild (a role learning
 *                     never saw) that polls, then writes the configuration;
 *                     prints "grandchild done" when it lived
 *   roles_prog inject the worker, after its trigger, writes the master's
 *                     object (safe in the worker's role: protected there)
 * Knows nothing of pmalloc.
 */
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define OBJ 4096

__attribute__((noinline)) static char *make_config(void)
{
	char *p = malloc(OBJ);
	if (!p)
		exit(2);
	strcpy(p, "config");
	return p;
}

__attribute__((noinline)) static char *make_master(void)
{
	char *p = malloc(OBJ);
	if (!p)
		exit(2);
	memset(p, 0, OBJ);
	return p;
}

__attribute__((noinline)) static char *make_worker(void)
{
	char *p = malloc(OBJ);
	if (!p)
		exit(2);
	memset(p, 0, OBJ);
	return p;
}

/* The writes: volatile, so the compiler keeps the stores. */
static void put(volatile char *where, char what)
{
	*where = what;
}

static int wait_child(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	char *config = make_config(), *master = make_master(), *worker = make_worker();
	fflush(stdout);
	pid_t w = fork();
	if (w < 0)
		return 2;
	if (w == 0) {
		poll(NULL, 0, 10);               /* the worker's trigger */
		put(worker, 'w');
		if (strcmp(how, "inject") == 0)
			put(master, 'x');
		if (strcmp(how, "deep") == 0) {
			fflush(stdout);
			pid_t g = fork();
			if (g == 0) {
				poll(NULL, 0, 10);
				put(config, 'g');
				printf("grandchild done\n");
				return 0;
			}
			if (wait_child(g) != 0)
				return 3;
		}
		printf("worker done %c\n", config[0]);
		return 0;
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		return 2;
	put(master, 'm');
	int r = wait_child(w);
	printf("master done, worker %d\n", r);
	return r == 0 ? 0 : 1;
}
