/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * no_thp - run a program with transparent huge pages refused to it
 * (prctl(PR_SET_THP_DISABLE), inherited across execve), as on a system
 * whose THP mode is "never": the benchmark's way to show what pool memory
 * costs where no huge page maps it.
 *
 *   no_thp PROGRAM [ARG...]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PROGRAM [ARG...]\n", argv[0]);
		return 2;
	}
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) {
		perror("prctl(PR_SET_THP_DISABLE)");
		return 1;
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
