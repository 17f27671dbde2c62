/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_time.c - the TIME arguments of pmallocctl and the timestamps it prints.
 *
 * Owns the accepted forms of TIME: exactly those journalctl --since takes
 * (systemd 252's parse_timestamp(); pmallocctl(8) lists them, keep both in
 * step): "[WEEKDAY ][YY]YY-MM-DD[ HH:MM[:SS[.FRACTION]]]", "[WEEKDAY ]HH:MM[:SS[.F]]"
 * (today), "today", "yesterday", "tomorrow", each optionally followed by
 * " UTC", by a time zone name of /usr/share/zoneinfo ("Europe/Berlin") or
 * by the local zone's abbreviation; "now"; "+SPAN", "-SPAN", "SPAN ago",
 * "SPAN left"; "@SPAN" (seconds since the epoch, "@1700000000.25").  The
 * same glibc strptime() formats in the same order as systemd, so that a
 * form means here what it means to journalctl; the integration test
 * ctl_violations_time.sh holds both side by side.
 *
 * Never prints.  The parser reads no clock (now is a parameter); a named
 * zone is applied by setting TZ for the parse and restoring it after
 * (pmallocctl is single-threaded), where systemd forks for the same end.
 */
#define _GNU_SOURCE                  /* strptime, tm_zone */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ctl_time.h"

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#define USEC_PER_DAY (24 * USEC_PER_HOUR)
/* systemd's: a month and a year as 1/12 and 365.25 days. */
#define USEC_PER_MONTH (2629800 * USEC_PER_SEC)
#define USEC_PER_YEAR (31557600 * USEC_PER_SEC)
#define USEC_INFINITY UINT64_MAX
/* The last instant systemd formats: 9999-12-30 23:59:59 UTC. */
#define USEC_TIMESTAMP_FORMATTABLE_MAX (UINT64_C(253402214399) * USEC_PER_SEC + 999999)
#define TZ_NAME_MAX 255

uint64_t ctl_now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *skip_space(const char *p)
{
	return p + strspn(p, " \t\n\r");
}

/* A unit at p, longest spelling first where one is the other's prefix
 * (systemd's table and order): its length and *ret, or 0. */
static size_t span_unit(const char *p, uint64_t *ret)
{
	static const struct {
		const char *name;
		uint64_t usec;
	} units[] = {
		{ "seconds", USEC_PER_SEC }, { "second", USEC_PER_SEC }, { "sec", USEC_PER_SEC },
		{ "s", USEC_PER_SEC }, { "minutes", USEC_PER_MINUTE }, { "minute", USEC_PER_MINUTE },
		{ "min", USEC_PER_MINUTE }, { "months", USEC_PER_MONTH }, { "month", USEC_PER_MONTH },
		{ "M", USEC_PER_MONTH }, { "msec", 1000 }, { "ms", 1000 }, { "m", USEC_PER_MINUTE },
		{ "hours", USEC_PER_HOUR }, { "hour", USEC_PER_HOUR }, { "hr", USEC_PER_HOUR },
		{ "h", USEC_PER_HOUR }, { "days", USEC_PER_DAY }, { "day", USEC_PER_DAY },
		{ "d", USEC_PER_DAY }, { "weeks", 7 * USEC_PER_DAY }, { "week", 7 * USEC_PER_DAY },
		{ "w", 7 * USEC_PER_DAY }, { "years", USEC_PER_YEAR }, { "year", USEC_PER_YEAR },
		{ "y", USEC_PER_YEAR }, { "usec", 1 }, { "us", 1 },
		{ "\xce\xbcs", 1 }, { "\xc2\xb5s", 1 },      /* Greek mu, micro sign */
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);

		if (strncmp(p, units[i].name, n) == 0) {
			*ret = units[i].usec;
			return n;
		}
	}
	return 0;
}

/* A time span as systemd's parse_sec(): "1h30min", "5 min", "2.5", "1.5h",
 * ".22s", "3.1s.2" (a number without a unit is seconds), or "infinity".
 * 0 and *ret_usec, -EINVAL or -ERANGE. */
static int parse_span(const char *s, uint64_t *ret_usec)
{
	uint64_t total = 0;
	const char *p = skip_space(s);
	bool any = false;

	if (strncmp(p, "infinity", 8) == 0 && *skip_space(p + 8) == '\0') {
		*ret_usec = USEC_INFINITY;
		return 0;
	}
	for (;;) {
		uint64_t unit = USEC_PER_SEC, n = 0;
		const char *digits, *frac = NULL, *u;
		size_t ulen;

		p = skip_space(p);
		if (*p == '\0')
			break;
		if (*p == '-')
			return -ERANGE;
		if (*p == '+')                       /* strtoll() takes a sign */
			p++;
		digits = p;
		for (; is_digit(*p); p++) {
			if (n > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			n = n * 10 + (uint64_t)(*p - '0');
		}
		if (*p == '.') {
			frac = ++p;
			p += strspn(p, "0123456789");
		} else if (p == digits) {
			return -EINVAL;
		}
		u = skip_space(p);
		ulen = span_unit(u, &unit);
		if (ulen == 0 && u == p && *u != '\0')
			return -EINVAL;              /* "12.34.56", "5x" */
		p = u + ulen;
		if (n >= USEC_INFINITY / unit || n * unit >= USEC_INFINITY - total)
			return -ERANGE;
		total += n * unit;
		if (frac) {
			const char *b = frac;

			for (uint64_t m = unit / 10; is_digit(*b); b++, m /= 10) {
				uint64_t k = (uint64_t)(*b - '0') * m;

				if (k >= USEC_INFINITY - total)
					return -ERANGE;
				total += k;
			}
			if (b == frac)
				return -EINVAL;              /* "3.s", "3. 1" */
		}
		any = true;
	}
	if (!any)
		return -EINVAL;
	*ret_usec = total;
	return 0;
}

static bool ends_with_word(const char *s, size_t len, const char *word, bool nocase)
{
	size_t n = strlen(word);

	if (len <= n || s[len - n - 1] != ' ')
		return false;
	return nocase ? strncasecmp(s + len - n, word, n) == 0 : memcmp(s + len - n, word, n) == 0;
}

/* Whether name is a time zone of the system's database, as systemd's
 * timezone_is_valid(): a plain relative path to a TZif file. */
static bool zone_is_valid(const char *name)
{
	char path[sizeof("/usr/share/zoneinfo/") + TZ_NAME_MAX], magic[4];
	size_t n = strlen(name);
	bool slash = true;
	int fd;
	ssize_t got;

	if (n == 0 || n > TZ_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || is_digit(*p) ||
			  *p == '/' || *p == '-' || *p == '_' || *p == '+';

		if (!ok || (*p == '/' && slash))
			return false;        /* no "/x", "x//y" */
		slash = *p == '/';
		if (p[0] == '.' || (p == name && *p == '-'))
			return false;
	}
	if (slash)
		return false;
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return false;
	got = read(fd, magic, sizeof(magic));
	close(fd);
	return got == 4 && memcmp(magic, "TZif", 4) == 0;
}

/* The date part: "YY-MM-DD HH:MM:SS[.F]" and the shorter forms, in
 * systemd's order of strptime() formats; tm is now's broken-down time (the
 * fields a form leaves out stay); 0 with *ret_frac (µs), or -EINVAL. */
static int parse_clock(const char *t, struct tm *tm, uint64_t *ret_frac)
{
	static const struct {
		const char *fmt;
		bool fraction;               /* may end ".FRACTION" */
		bool zero_sec, zero_time;    /* seconds, or the whole time, set to 0 */
	} forms[] = {
		{ "%y-%m-%d %H:%M:%S", true, false, false },
		{ "%Y-%m-%d %H:%M:%S", true, false, false },
		{ "%y-%m-%d %H:%M", false, true, false },
		{ "%Y-%m-%d %H:%M", false, true, false },
		{ "%y-%m-%d", false, false, true },
		{ "%Y-%m-%d", false, false, true },
		{ "%H:%M:%S", true, false, false },
		{ "%H:%M", false, true, false },
	};
	const struct tm copy = *tm;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		const char *k;

		*tm = copy;
		k = strptime(t, forms[i].fmt, tm);
		if (!k)
			continue;
		if (forms[i].fraction && *k == '.') {
			uint64_t v = 0;
			int d = 0;

			for (k++; d < 6; d++, k++) {
				if (!is_digit(*k)) {
					if (d == 0)
						return -EINVAL;
					break;
				}
				v = v * 10 + (uint64_t)(*k - '0');
			}
			for (; d < 6; d++)
				v *= 10;
			if (*k >= '5' && *k <= '9')  /* rounded, as systemd does */
				v++;
			k += strspn(k, "0123456789");
			if (*k)
				return -EINVAL;
			*ret_frac = v;
			return 0;
		}
		if (*k != '\0')
			continue;
		if (forms[i].zero_sec || forms[i].zero_time)
			tm->tm_sec = 0;
		if (forms[i].zero_time)
			tm->tm_min = tm->tm_hour = 0;
		*ret_frac = 0;
		return 0;
	}
	return -EINVAL;
}

/* An absolute time: t (a day word or a date, maybe after a weekday) in the
 * zone in force (utc: UTC), dst -1 or the abbreviation's 0/1 (tm_isdst). */
static int parse_absolute(const char *t, uint64_t now_usec, bool utc, int dst, uint64_t *ret_usec)
{
	static const char *const days[] = {
		"Sunday", "Sun", "Monday", "Mon", "Tuesday", "Tue", "Wednesday", "Wed",
		"Thursday", "Thu", "Friday", "Fri", "Saturday", "Sat",
	};
	time_t x = (time_t)(now_usec / USEC_PER_SEC);
	uint64_t frac = 0;
	int weekday = -1;
	struct tm tm;
	int day_shift = 0;

	if (!(utc ? gmtime_r(&x, &tm) : localtime_r(&x, &tm)))
		return -EINVAL;
	tm.tm_isdst = dst;
	if (strcmp(t, "today") == 0 || strcmp(t, "yesterday") == 0 || strcmp(t, "tomorrow") == 0) {
		day_shift = t[0] == 'y' ? -1 : t[1] == 'o' && t[2] == 'm' ? 1 : 0;
		tm.tm_mday += day_shift;
		tm.tm_sec = tm.tm_min = tm.tm_hour = 0;
	} else {
		for (size_t i = 0; i < sizeof(days) / sizeof(days[0]); i++) {
			size_t n = strlen(days[i]);

			if (strncasecmp(t, days[i], n) == 0 && t[n] == ' ') {
				weekday = (int)(i / 2);
				t += n + 1;
				break;
			}
		}
		if (parse_clock(t, &tm, &frac) < 0)
			return -EINVAL;
	}
	errno = 0;
	x = utc ? timegm(&tm) : mktime(&tm);         /* normalizes tm, tm_wday too */
	if (x < 0 || (weekday >= 0 && tm.tm_wday != weekday))
		return -EINVAL;
	if ((uint64_t)x > (USEC_TIMESTAMP_FORMATTABLE_MAX - frac) / USEC_PER_SEC)
		return -EINVAL;
	*ret_usec = (uint64_t)x * USEC_PER_SEC + frac;
	return *ret_usec > USEC_TIMESTAMP_FORMATTABLE_MAX ? -EINVAL : 0;
}

/* now +plus -minus, within what systemd accepts. */
static int shift(uint64_t now_usec, uint64_t plus, uint64_t minus, uint64_t *ret_usec)
{
	uint64_t r = now_usec;

	if (r + plus < r)
		return -ERANGE;
	r += plus;
	if (r > USEC_TIMESTAMP_FORMATTABLE_MAX || r < minus)
		return -ERANGE;
	*ret_usec = r - minus;
	return 0;
}

/* parse_timestamp() without a zone name: the relative forms, " UTC", the
 * local zone's abbreviations (tzname), then an absolute time. */
static int parse_plain(char *t, uint64_t now_usec, uint64_t *ret_usec)
{
	size_t len = strlen(t);
	uint64_t span;
	bool utc = false;
	int dst = -1, r;

	if (strcmp(t, "now") == 0) {
		*ret_usec = now_usec;
		return 0;
	}
	if (t[0] == '+' || t[0] == '-') {
		r = parse_span(t + 1, &span);
		if (r < 0)
			return r;
		return t[0] == '+' ? shift(now_usec, span, 0, ret_usec) : shift(now_usec, 0, span, ret_usec);
	}
	if (len > 4 && strcmp(t + len - 4, " ago") == 0) {
		t[len - 4] = '\0';
		r = parse_span(t, &span);
		return r < 0 ? r : shift(now_usec, 0, span, ret_usec);
	}
	if (len > 5 && strcmp(t + len - 5, " left") == 0) {
		t[len - 5] = '\0';
		r = parse_span(t, &span);
		return r < 0 ? r : shift(now_usec, span, 0, ret_usec);
	}
	if (ends_with_word(t, len, "UTC", true)) {
		utc = true;
		t[len - 4] = '\0';
	} else {
		tzset();
		for (int j = 0; j <= 1; j++)
			if (tzname[j] && tzname[j][0] && ends_with_word(t, len, tzname[j], true)) {
				t[len - strlen(tzname[j]) - 1] = '\0';
				dst = j;
				break;
			}
	}
	return parse_absolute(t, now_usec, utc, dst, ret_usec);
}

/* TIME ending in a zone name: parsed with TZ set to it.  A name that is
 * one of the zone's own abbreviations ("EST", "CET") stays on for
 * parse_plain() to take as such; any other is cut, and the rest must be
 * an absolute time (no relative form takes a zone). */
static int parse_in_zone(char *t, char *zone, uint64_t now_usec, uint64_t *ret_usec)
{
	const char *old = getenv("TZ");
	char *saved = old ? strdup(old) : NULL;
	char colon[TZ_NAME_MAX + 2];
	int r;

	if (old && !saved)
		return -ENOMEM;
	snprintf(colon, sizeof(colon), ":%s", zone);
	if (setenv("TZ", colon, 1) < 0) {
		free(saved);
		return -errno;
	}
	tzset();
	if ((tzname[0] && strcmp(zone, tzname[0]) == 0) || (tzname[1] && strcmp(zone, tzname[1]) == 0)) {
		r = parse_plain(t, now_usec, ret_usec);
	} else {
		zone[-1] = '\0';
		r = parse_absolute(t, now_usec, false, -1, ret_usec);
	}
	if (saved)
		(void)setenv("TZ", saved, 1);
	else
		(void)unsetenv("TZ");
	free(saved);
	tzset();
	return r;
}

int ctl_parse_time(const char *arg, uint64_t now_usec, uint64_t *ret_usec)
{
	char *t, *last_space;
	size_t len = strlen(arg);
	int r;

	if (len > 4096)
		return -EINVAL;
	if (arg[0] == '@') {
		r = parse_span(arg + 1, ret_usec);
		return r < 0 ? r : *ret_usec > USEC_TIMESTAMP_FORMATTABLE_MAX ? -ERANGE : 0;
	}
	t = strdup(arg);
	if (!t)
		return -ENOMEM;
	last_space = strrchr(t, ' ');
	if (last_space && !ends_with_word(t, len, "UTC", true) && zone_is_valid(last_space + 1))
		r = parse_in_zone(t, last_space + 1, now_usec, ret_usec);
	else
		r = parse_plain(t, now_usec, ret_usec);
	free(t);
	return r;
}

static int format_tm(uint64_t usec, bool utc, const char *fmt, char *buf, size_t len)
{
	time_t t = (time_t)(usec / USEC_PER_SEC);
	struct tm tm;

	if (!(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)))
		return -EOVERFLOW;
	return strftime(buf, len, fmt, &tm) == 0 ? -ENOBUFS : 0;
}

int ctl_format_local(uint64_t usec, char *buf, size_t len)
{
	return format_tm(usec, false, "%Y-%m-%d %H:%M:%S", buf, len);
}

int ctl_format_iso_utc(uint64_t usec, char *buf, size_t len)
{
	char date[32];
	int r = format_tm(usec, true, "%Y-%m-%dT%H:%M:%S", date, sizeof(date));

	if (r < 0)
		return r;
	r = snprintf(buf, len, "%s.%06uZ", date, (unsigned int)(usec % USEC_PER_SEC));
	return r < 0 || (size_t)r >= len ? -ENOBUFS : 0;
}
