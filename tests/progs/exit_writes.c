/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exit_writes - a program whose clean-up writes its start-up state:
 * setup() builds it with malloc(), listen() (the policy's trigger) makes
 * it read-only, then the program ends as argv[1] says:
 *   return   an atexit handler writes the state, main returns 0
 *   exit     the same, through exit(0) called from a function
 *   destroy  a destructor of the program writes the state, main returns 0
 *   write    main itself writes the state (the control: a real violation)
 *   thread   another thread writes the state while main's exit runs its
 *            atexit handler (enforced: not the exiting thread)
 * Prints "cleaned N" from the last handler to run, so a test sees the
 * clean-up ran to its end.  Knows nothing of pmalloc.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct state {
	char name[32];
	int users;
};

static struct state *st;
static int destroy_mode;

__attribute__((noinline)) static struct state *setup(void)
{
	struct state *s = malloc(sizeof(*s));
	if (!s)
		exit(2);
	strcpy(s->name, "alice");
	s->users = 1;
	return s;
}

/* The writes: volatile, so the compiler keeps the stores. */
__attribute__((noinline)) static void release(volatile struct state *s)
{
	s->users = 0;
	s->name[0] = '\0';
}

static void at_exit_release(void)
{
	release(st);
	printf("cleaned %d\n", st->users);
	fflush(stdout);
}

__attribute__((destructor)) static void destroy(void)
{
	if (!destroy_mode)
		return;
	release(st);
	printf("cleaned %d\n", st->users);
	fflush(stdout);
}

static void *writer(void *arg)
{
	(void)arg;
	sleep(1);                        /* main is in exit by then */
	release(st);
	return NULL;
}

static void at_exit_wait(void)
{
	sleep(3);                        /* the writer writes meanwhile */
	printf("cleaned %d\n", st->users);
}

__attribute__((noinline)) static void leave(void)
{
	exit(0);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "return";
	st = setup();
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		perror("listen");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	if (strcmp(how, "write") == 0) {
		release(st);
		return 0;
	}
	if (strcmp(how, "destroy") == 0) {
		destroy_mode = 1;
		return 0;
	}
	if (strcmp(how, "thread") == 0) {
		pthread_t t;
		atexit(at_exit_wait);
		if (pthread_create(&t, NULL, writer, NULL) != 0)
			return 2;
		return 0;
	}
	atexit(at_exit_release);
	if (strcmp(how, "exit") == 0)
		leave();
	return 0;
}
