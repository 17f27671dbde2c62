/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.h - pmallocd's own log lines, systemd style.
 *
 * log_*_errno(error, ...) logs and returns -abs(error), so a caller can
 * "return log_error_errno(r, "...: %m");" in one step (%m prints error).
 * Structured entries about client processes are journal.c's business, not
 * this file's.
 */
#ifndef PMALLOCD_LOG_H
#define PMALLOCD_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Decide where lines go: always the journal; stderr too unless stderr is
 * already connected to the journal (JOURNAL_STREAM). */
void log_setup(void);
void log_set_max_level(int level);
/* True when lines also go to stderr (a console, not the journal). */
bool log_to_stderr(void);

int log_internal(int level, int error, const char *file, int line, const char *func,
		 const char *format, ...) __attribute__((format(printf, 6, 7)));

#define log_full_errno(level, error, ...) \
	log_internal((level), (error), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_full(level, ...) ((void)log_full_errno((level), 0, __VA_ARGS__))

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)

/* Like log_full(), but at most burst lines per interval for one limiter;
 * the lines held back are counted and named by the next line let through.
 * For events a client can cause at will (drops, refusals). */
struct log_limit {
	unsigned int interval_s;
	unsigned int burst;
	unsigned long long window_start_us;
	unsigned int in_window;
	unsigned long long suppressed;
};
#define LOG_LIMIT_INIT(interval, n) { .interval_s = (interval), .burst = (n) }

void log_limited_internal(struct log_limit *lim, int level, const char *file, int line,
			  const char *func, const char *format, ...)
	__attribute__((format(printf, 6, 7)));
#define log_limited(lim, level, ...) \
	log_limited_internal((lim), (level), __FILE__, __LINE__, __func__, __VA_ARGS__)

#endif
