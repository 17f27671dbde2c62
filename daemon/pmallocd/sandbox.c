/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sandbox.c - the seccomp allow-list pmallocd runs under after init.
 *
 * Owns: the list of system calls the running daemon may make (measured
 * with strace -f over the integration tests: serving, reports with
 * symbolization, status with its /proc scan, SIGHUP reload, journal and
 * sd_notify traffic, journald stalled, absent and restarted, clean exit).
 * Anything else kills the process (SCMP_ACT_KILL_PROCESS), so a new code
 * path needing a new call must add it here.
 * The filter covers every thread of the process (SCMP_FLTATR_CTL_TSYNC):
 * identify.c's worker starts before it, and is under it from then on.
 * Never: runs before init is complete (binding the socket, reading the
 * policy, opening the journal, starting the worker all happen first), or allows a call that
 * creates processes, maps executable memory, opens sockets other than unix
 * datagram ones, or connects any socket but the journal's.
 */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "log.h"
#include "proc.h"

#ifndef SOCK_TYPE_MASK
#define SOCK_TYPE_MASK 0xf               /* the kernel's; glibc's headers lack it */
#endif

/* Allowed without argument checks.  Measured: strace -f over every
 * daemon_*.sh test, counting calls after PR_SET_NO_NEW_PRIVS.  Marked
 * "(rare)": paths the tests do not reach, kept deliberately. */
static const char *const allowed[] = {
	/* memory: malloc; libelf maps module files read-only */
	"brk", "munmap",
	"mremap", "madvise",                       /* (rare) malloc: realloc of mapped chunks, trimming */
	/* files: policy reload, /proc, module and debug files */
	"openat", "read", "pread64", "close", "newfstatat", "readlink", "getdents64", "fcntl",
	/* clients; journal (send) and sd_notify (sendmsg) datagrams; stderr */
	"accept4", "recvmsg", "recvfrom", "sendmsg", "sendto", "getsockopt", "setsockopt", "write",
	"sendmmsg",                                /* journal entries of a batch of clients */
	"writev",                                  /* (rare) glibc's fatal messages (__libc_message) */
	/* the event loop */
	"epoll_wait", "epoll_ctl", "timerfd_create", "timerfd_settime", "signalfd4", "poll",
	"gettid", "getpid", "getuid", "geteuid", "getgid", "getegid",
	/* identify.c's worker: its lock and condition variable; glibc's
	 * thread exit (blocks signals, frees its stack) when it is joined */
	"futex", "rt_sigprocmask", "exit",
	"clock_gettime",                           /* (rare) when the vDSO cannot serve the clock */
	"getrandom",                               /* (rare) ASan's allocator (make check-sanitize); no I/O */
	"sigaltstack",                             /* (rare) ASan's thread exit (the worker's, joined) */
	/* symbolize.c opens a module file with its reporter's file-system ids:
	 * these change the calling thread's file-system ids and nothing else */
	"setfsuid", "setfsgid",
	/* exit: the socket is unlinked */
	"unlink", "exit_group",
	"memfd_create",                            /* status answers (status_data.c) */
};

static int add_rule(scmp_filter_ctx ctx, const char *name, unsigned int n_args,
		    const struct scmp_arg_cmp *args)
{
	int nr = seccomp_syscall_resolve_name(name);
	int r;

	if (nr == __NR_SCMP_ERROR)
		return log_error_errno(EINVAL, "sandbox: unknown system call %s", name);
	r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n_args, args);
	if (r < 0)
		return log_error_errno(r, "sandbox: cannot allow %s: %m", name);
	return 0;
}

int sandbox_apply(int journal_fd)
{
	scmp_filter_ctx ctx;
	int r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return log_error_errno(errno, "sandbox: PR_SET_NO_NEW_PRIVS: %m");

	ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return log_error_errno(ENOMEM, "sandbox: seccomp_init failed");
	/* Every thread under the filter: identify.c's worker runs already. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r < 0) {
		log_error_errno(r, "sandbox: cannot apply the filter to every thread: %m");
		goto out;
	}

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		r = add_rule(ctx, allowed[i], 0, NULL);
		if (r < 0)
			goto out;
	}

	/* sd_notify opens a unix datagram socket per message; nothing else
	 * may be opened.  Datagram only: that is what makes the connect() rule
	 * below safe.  A stream socket dup'ed onto the journal's descriptor
	 * number could otherwise connect to any listening unix socket (D-Bus,
	 * systemd's private one); a datagram one reaches no more than sendto()
	 * reaches anyway. */
	{
		struct scmp_arg_cmp unix_dgram[] = {
			SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
			SCMP_A1(SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, SOCK_DGRAM),
		};
		r = add_rule(ctx, "socket", 2, unix_dgram);
		if (r < 0)
			goto out;
	}
	/* jwriter.c connects its socket again after journald went away (a
	 * journald restart makes a new socket): that descriptor only. */
	if (journal_fd >= 0) {
		struct scmp_arg_cmp journal_only = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)journal_fd);
		r = add_rule(ctx, "connect", 1, &journal_only);
		if (r < 0)
			goto out;
	}
	/* ioctl() only to ask a client's pidfd for its ids (proc.c). */
	{
		struct scmp_arg_cmp pidfd_info = SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)PROC_PIDFD_GET_INFO);
		r = add_rule(ctx, "ioctl", 1, &pidfd_info);
		if (r < 0)
			goto out;
	}
	/* Memory may never be mapped executable. */
	{
		struct scmp_arg_cmp no_exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
		r = add_rule(ctx, "mmap", 1, &no_exec);
		if (r < 0)
			goto out;
	}

	r = seccomp_load(ctx);
	if (r < 0)
		log_error_errno(r, "sandbox: cannot load the seccomp filter: %m");
out:
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}
