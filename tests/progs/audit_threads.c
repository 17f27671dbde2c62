/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audit_threads - writes to protected pool memory from threads and from
 * hostile contexts, for audit/enforce tests.  make_config() is the site,
 * listen() the trigger.
 *
 *   audit_threads blocked      a thread that blocks every signal writes two
 *                              bytes of a protected object
 *   audit_threads threads T W  T threads write W distinct bytes each (every
 *                              other byte, so each write is its own run)
 *                              of objects that share one page
 *   audit_threads memset N K   N memsets of a K KiB protected object
 *   audit_threads corrupt-fp   a write made with the frame pointer pointing
 *                              at unmapped memory (the stack walk faults)
 * Each prints what it did and exits 0 when it gets to the end.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

static void *blocked_writer(void *arg)
{
	char *s = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	corrupt(s, 'S');
	corrupt(s + 1, 'E');
	return NULL;
}

static int blocked(void)
{
	char *s = make_config(32);
	strcpy(s, "secret");
	listen_once();
	pthread_t t;
	if (pthread_create(&t, NULL, blocked_writer, s) != 0)
		return 4;
	pthread_join(t, NULL);
	printf("after the writes: %s\n", s);
	return 0;
}

struct writer {
	char *base;
	int writes;
	pthread_barrier_t *go;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	pthread_barrier_wait(w->go);
	for (int i = 0; i < w->writes; i++)
		corrupt(w->base + 2 * i, (char)(1 + i % 100));
	return NULL;
}

static int threads(int n, int writes)
{
	if (n < 1 || n > 16 || writes < 1 || writes > 1000)
		return 5;
	/* One object holds every thread's bytes: they share its pages. */
	size_t region = ((size_t)writes * 2 + 63) & ~(size_t)63;
	char *obj = make_config(region * (size_t)n);
	listen_once();
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, (unsigned)n);
	pthread_t t[16];
	struct writer w[16];
	for (int i = 0; i < n; i++) {
		w[i] = (struct writer){ obj + region * (size_t)i, writes, &go };
		if (pthread_create(&t[i], NULL, writer_main, &w[i]) != 0)
			return 4;
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	int seen = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < writes; k++)
			seen += obj[region * (size_t)i + 2 * (size_t)k] == (char)(1 + k % 100);
	printf("%d threads wrote %d bytes; %d are there\n", n, n * writes, seen);
	return 0;
}

static int memsets(int n, int kib)
{
	if (n < 1 || kib < 1 || kib > 1024)
		return 5;
	size_t len = (size_t)kib * 1024;
	char *obj = make_config(len);
	listen_once();
	for (int i = 0; i < n; i++)
		memset(obj, 'a' + i % 26, len);
	printf("%d memsets of %zu bytes: last byte %c\n", n, len, obj[len - 1]);
	return 0;
}

/* The store, with rbp pointing at unmapped memory: the unwinder finds this
 * frame's CFA through rbp (-O0 code keeps a frame pointer) and faults. */
static __attribute__((noinline)) void write_with_corrupt_fp(char *p)
{
	__asm__ volatile("mov %%rbp, %%r12\n\t"
			 "mov %1, %%rbp\n\t"
			 "movb $88, (%0)\n\t"
			 "mov %%r12, %%rbp"
			 :
			 : "r"(p), "r"((uintptr_t)0x10)
			 : "r12", "memory");
}

static int corrupt_fp(void)
{
	char *s = make_config(32);
	strcpy(s, "secret");
	listen_once();
	write_with_corrupt_fp(s);
	printf("after the write: %s\n", s);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(mode, "blocked") == 0)
		return blocked();
	if (strcmp(mode, "threads") == 0 && argc == 4)
		return threads(atoi(argv[2]), atoi(argv[3]));
	if (strcmp(mode, "memset") == 0 && argc == 4)
		return memsets(atoi(argv[2]), atoi(argv[3]));
	if (strcmp(mode, "corrupt-fp") == 0)
		return corrupt_fp();
	fprintf(stderr, "usage: audit_threads blocked|threads T W|memset N K|corrupt-fp\n");
	return 1;
}
