/*
 * spawn_time N CMD [ARGS...] - run CMD N times (environment inherited,
 * output discarded) and print the median wall time of one run in
 * microseconds.  For start-up costs, where a shell's own timing is too
 * coarse.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int n = atoi(argv[1]);
	if (n < 1 || n > 100000)
		return 2;
	double *t = calloc((size_t)n, sizeof(*t));
	for (int i = 0; i < n; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		pid_t pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_RDWR);
			dup2(fd, 1);
			dup2(fd, 2);
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		int st;
		waitpid(pid, &st, 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "spawn_time: %s failed\n", argv[2]);
			return 1;
		}
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%.1f\n", t[n / 2]);
	return 0;
}
