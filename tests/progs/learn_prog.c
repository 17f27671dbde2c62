/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * learn_prog.c - a small server-shaped program for learn mode: its set-up
 * allocates a configuration (load_config, never written after listen), a
 * counter (make_counter, written by the program after listen) and a buffer
 * (make_buffer, written by the kernel: read(2) after listen).  Then it
 * listens on loopback, works, and exits 0.
 *
 * learn_prog inject: after the work, writes into the configuration (what
 * an attacker would): with that site protected, death by SIGSEGV.
 * learn_prog hold: after the work, prints "ready" and waits for the end
 * of its standard input (pmallocctl learn-flush meanwhile).
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A page of its own (4096 bytes in the pool). */
struct config { char name[4088]; int port; };

__attribute__((noinline)) static struct config *load_config(void)
{
	struct config *c = malloc(sizeof(*c));
	if (c) {
		snprintf(c->name, sizeof(c->name), "learn-prog");
		c->port = 0;
	}
	return c;
}

/* Each on a page of its own: learning marks every site on a written page. */
__attribute__((noinline)) static long *make_counter(void)
{
	return calloc(1, 8192);
}

__attribute__((noinline)) static char *make_buffer(void)
{
	return calloc(1, 8192);
}

int main(int argc, char **argv)
{
	struct config *cfg = load_config();
	long *counter = make_counter();
	char *buf = make_buffer();
	int pfd[2];
	if (!cfg || !counter || !buf || pipe(pfd) < 0)
		return 2;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
		return 2;
	/* The work: the program writes its counter, the kernel the buffer. */
	for (int i = 0; i < 100; i++)
		counter[0]++;
	if (write(pfd[1], "hello", 5) != 5 || read(pfd[0], buf, sizeof(long)) != 5)
		return 3;
	printf("config %s counter %ld buffer %.5s\n", cfg->name, counter[0], buf);
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "inject") == 0)
		cfg->port = 4242;          /* the attacker's write */
	if (argc > 1 && strcmp(argv[1], "hold") == 0) {
		char c;
		printf("ready\n");
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
	}
	close(s);
	return 0;
}
