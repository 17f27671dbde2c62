/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * restrict.c - prctl(2), interposed: before the program restricts itself
 * (PR_SET_NO_NEW_PRIVS, which an unprivileged seccomp filter needs, or
 * PR_SET_SECCOMP), the symbol tables that resolve.c reads at an object's
 * first allocation are read at once: under a filter, the open(2) that
 * reading needs may be refused, or kill the process.  libseccomp's
 * seccomp_load() sets no_new_privs through prctl first.  (A filter loaded
 * without either call, by a process with privilege, through the seccomp
 * system call alone, is not seen.)
 *
 * Everything else goes to libc's prctl untouched: the arguments and result
 * as they are.  Never holds a lock across the real call.
 */
#define _GNU_SOURCE
#include "resolve.h"
#include "armed.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/prctl.h>

PMALLOC_EXPORT int prctl(int option, ...)
{
	/* prctl takes up to four more words; the kernel ignores those an
	 * option does not use (glibc reads four too). */
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_NO_NEW_PRIVS || option == PR_SET_SECCOMP) {
		int e = errno;
		int busy = shim_busy_enter();
		resolve_read_all();
		shim_busy_leave(busy);
		errno = e;
	}
	typedef int (*fn_t)(int, ...);
	fn_t fn = REAL(prctl, fn_t);
	if (unlikely(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	return fn(option, a2, a3, a4, a5);
}
