/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fmt.c - text built into a caller's buffer (see fmt.h), for the shim and
 * pmallocd alike (the violation record's formatter, violation_fmt.c, runs
 * in both).
 *
 * Owns: struct fmt and its printf subset.
 * Never: allocates, calls a library function or keeps state: it runs in
 * signal handlers and inside the host program's malloc.
 */
#include "fmt.h"
#include "escape.h"

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
		f->p += text_escape(f->p, (size_t)(f->end - f->p) + 1, s);
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

void fmt_hex(struct fmt *f, uint64_t v)
{
	fmt_str(f, "0x");
	fmt_num(f, v, 16);
}

/* The next integer argument of the size given by the l/ll/z before it. */
static uint64_t next_unsigned(va_list *ap, int longs, bool size_t_arg)
{
	if (size_t_arg)
		return va_arg(*ap, size_t);
	if (longs >= 2)
		return va_arg(*ap, unsigned long long);
	if (longs == 1)
		return va_arg(*ap, unsigned long);
	return va_arg(*ap, unsigned int);
}

static int64_t next_signed(va_list *ap, int longs, bool size_t_arg)
{
	if (size_t_arg)
		return (int64_t)va_arg(*ap, size_t);
	if (longs >= 2)
		return va_arg(*ap, long long);
	if (longs == 1)
		return va_arg(*ap, long);
	return va_arg(*ap, int);
}

static void fmt_vprintf(struct fmt *f, const char *format, va_list *ap)
{
	for (const char *p = format; *p; p++) {
		if (*p != '%') {
			if (f->p < f->end)
				*f->p++ = *p;
			continue;
		}
		int longs = 0;
		bool z = false;
		while (p[1] == 'l')
			longs++, p++;
		if (p[1] == 'z')
			z = true, p++;
		switch (*++p) {
		case 's':
			fmt_escaped(f, va_arg(*ap, const char *));
			break;
		case 'u':
			fmt_num(f, next_unsigned(ap, longs, z), 10);
			break;
		case 'x':
			fmt_num(f, next_unsigned(ap, longs, z), 16);
			break;
		case 'd': {
			int64_t v = next_signed(ap, longs, z);
			if (v < 0 && f->p < f->end)
				*f->p++ = '-';
			fmt_num(f, v < 0 ? -(uint64_t)v : (uint64_t)v, 10);
			break;
		}
		case '%':
			if (f->p < f->end)
				*f->p++ = '%';
			break;
		case '\0':
			return;
		default:
			if (f->p < f->end)
				*f->p++ = '?';
			break;
		}
	}
}

void fmt_printf(struct fmt *f, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	fmt_vprintf(f, format, &ap);
	va_end(ap);
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
