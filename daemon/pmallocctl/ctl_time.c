/*
 * ctl_time.c - the TIME arguments of pmallocctl and the timestamps it prints.
 *
 * Owns the accepted forms of TIME, journalctl's (documented in pmallocctl(8);
 * keep both in step): "YYYY-MM-DD[ HH:MM[:SS]]", "HH:MM[:SS]" (today),
 * "today"/"yesterday"/"tomorrow" in the local time zone or, with a trailing
 * " UTC", in UTC; "now"; a time span back from now ("-1h30min",
 * "5 min ago") or ahead ("+10min"); "@SECONDS[.FRACTION]" since the epoch.
 * Parsed here rather than by a library so that the forms are exactly these
 * and a bad one is refused, never guessed at.  The parser never reads
 * the clock (the current time is a parameter, ctl_now_usec() apart); nothing
 * here prints.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

#define USEC_PER_SEC UINT64_C(1000000)

uint64_t ctl_now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

/* Exactly n decimal digits at *p, into *ret; advances *p. */
static bool take_digits(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

/* The local time tm (tm_isdst -1: let the zone decide) as µs since the epoch;
 * instants before the epoch become 0 (the journal holds nothing older). */
static int local_to_usec(struct tm *tm, bool utc, uint64_t *ret_usec)
{
	time_t t;

	tm->tm_isdst = -1;
	errno = 0;
	t = utc ? timegm(tm) : mktime(tm);
	if (t == (time_t)-1 && errno != 0)
		return -ERANGE;
	*ret_usec = t < 0 ? 0 : (uint64_t)t * USEC_PER_SEC;
	return 0;
}

static int days_in_month(int year, int month)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return month == 2 && leap ? 29 : days[month - 1];
}

/* "HH:MM" or "HH:MM:SS" at *p into tm; advances *p. */
static bool take_clock(const char **p, struct tm *tm)
{
	int hour, min, sec = 0;

	if (!take_digits(p, 2, &hour) || *(*p)++ != ':' || !take_digits(p, 2, &min))
		return false;
	if (**p == ':') {
		(*p)++;
		if (!take_digits(p, 2, &sec))
			return false;
	}
	tm->tm_hour = hour;
	tm->tm_min = min;
	tm->tm_sec = sec;
	return true;
}

/* "YYYY-MM-DD", "YYYY-MM-DD HH:MM", "YYYY-MM-DD HH:MM:SS", local time or UTC. */
static int parse_date(const char *s, bool utc, uint64_t *ret_usec)
{
	struct tm tm = { 0 };
	int year, month, day;

	if (!take_digits(&s, 4, &year) || *s++ != '-' || !take_digits(&s, 2, &month) ||
	    *s++ != '-' || !take_digits(&s, 2, &day))
		return -EINVAL;
	if (*s == ' ') {
		s++;
		if (!take_clock(&s, &tm))
			return -EINVAL;
	}
	if (*s != '\0')
		return -EINVAL;
	if (year < 1970 || month < 1 || month > 12 || day < 1 ||
	    day > days_in_month(year, month) || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
		return -ERANGE;
	tm.tm_year = year - 1900;
	tm.tm_mon = month - 1;
	tm.tm_mday = day;
	return local_to_usec(&tm, utc, ret_usec);
}

/* The day of now_usec, days_from days later (negative: earlier), at
 * clock (NULL: midnight), local time or UTC. */
static int day_at(uint64_t now_usec, int days_from, const char *clock, bool utc, uint64_t *ret_usec)
{
	time_t now = (time_t)(now_usec / USEC_PER_SEC);
	struct tm tm, at = { 0 };

	if (clock && (!take_clock(&clock, &at) || *clock != '\0'))
		return -EINVAL;
	if (at.tm_hour > 23 || at.tm_min > 59 || at.tm_sec > 59)
		return -ERANGE;
	if (!(utc ? gmtime_r(&now, &tm) : localtime_r(&now, &tm)))
		return -ERANGE;
	tm.tm_hour = at.tm_hour;
	tm.tm_min = at.tm_min;
	tm.tm_sec = at.tm_sec;
	tm.tm_mday += days_from;             /* mktime() carries into month and year */
	return local_to_usec(&tm, utc, ret_usec);
}

/* "SECONDS" or "SECONDS.FRACTION" (at most 6 fraction digits). */
static int parse_epoch(const char *s, uint64_t *ret_usec)
{
	uint64_t sec = 0, frac = 0, scale = USEC_PER_SEC;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (sec > (UINT64_MAX / USEC_PER_SEC - 9) / 10)
			return -ERANGE;
		sec = sec * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++) {
			if (scale == 1)
				return -EINVAL;
			scale /= 10;
			frac += (uint64_t)(*s - '0') * scale;
		}
	}
	if (*s != '\0')
		return -EINVAL;
	*ret_usec = sec * USEC_PER_SEC + frac;
	return 0;
}

/* A time span as systemd writes them: one or more "N[ ]unit" ("1h30min",
 * "5 min", "2 weeks 1d"); a number without a unit is seconds.  0 and
 * *ret_usec, -EINVAL or -ERANGE. */
static int parse_span(const char *s, uint64_t *ret_usec)
{
	static const struct {
		const char *name;
		uint64_t usec;
	} units[] = {
		{ "us", 1 }, { "usec", 1 },
		{ "ms", 1000 }, { "msec", 1000 },
		{ "s", USEC_PER_SEC }, { "sec", USEC_PER_SEC },
		{ "second", USEC_PER_SEC }, { "seconds", USEC_PER_SEC },
		{ "m", 60 * USEC_PER_SEC }, { "min", 60 * USEC_PER_SEC },
		{ "minute", 60 * USEC_PER_SEC }, { "minutes", 60 * USEC_PER_SEC },
		{ "h", 3600 * USEC_PER_SEC }, { "hr", 3600 * USEC_PER_SEC },
		{ "hour", 3600 * USEC_PER_SEC }, { "hours", 3600 * USEC_PER_SEC },
		{ "d", 86400 * USEC_PER_SEC }, { "day", 86400 * USEC_PER_SEC },
		{ "days", 86400 * USEC_PER_SEC },
		{ "w", 7 * 86400 * USEC_PER_SEC }, { "week", 7 * 86400 * USEC_PER_SEC },
		{ "weeks", 7 * 86400 * USEC_PER_SEC },
		{ "M", 2629800 * USEC_PER_SEC }, { "month", 2629800 * USEC_PER_SEC },
		{ "months", 2629800 * USEC_PER_SEC },
		{ "y", 31557600 * USEC_PER_SEC }, { "year", 31557600 * USEC_PER_SEC },
		{ "years", 31557600 * USEC_PER_SEC },
	};
	uint64_t total = 0;
	bool any = false;

	for (;;) {
		uint64_t n = 0, unit = USEC_PER_SEC;
		size_t len;

		while (*s == ' ')
			s++;
		if (*s == '\0')
			break;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++) {
			if (n > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			n = n * 10 + (uint64_t)(*s - '0');
		}
		while (*s == ' ')
			s++;
		len = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
		if (len > 0) {
			size_t i;

			for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
				if (strlen(units[i].name) == len && memcmp(s, units[i].name, len) == 0)
					break;
			if (i == sizeof(units) / sizeof(units[0]))
				return -EINVAL;
			unit = units[i].usec;
			s += len;
		}
		if (n > UINT64_MAX / unit || total > UINT64_MAX - n * unit)
			return -ERANGE;
		total += n * unit;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*ret_usec = total;
	return 0;
}

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len > n && memcmp(s + len - n, suffix, n) == 0;
}

int ctl_parse_time(const char *arg, uint64_t now_usec, uint64_t *ret_usec)
{
	char buf[128];
	size_t len = strlen(arg);
	bool utc = false;
	uint64_t span;
	const char *s = buf;
	int r;

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, arg, len + 1);
	if (has_suffix(buf, len, " UTC")) {
		utc = true;
		len -= 4;
		buf[len] = '\0';
	}
	if (strcmp(s, "now") == 0) {
		*ret_usec = now_usec;
		return 0;
	}
	if (strcmp(s, "today") == 0)
		return day_at(now_usec, 0, NULL, utc, ret_usec);
	if (strcmp(s, "yesterday") == 0)
		return day_at(now_usec, -1, NULL, utc, ret_usec);
	if (strcmp(s, "tomorrow") == 0)
		return day_at(now_usec, 1, NULL, utc, ret_usec);
	if (s[0] == '@')
		return utc ? -EINVAL : parse_epoch(s + 1, ret_usec);
	if (s[0] == '-' || s[0] == '+' || has_suffix(s, len, " ago")) {
		bool back = s[0] != '+';

		if (utc)
			return -EINVAL;
		if (s[0] == '-' || s[0] == '+')
			s++;
		else
			buf[len - 4] = '\0';
		r = parse_span(s, &span);
		if (r < 0)
			return r;
		if (back)
			*ret_usec = span > now_usec ? 0 : now_usec - span;
		else if (span > UINT64_MAX - now_usec)
			return -ERANGE;
		else
			*ret_usec = now_usec + span;
		return 0;
	}
	if (len >= 5 && s[2] == ':')
		return day_at(now_usec, 0, s, utc, ret_usec);
	return parse_date(s, utc, ret_usec);
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
