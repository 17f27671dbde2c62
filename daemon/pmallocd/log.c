/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.c - where pmallocd's own log lines go.
 *
 * Owns: the max level, the journal-or-stderr decision, the line limiter.
 * Never: allocates (lines are formatted on the stack), exits, or writes
 * structured entries about clients (journal.c does those), or blocks on
 * the journal (lines go through jwriter.c, which never waits).  Safe to
 * use inside the seccomp sandbox: write to stderr, jwriter_send().  The
 * event loop's thread only: identify.c's worker never logs.
 */
#define _GNU_SOURCE
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jwriter.h"

#define LOG_LINE_MAX 2048

static int max_level = LOG_INFO;
static bool to_stderr = true;

void log_set_max_level(int level)
{
	max_level = level;
}

bool log_to_stderr(void)
{
	return to_stderr;
}

/* JOURNAL_STREAM=DEV:INO names the stream systemd connected stderr to. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_setup(void)
{
	to_stderr = !stderr_is_journal();
}

static void log_emit(int level, int error, const char *file, int line, const char *func,
		     const char *msg)
{
	static const char ident[] = "SYSLOG_IDENTIFIER=pmallocd";
	char message[LOG_LINE_MAX + 32], prio[16], err[32], code_file[256], code_line[32],
		code_func[96];
	struct iovec items[7];
	size_t n = 0;

	if (to_stderr)
		fprintf(stderr, "pmallocd: %s\n", msg);

	snprintf(message, sizeof(message), "MESSAGE=pmallocd: %s", msg);
	snprintf(prio, sizeof(prio), "PRIORITY=%d", level);
	snprintf(code_file, sizeof(code_file), "CODE_FILE=%s", file);
	snprintf(code_line, sizeof(code_line), "CODE_LINE=%d", line);
	snprintf(code_func, sizeof(code_func), "CODE_FUNC=%s", func);
	items[n++] = (struct iovec){ message, strlen(message) };
	items[n++] = (struct iovec){ prio, strlen(prio) };
	if (error != 0) {
		snprintf(err, sizeof(err), "ERRNO=%d", error);
		items[n++] = (struct iovec){ err, strlen(err) };
	}
	items[n++] = (struct iovec){ (void *)(uintptr_t)ident, sizeof(ident) - 1 };
	items[n++] = (struct iovec){ code_file, strlen(code_file) };
	items[n++] = (struct iovec){ code_line, strlen(code_line) };
	items[n++] = (struct iovec){ code_func, strlen(code_func) };
	/* Dropped lines are counted there; on a console they were printed. */
	(void)jwriter_send(items, n, true);
}

int log_internal(int level, int error, const char *file, int line, const char *func,
		 const char *format, ...)
{
	char msg[LOG_LINE_MAX];
	va_list ap;
	int saved = errno;

	error = abs(error);
	if (level > max_level) {
		errno = saved;
		return -error;
	}
	errno = error;                   /* for %m */
	va_start(ap, format);
	vsnprintf(msg, sizeof(msg), format, ap);
	va_end(ap);
	log_emit(level, error, file, line, func, msg);
	errno = saved;
	return -error;
}

static unsigned long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

void log_limited_internal(struct log_limit *lim, int level, const char *file, int line,
			  const char *func, const char *format, ...)
{
	char msg[LOG_LINE_MAX];
	unsigned long long now;
	va_list ap;
	size_t n;

	if (level > max_level)
		return;
	now = now_us();
	if (now - lim->window_start_us >= (unsigned long long)lim->interval_s * 1000000ULL) {
		lim->window_start_us = now;
		lim->in_window = 0;
	}
	if (lim->in_window >= lim->burst) {
		lim->suppressed++;
		return;
	}
	lim->in_window++;

	va_start(ap, format);
	vsnprintf(msg, sizeof(msg), format, ap);
	va_end(ap);
	if (lim->suppressed > 0) {
		n = strlen(msg);
		snprintf(msg + n, sizeof(msg) - n, " (%llu similar lines suppressed before)",
			 lim->suppressed);
		lim->suppressed = 0;
	}
	log_emit(level, 0, file, line, func, msg);
}
