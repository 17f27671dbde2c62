/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_fork - the on-call:fork trigger: make_state()'s object is read-only
 * before the child runs, in both processes; a write kills whichever
 * process makes it, and the child's report names the child.
 *
 *   ip_fork          child and parent report and exit 0
 *   ip_fork write    the child writes (dies), then the parent writes (dies)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog.h"

STRING_SITE(make_state, 32, "state: ready")

int main(int argc, char **argv)
{
	int write_it = argc > 1 && strcmp(argv[1], "write") == 0;
	char *s = make_state();
	printf("parent %d: protected %d before fork\n", (int)getpid(), is_protected(s));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		/* The first thing the child does. */
		int prot = is_protected(s);
		printf("child %d: protected %d\n", (int)getpid(), prot);
		fflush(stdout);
		if (write_it)
			corrupt(s + 3, 'X');
		_exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 2;
	if (WIFSIGNALED(status))
		printf("child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
	else
		printf("child %d exited %d\n", (int)pid, WEXITSTATUS(status));
	printf("parent: protected %d\n", is_protected(s));
	fflush(stdout);
	if (write_it)
		corrupt(s + 4, 'Y');
	printf("parent: done\n");
	return 0;
}
