/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libc.h - the door to libc's own definitions of the names the shim
 * interposes (libc.c): the interposers call the real function through it.
 * Owns the table of those entry points, and nothing else; never called
 * from a signal handler before the table is filled (dlsym may allocate and
 * take the loader's lock).
 *
 * The table is code pointers the host did not have, called on every
 * event-loop turn (poll, epoll_wait ...): so it lives in a page of its own
 * at a link-time address, filled at start-up (libc_freeze(), from init.c)
 * and read-only from then on, as the program's own GOT is under full
 * RELRO (the library is linked -z relro -z now).  A write cannot point an
 * interposer at another function (issue 27, row 8; the rule is guard.h's).
 */
#ifndef PMALLOC_LIBC_H
#define PMALLOC_LIBC_H

#include "common.h"
#include "os.h"

/* Every name REAL() is used with.  A REAL(name, ...) that fails to build
 * with "LIBC_FN_name undeclared" wants its name added here. */
#define LIBC_NAMES(X) \
	X(dlclose) X(prctl) X(pthread_create) X(pthread_sigmask) X(sigprocmask) \
	X(pthread_attr_setsigmask_np) X(read) X(pread) X(pread64) X(readv) X(recvfrom) X(recvmsg) \
	X(listen) X(accept) X(accept4) X(epoll_wait) X(epoll_pwait) X(poll) X(ppoll) X(select) \
	X(pselect) X(epoll_pwait2) X(sigsuspend) X(sigwaitinfo) X(sigtimedwait) X(pause) X(setuid) \
	X(setgid) X(setresuid) X(setresgid) X(seteuid) X(setegid) X(chroot) X(fork) X(daemon) \
	X(execve) X(execv) X(execvp) X(execvpe) X(exit) X(_exit) X(_Exit) X(quick_exit) X(abort) X(bsd_signal) X(__sysv_signal) X(sigset) \
	X(sigignore) X(siglongjmp) X(longjmp) X(_longjmp) X(__longjmp_chk) X(setcontext) X(swapcontext) \
	X(__read_chk) X(__pread_chk) X(__pread64_chk) X(__recv_chk) X(__recvfrom_chk) X(recvmmsg) \
	X(preadv) X(preadv64) X(preadv2) X(preadv64v2) X(getsockopt) X(ioctl) X(dlopen) X(__libc_start_main) X(sigwait)

enum libc_fn {
#define LIBC_ENUM_(n) LIBC_FN_##n,
	LIBC_NAMES(LIBC_ENUM_)
#undef LIBC_ENUM_
	LIBC_FN_COUNT
};

union libc_page {
	struct {
		void *fn[LIBC_FN_COUNT];
		bool frozen;
	} s;
	unsigned char page[RO_PAGE];
};
extern union libc_page libc_ro __attribute__((visibility("hidden")));

/* libc's definition of name (dlsym RTLD_NEXT), NULL if none. */
void *libc_symbol(const char *name);
/* Entry i, looked up now: written into the table while it is not frozen
 * yet (a call before init.c's constructor), else only returned. */
void *libc_fn_slow(enum libc_fn i);
/* Fill every entry and make the table read-only (once, at start-up).  0 or
 * -errno (then the table stays writable, and the caller says so). */
int libc_freeze(void);

/* libc's name, as a function of type: one load from the read-only table. */
#define REAL(name, type) ({ \
	void *f_ = libc_ro.s.fn[LIBC_FN_##name]; \
	if (unlikely(!f_)) \
		f_ = libc_fn_slow(LIBC_FN_##name); \
	(type)f_; })

#endif
