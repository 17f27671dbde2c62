/*
 * restrict.c - the calls by which a program restricts itself, interposed:
 * prctl(2) (PR_SET_NO_NEW_PRIVS, which an unprivileged seccomp filter
 * needs, and PR_SET_SECCOMP) and syscall(2) for seccomp(2) and
 * landlock_restrict_self(2), which glibc has no wrapper for (libseccomp
 * loads a filter through syscall(); a privileged process may skip
 * no_new_privs).  Before any of them, the symbol tables that resolve.c
 * reads at an object's first allocation are read at once: under a filter
 * or a Landlock ruleset, the open(2) that reading needs may be refused, or
 * kill the process.  (A filter loaded by a raw system call instruction,
 * with neither libc function, is not seen.)
 *
 * Everything else goes to libc untouched: the arguments and result as they
 * are.  Cost for other calls: one compare before the real call.  Never
 * holds a lock across the real call.
 */
#define _GNU_SOURCE
#include "shim.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446   /* Linux 5.13; older headers lack it */
#endif

static void read_before_restricting(void)
{
	int e = errno;
	int busy = shim_busy_enter();
	resolve_read_all();
	shim_busy_leave(busy);
	errno = e;
}

PMALLOC_EXPORT int prctl(int option, ...)
{
	/* prctl takes up to four more words; the kernel ignores those an
	 * option does not use (glibc reads four too). */
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_NO_NEW_PRIVS || option == PR_SET_SECCOMP)
		read_before_restricting();
	typedef int (*fn_t)(int, ...);
	fn_t fn = REAL(prctl, fn_t);
	if (unlikely(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	return fn(option, a2, a3, a4, a5);
}

PMALLOC_EXPORT long syscall(long number, ...)
{
	/* Six argument words, as the kernel takes (glibc's syscall() passes
	 * six registers whatever the call uses). */
	va_list ap;
	va_start(ap, number);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (unlikely(number == SYS_seccomp || number == SYS_landlock_restrict_self))
		read_before_restricting();
	typedef long (*fn_t)(long, ...);
	fn_t fn = REAL(syscall, fn_t);
	if (unlikely(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	return fn(number, a1, a2, a3, a4, a5, a6);
}
