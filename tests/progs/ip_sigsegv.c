/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_sigsegv - a program with its own SIGSEGV handler: a NULL dereference
 * still reaches it (it siglongjmps and prints "handled"), while a write to
 * a protected pool object still ends the process with the shim's report.
 *
 *   ip_sigsegv sigaction     handler installed with sigaction() in main
 *   ip_sigsegv signal        handler installed with signal() in main
 *   ip_sigsegv early         handler installed by libip_sigfirst.so's
 *                            constructor, before the shim's (preload it)
 *   ip_sigsegv resethand     SA_RESETHAND handler that returns: the second
 *                            fault of the same instruction takes the
 *                            default action (killed, handler ran once)
 *   ip_sigsegv nodefer       SA_NODEFER handler left with longjmp (no mask
 *                            restore): a second fault reaches it again
 * then, in the first three modes, a write into make_secret()'s protected
 * object, after listen().
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

static sigjmp_buf env;
static jmp_buf plain_env;
static volatile sig_atomic_t hits;

/* A NULL dereference the compiler cannot prove or drop. */
static volatile char *volatile null_ptr;

static int deref_null(void)
{
	return *null_ptr;
}

static void on_segv_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	hits++;
	siglongjmp(env, 1);
}

static void on_segv_plain(int sig)
{
	(void)sig;
	hits++;
	siglongjmp(env, 1);
}

static void on_segv_return(int sig)
{
	(void)sig;
	hits++;
	static const char msg[] = "resethand handler\n";
	write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	if (hits > 1) {
		static const char again[] = "handler called again\n";
		write(STDOUT_FILENO, again, sizeof(again) - 1);
		_exit(3);
	}
}

static void on_segv_longjmp(int sig)
{
	(void)sig;
	hits++;
	longjmp(plain_env, 1);
}

STRING_SITE(make_secret, 48, "the secret")

static int install(const char *mode)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (strcmp(mode, "sigaction") == 0) {
		sa.sa_sigaction = on_segv_info;
		sa.sa_flags = SA_SIGINFO;
		return sigaction(SIGSEGV, &sa, NULL);
	}
	if (strcmp(mode, "signal") == 0)
		return signal(SIGSEGV, on_segv_plain) == SIG_ERR ? -1 : 0;
	if (strcmp(mode, "resethand") == 0) {
		sa.sa_handler = on_segv_return;
		sa.sa_flags = SA_RESETHAND;
		return sigaction(SIGSEGV, &sa, NULL);
	}
	if (strcmp(mode, "nodefer") == 0) {
		sa.sa_handler = on_segv_longjmp;
		sa.sa_flags = SA_NODEFER;
		return sigaction(SIGSEGV, &sa, NULL);
	}
	if (strcmp(mode, "early") == 0) {
		sigjmp_buf **hook = dlsym(RTLD_DEFAULT, "ip_sigfirst_env");
		int *before = dlsym(RTLD_DEFAULT, "ip_sigfirst_before_shim");
		if (!hook || !before)
			return -1;
		*hook = &env;
		printf("early handler installed before the shim: %s\n", *before ? "yes" : "no");
		return 0;
	}
	return -1;
}

/* Is the handler the program sees the one it installed? */
static const char *query(const char *mode)
{
	struct sigaction old;
	if (sigaction(SIGSEGV, NULL, &old) < 0)
		return "error";
	if (strcmp(mode, "sigaction") == 0)
		return (old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_segv_info ? "ours" : "NOT OURS";
	if (strcmp(mode, "signal") == 0)
		return old.sa_handler == on_segv_plain ? "ours" : "NOT OURS";
	return "not checked";
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char *secret = make_secret();
	if (install(mode) < 0) {
		printf("cannot install the handler (%s)\n", mode);
		return 2;
	}
	printf("sigaction() query: %s\n", query(mode));
	fflush(stdout);
	if (strcmp(mode, "resethand") == 0) {
		deref_null();                  /* returns, re-faults, default action */
		printf("survived\n");
		return 1;
	}
	if (strcmp(mode, "nodefer") == 0) {
		for (int i = 0; i < 2; i++)
			if (setjmp(plain_env) == 0)
				deref_null();
		printf("handled %d\n", (int)hits);
		return 0;
	}
	if (sigsetjmp(env, 1) == 0) {
		deref_null();
		printf("NULL dereference did not fault\n");
		return 1;
	}
	volatile sig_atomic_t *eh = dlsym(RTLD_DEFAULT, "ip_sigfirst_hits");
	printf("handled (%d)\n", (int)(strcmp(mode, "early") == 0 && eh ? *eh : hits));
	listen_once();
	printf("secret protected %d\n", is_protected(secret));
	fflush(stdout);
	corrupt(secret + 7, 'X');
	printf("the write went through; handler ran %d times\n",
	       (int)(strcmp(mode, "early") == 0 && eh ? *eh : hits));
	return 1;
}
