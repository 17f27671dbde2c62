/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stderr.c - the shim's lines on stderr (fmt.h): the "pmalloc[PID]: "
 * prefix, write(2) of a built line, debug lines and fatal().
 *
 * Never touches a stdio stream of the program's (only write(2), through
 * os.c), never allocates; fmt_line_start, fmt_flush_stderr and fatal()
 * are async-signal-safe.
 */
#define _GNU_SOURCE
#include "fmt.h"
#include "stderr.h"
#include "common.h"
#include "os.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int pm_debug;

void fmt_line_start(struct fmt *f)
{
	fmt_printf(f, "pmalloc[%d]: ", (int)getpid());
}

void fmt_flush_stderr(struct fmt *f)
{
	os_write_all(STDERR_FILENO, f->start, fmt_len(f));
}

/* One line "pmalloc[PID]: ..." or "pmalloc: ..." on stderr, with write(2):
 * no stdio stream of the program's is touched.  printf formatting, so not
 * for signal handlers (they use struct fmt). */
void fmt_vline(bool with_pid, const char *format, va_list ap)
{
	char buf[1024];
	int n = with_pid ? snprintf(buf, sizeof(buf), "pmalloc[%d]: ", (int)getpid())
			 : snprintf(buf, sizeof(buf), "pmalloc: ");
	size_t room = sizeof(buf) - (size_t)n - 1;     /* one byte kept for the newline */
	int m = vsnprintf(buf + n, room, format, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m >= room ? room - 1 : (size_t)m);
	buf[len++] = '\n';
	os_write_all(STDERR_FILENO, buf, len);
}

void debug_line(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	fmt_vline(true, format, ap);
	va_end(ap);
}

void fatal(const char *api, const char *msg)
{
	char buf[256];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_printf(&f, "pmalloc: fatal error in %s: %s\n", api, msg);
	fmt_flush_stderr(&f);
	abort();
}
