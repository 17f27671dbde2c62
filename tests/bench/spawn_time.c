/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spawn_time - wall time of starting a program, for start-up costs, where a
 * shell's own timing is too coarse.  Output discarded, environment
 * inherited.
 *
 *   spawn_time N CMD [ARGS...]
 *       run CMD N times; print the median wall time of one run (us).
 *   spawn_time --pair N NAME=A NAME=B CMD [ARGS...]
 *       run CMD 2N times, in N pairs: once with NAME=A and once with NAME=B
 *       in its environment, the order swapped every other pair; print
 *       "MEDIAN_A MEDIAN_B MEDIAN_OF_B_MINUS_A" (us).  The difference is
 *       taken within each pair, so what this VM's drift and neighbours do
 *       to one run they do to its partner: the median of the differences
 *       holds steady where the difference of two medians, each over runs
 *       seconds apart, swings by more than the cost measured.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* One run of argv with env ("NAME=VALUE", or NULL) added; its wall time in
 * us, or -1 when it did not exit 0. */
static double run(char **argv, char *env)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 1);
		dup2(fd, 2);
		if (env)
			putenv(env);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "spawn_time: %s failed\n", argv[0]);
		return -1;
	}
	return (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
}

int main(int argc, char **argv)
{
	bool pair = argc > 1 && strcmp(argv[1], "--pair") == 0;
	if (argc < (pair ? 6 : 3))
		return 2;
	int n = atoi(argv[pair ? 2 : 1]);
	char *env_a = pair ? argv[3] : NULL, *env_b = pair ? argv[4] : NULL;
	if (n < 1 || n > 100000 || (pair && (!strchr(env_a, '=') || !strchr(env_b, '='))))
		return 2;
	double *a = calloc((size_t)n, sizeof(*a)), *b = calloc((size_t)n, sizeof(*b));
	double *d = calloc((size_t)n, sizeof(*d));
	if (!a || !b || !d)
		return 1;
	if (!pair) {
		for (int i = 0; i < n; i++)
			if ((a[i] = run(argv + 2, NULL)) < 0)
				return 1;
		printf("%.1f\n", median(a, n));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (i & 1) {
			b[i] = run(argv + 5, env_b);
			a[i] = run(argv + 5, env_a);
		} else {
			a[i] = run(argv + 5, env_a);
			b[i] = run(argv + 5, env_b);
		}
		if (a[i] < 0 || b[i] < 0)
			return 1;
		d[i] = b[i] - a[i];
	}
	double md = median(d, n);
	printf("%.1f %.1f %.1f\n", median(a, n), median(b, n), md);
	return 0;
}
