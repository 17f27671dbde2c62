/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wait_reader - a program whose main thread never makes a wait call: it
 * builds its configuration in setup() (e2e_victim.h), prints "ready", then
 * reads its commands from standard input with read(2) (no stdio, no
 * poll), one a line:
 *   threads  print "threads N", the entries of /proc/self/task
 *   write    overwrite the configuration's name, as a heap bug would,
 *            and print "wrote"
 *   thread   start a thread that sleeps for ever, print "started"
 *   poll     a wait call (poll(2) on nothing), print "polled"
 *   alloc    setup() again (an allocation from the site), print "allocated"
 *   write-last  overwrite the name of what alloc made last, print "wrote"
 *   exit     exit 0 (so does end of input)
 * SIGHUP is handled (a reload's signal: the handler only counts it).
 * With THREADED=1 in its environment it starts that thread before setup.
 * Knows nothing of pmalloc.
 */
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e_victim.h"

static volatile sig_atomic_t hups;

static void on_hup(int sig)
{
	(void)sig;
	hups++;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void start_thread(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, sleeper, NULL) != 0)
		exit(2);
}

static int threads(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void say(const char *text)
{
	size_t len = strlen(text);
	if (write(1, text, len) != (ssize_t)len)
		exit(2);
}

int main(void)
{
	const char *threaded = getenv("THREADED");
	if (threaded && strcmp(threaded, "1") == 0)
		start_thread();
	signal(SIGHUP, on_hup);
	struct config *c = setup(), *last = c;
	say("ready\n");
	char line[64];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(0, line + have, sizeof(line) - 1 - have);
		if (n <= 0)
			return 0;
		have += (size_t)n;
		line[have] = '\0';
		char *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			char out[64];
			if (strcmp(line, "threads") == 0) {
				snprintf(out, sizeof(out), "threads %d\n", threads());
				say(out);
			} else if (strcmp(line, "write") == 0) {
				corrupt(c->name, 'm');
				say("wrote\n");
			} else if (strcmp(line, "thread") == 0) {
				start_thread();
				say("started\n");
			} else if (strcmp(line, "poll") == 0) {
				poll(NULL, 0, 0);
				say("polled\n");
			} else if (strcmp(line, "alloc") == 0) {
				if (!(last = setup()))
					return 2;
				say("allocated\n");
			} else if (strcmp(line, "write-last") == 0) {
				corrupt(last->name, 'm');
				say("wrote\n");
			} else if (strcmp(line, "exit") == 0) {
				return 0;
			}
			have -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, have + 1);
		}
		if (have == sizeof(line) - 1)
			have = 0;
	}
}
