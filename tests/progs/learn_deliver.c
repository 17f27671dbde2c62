/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * learn_deliver - a server-shaped program driven by its standard input,
 * for the delivery of learned entries while a process runs: its set-up
 * allocates a configuration (make_config, never written) and a counter
 * (make_counter, a page of its own), then listens on loopback (a policy's
 * trigger), prints "ready" and obeys one command a line, answering "ok":
 *   write         writes the counter
 *   chroot DIR    chroot(2) into DIR (and chdir("/")): /proc and the
 *                 journal's socket are gone from its view
 *   setuid UID    drops to UID (setgid too)
 *   exec PATH     execve(PATH) (no "ok": PATH's output instead)
 *   closefds      closes every descriptor but 0, 1 and 2 (as daemons do)
 *   poll          poll(2) with nothing to wait for (a server's event loop
 *                 between two requests)
 *   many          allocates 256 objects from 256 allocation contexts (a
 *                 chain of four calls, each of four functions: within the
 *                 16 frames a context is told by)
 *   exit          exits 0 (so does the end of its input)
 * Knows nothing of pmalloc.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

__attribute__((noinline)) static char *make_config(void)
{
	char *c = malloc(256);
	if (c)
		snprintf(c, 256, "learn-deliver");
	return c;
}

__attribute__((noinline)) static long *make_counter(void)
{
	return calloc(1, 4096);
}

/* One object per path through four levels of four functions (fork_0 ..
 * fork_3, two bits of the path each): 256 allocation contexts, told
 * apart within 9 frames (kept: the program never frees them). */
__attribute__((noinline)) static void *fork_next(unsigned path, int depth);

#define FORK(k) \
	__attribute__((noinline)) static void *fork_##k(unsigned path, int depth) \
	{ \
		void *p = fork_next(path, depth); \
		__asm__ volatile("" : : "r"(p) : "memory");   /* no tail call: a frame of its own */ \
		return p; \
	}
FORK(0)
FORK(1)
FORK(2)
FORK(3)

__attribute__((noinline)) static void *fork_next(unsigned path, int depth)
{
	if (depth == 0)
		return malloc(32);
	switch (path & 3) {
	case 0: return fork_0(path >> 2, depth - 1);
	case 1: return fork_1(path >> 2, depth - 1);
	case 2: return fork_2(path >> 2, depth - 1);
	default: return fork_3(path >> 2, depth - 1);
	}
}

int main(void)
{
	char *cfg = make_config();
	long *counter = make_counter();
	char line[512];
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (!cfg || !counter || s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
		return 2;
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("ready %s\n", cfg);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "write") == 0) {
			counter[0]++;
		} else if (strncmp(line, "chroot ", 7) == 0) {
			if (chroot(line + 7) < 0 || chdir("/") < 0) {
				perror("chroot");
				return 3;
			}
		} else if (strncmp(line, "setuid ", 7) == 0) {
			unsigned id = (unsigned)atoi(line + 7);
			if (setgid(id) < 0 || setuid(id) < 0) {
				perror("setuid");
				return 3;
			}
		} else if (strncmp(line, "exec ", 5) == 0) {
			char *args[] = { line + 5, NULL };
			execve(line + 5, args, environ);
			perror("execve");
			return 3;
		} else if (strcmp(line, "closefds") == 0) {
			for (int fd = 3; fd < 1024; fd++)
				close(fd);
		} else if (strcmp(line, "poll") == 0) {
			poll(NULL, 0, 0);
		} else if (strcmp(line, "many") == 0) {
			static void *kept[256];
			for (unsigned path = 0; path < 256; path++)
				if (!(kept[path] = fork_next(path, 4)))
					return 2;
		} else if (strcmp(line, "exit") == 0) {
			break;
		}
		printf("ok\n");
	}
	return 0;
}
