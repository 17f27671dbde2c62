/*
 * fmt.c - text building (see fmt.h), stderr lines and fatal().  Never
 * allocates and never touches a stdio stream: it runs inside the host
 * program's malloc, and struct fmt and fatal() run in signal handlers.
 */
#define _GNU_SOURCE
#include "fmt.h"
#include "escape.h"
#include "common.h"
#include "os.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int pm_debug;

void fmt_init(struct fmt *f, char *buf, size_t size)
{
	f->start = f->p = buf;
	f->end = buf + (size ? size - 1 : 0);
}

void fmt_str(struct fmt *f, const char *s)
{
	if (!s)
		s = "(null)";
	while (*s && f->p < f->end)
		*f->p++ = *s++;
}

void fmt_escaped(struct fmt *f, const char *s)
{
	if (f->p < f->end)
		f->p += text_escape(f->p, (size_t)(f->end - f->p), s);
}

static void fmt_num(struct fmt *f, uint64_t v, unsigned base)
{
	char tmp[24];
	int i = 0;
	do {
		tmp[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && i < (int)sizeof(tmp));
	while (i > 0 && f->p < f->end)
		*f->p++ = tmp[--i];
}

void fmt_u64(struct fmt *f, uint64_t v)
{
	fmt_num(f, v, 10);
}

void fmt_hex(struct fmt *f, uint64_t v)
{
	fmt_str(f, "0x");
	fmt_num(f, v, 16);
}

void fmt_line_start(struct fmt *f)
{
	fmt_str(f, "pmalloc[");
	fmt_u64(f, (uint64_t)getpid());
	fmt_str(f, "]: ");
}

size_t fmt_len(const struct fmt *f)
{
	return (size_t)(f->p - f->start);
}

const char *fmt_cstr(struct fmt *f)
{
	*f->p = '\0';
	return f->start;
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

void debug_printf(const char *format, ...)
{
	if (!pm_debug)
		return;
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
	fmt_str(&f, "pmalloc: fatal error in ");
	fmt_str(&f, api);
	fmt_str(&f, ": ");
	fmt_str(&f, msg);
	fmt_str(&f, "\n");
	fmt_flush_stderr(&f);
	abort();
}
