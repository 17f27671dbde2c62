/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * api_sig_c99 - a program built with -std=c99 (where signal() is
 * __sysv_signal) that installs its own SIGSEGV handler by one of libc's
 * routes, or behind libc's back, then protects a pool object and writes
 * into it.  The shim's handler must stay in charge: the write is reported
 * and killed (SIGSEGV), while a fault that is no pool write (a read-only
 * page of its own) still reaches the program's handler, which prints
 * "handled".  The program's handler running for the pool write prints
 * "program handler ran for the pool write" and exits 3.
 *
 *   api_sig_c99 signal | bsd_signal | sysv_signal | __sysv_signal |
 *               ssignal | sigset | __sigaction   the handler by that call
 *   api_sig_c99 raw       by a raw rt_sigaction system call (found and put
 *                         right at the protect, said in the journal)
 *   api_sig_c99 rawlate   the same after the protect, then a second later
 *                         a wait (poll): found and put right there (under
 *                         a policy: the shim looks at the program's waits)
 *   api_sig_c99 hold      sigset(SIGSEGV, SIG_HOLD), no handler
 *   api_sig_c99 ignore    sigignore(SIGSEGV), no handler
 *   api_sig_c99 rawmask   SIGSEGV blocked by a raw rt_sigprocmask (found
 *                         and unblocked at the protect)
 *   api_sig_c99 jmpmask   after the protect, siglongjmp to a buffer saved
 *                         while SIGSEGV was blocked (its mask restored)
 *   api_sig_c99 ctxmask   the same with setcontext and a context saved by
 *                         getcontext
 * Prints "handled" (where a handler was installed), "writing", and must
 * not print "written".
 */
#define _POSIX_C_SOURCE 200809L
#include <pmalloc.h>

#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Not declared under strict C99 with POSIX only: as a program written for
 * another standard would reach them. */
typedef void (*handler_t)(int);
handler_t bsd_signal(int, handler_t);
handler_t sysv_signal(int, handler_t);
handler_t __sysv_signal(int, handler_t);
handler_t ssignal(int, handler_t);
handler_t sigset(int, handler_t);
int sigignore(int);
int __sigaction(int, const struct sigaction *, struct sigaction *);
long syscall(long, ...);
#ifndef SIG_HOLD
#define SIG_HOLD ((handler_t)2)          /* X/Open, as glibc defines it */
#endif

static sigjmp_buf env, blocked_env;
static ucontext_t blocked_ctx;
static volatile int restored;

static void raw_mask(int how)
{
	unsigned long mask = 1ul << (SIGSEGV - 1);
	syscall(SYS_rt_sigprocmask, how, &mask, (unsigned long *)0, sizeof(mask));
}

/* SIGSEGV blocked behind libc's back while a jump buffer or a context
 * saves the mask, unblocked, the pool protected, then the saved mask
 * restored by the jump: 1 when how is one of these. */
static int restore_blocked(const char *how, struct pmalloc_pool *pool)
{
	if (strcmp(how, "jmpmask") == 0) {
		raw_mask(SIG_BLOCK);
		if (sigsetjmp(blocked_env, 1) == 0) {
			raw_mask(SIG_UNBLOCK);
			pmalloc_protect_pool(pool);
			siglongjmp(blocked_env, 1);
		}
		return 1;
	}
	if (strcmp(how, "ctxmask") == 0) {
		raw_mask(SIG_BLOCK);
		getcontext(&blocked_ctx);
		if (!restored) {
			restored = 1;
			raw_mask(SIG_UNBLOCK);
			pmalloc_protect_pool(pool);
			setcontext(&blocked_ctx);
		}
		return 1;
	}
	return 0;
}
static volatile sig_atomic_t probing;

static void handler(int sig)
{
	static const char msg[] = "program handler ran for the pool write\n";
	(void)sig;
	if (probing)
		siglongjmp(env, 1);
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(3);
}

#if defined(__x86_64__)
/* The kernel returns from a handler through the restorer it was given. */
void raw_restorer(void);
__asm__(".text\n.globl raw_restorer\n.type raw_restorer,@function\nraw_restorer:\n\tmovq $15, %rax\n\tsyscall\n");
#define SA_RESTORER_FLAG 0x04000000ul
#endif

struct kernel_action {
	void (*fn)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

static int install(const char *how)
{
	if (strcmp(how, "signal") == 0)
		return signal(SIGSEGV, handler) == SIG_ERR ? -1 : 1;
	if (strcmp(how, "bsd_signal") == 0)
		return bsd_signal(SIGSEGV, handler) == SIG_ERR ? -1 : 1;
	if (strcmp(how, "sysv_signal") == 0)
		return sysv_signal(SIGSEGV, handler) == SIG_ERR ? -1 : 1;
	if (strcmp(how, "__sysv_signal") == 0)
		return __sysv_signal(SIGSEGV, handler) == SIG_ERR ? -1 : 1;
	if (strcmp(how, "ssignal") == 0)
		return ssignal(SIGSEGV, handler) == SIG_ERR ? -1 : 1;
	if (strcmp(how, "sigset") == 0)
		return sigset(SIGSEGV, handler) == SIG_ERR ? -1 : 1;
	if (strcmp(how, "__sigaction") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handler;
		return __sigaction(SIGSEGV, &sa, NULL) < 0 ? -1 : 1;
	}
	if (strcmp(how, "hold") == 0)
		return sigset(SIGSEGV, SIG_HOLD) == SIG_ERR ? -1 : 0;
	if (strcmp(how, "ignore") == 0)
		return sigignore(SIGSEGV) < 0 ? -1 : 0;
	if (strcmp(how, "jmpmask") == 0 || strcmp(how, "ctxmask") == 0)
		return 0;
	if (strcmp(how, "rawmask") == 0) {
		unsigned long mask = 1ul << (SIGSEGV - 1);
		return syscall(SYS_rt_sigprocmask, SIG_BLOCK, &mask, (unsigned long *)0, sizeof(mask)) < 0 ? -1 : 0;
	}
#if defined(__x86_64__)
	if (strcmp(how, "raw") == 0) {
		struct kernel_action ka = { handler, SA_RESTORER_FLAG, raw_restorer, 0 };
		return syscall(SYS_rt_sigaction, SIGSEGV, &ka, (struct kernel_action *)0, sizeof(ka.mask)) < 0 ? -1 : 1;
	}
#endif
	return -2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: api_sig_c99 HOW\n");
		return 2;
	}
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *secret = pool ? pmalloc(pool, 64) : NULL;
	char *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | 0x20 /* MAP_ANONYMOUS: not POSIX */, -1, 0);
	if (!secret || page == MAP_FAILED) {
		perror("api_sig_c99");
		return 2;
	}
	strcpy(secret, "secret");
	int late = strcmp(argv[1], "rawlate") == 0;
	int handled = late ? 0 : install(argv[1]);
	if (handled < 0) {
		fprintf(stderr, "api_sig_c99: %s: %s\n", argv[1], handled == -2 ? "unknown (or not on this machine)" :
			"refused");
		return 2;
	}
	if (!restore_blocked(argv[1], pool))
		pmalloc_protect_pool(pool);
	if (late) {
		/* Behind the shim's back after its last protect; then a wait
		 * more than a second later (the shim looks at most once a
		 * second). */
		struct timespec pause = { 1, 200000000 };
		handled = install("raw");
		if (handled < 0) {
			perror("api_sig_c99: rawlate");
			return 2;
		}
		nanosleep(&pause, NULL);
		poll(NULL, 0, 0);
	}
	if (handled) {
		/* A fault that is no pool write: the program's handler. */
		probing = 1;
		if (sigsetjmp(env, 1) == 0) {
			page[0] = 1;
			printf("not faulted\n");
		} else {
			printf("handled\n");
		}
		probing = 0;
	}
	printf("writing\n");
	secret[0] = 'X';
	printf("written\n");
	return 0;
}
