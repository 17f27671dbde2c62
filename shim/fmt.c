/*
 * fmt.c - async-signal-safe text building (see fmt.h) and fatal().
 * Never allocates, never calls stdio: it runs in signal handlers and inside
 * the host program's malloc.
 */
#define _GNU_SOURCE
#include "fmt.h"
#include "common.h"
#include "os.h"

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

void debug_line(const char *a, const char *b, const char *c)
{
	if (!pm_debug)
		return;
	char buf[512];
	struct fmt f;
	fmt_init(&f, buf, sizeof(buf));
	fmt_str(&f, "pmalloc[");
	fmt_u64(&f, (uint64_t)getpid());
	fmt_str(&f, "]: ");
	fmt_str(&f, a);
	if (b)
		fmt_str(&f, b);
	if (c)
		fmt_str(&f, c);
	fmt_str(&f, "\n");
	fmt_flush_stderr(&f);
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
