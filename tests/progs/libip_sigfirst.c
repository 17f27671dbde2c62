/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libip_sigfirst - a SIGSEGV handler installed before the shim's: this
 * library is preloaded after the shim (LD_PRELOAD="shim this"), so its
 * constructor runs first, as a runtime's or crash reporter's early set-up
 * would.  It records whether the kernel still had the default action then
 * (so the shim really came second).  ip_sigsegv finds the hooks with dlsym.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

sigjmp_buf *ip_sigfirst_env;             /* set by the program before it faults */
volatile sig_atomic_t ip_sigfirst_hits;
int ip_sigfirst_before_shim;             /* 1: nothing was installed before us */

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	ip_sigfirst_hits++;
	if (ip_sigfirst_env)
		siglongjmp(*ip_sigfirst_env, 1);
	_exit(4);
}

/* The kernel's view, past any interposed sigaction(). */
static void *kernel_handler(int sig)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		unsigned long mask;
	} k;
	memset(&k, 0, sizeof(k));
	if (syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof(k.mask)) != 0)
		return (void *)-1;
	return k.handler;
}

__attribute__((constructor)) static void install_early(void)
{
	ip_sigfirst_before_shim = kernel_handler(SIGSEGV) == (void *)SIG_DFL;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
}
