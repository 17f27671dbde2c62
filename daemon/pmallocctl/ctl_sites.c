/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_sites.c - pmallocctl sites PID: the live per-site table of a process
 * under a learn policy.  Sends learn-flush through pmallocd, then reads
 * the entries that process writes (MESSAGE_ID MID_LEARNED,
 * reason learn-flush, from the request on) and prints them, largest
 * first.  Reads the journal only.
 * Believes only rows written by the process they name (journald's
 * trusted _PID is OBJECT_PID) or by pmallocd (vio_by_pmallocd(): root's
 * process named pmallocd or of pmallocd.service, as violations does):
 * any local process can write an entry with any OBJECT_PID; those rows
 * are not shown, and stderr says how many there were.
 */
#define _GNU_SOURCE
#include "ctl.h"
#include "ctl_client.h"
#include "msgid.h"
#include "ctl_escape.h"
#include "ctl_learn_flush.h"
#include "ctl_learned.h"
#include "ctl_time.h"
#include "ctl_vio.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <time.h>

struct row {
	char *pool, *site;
	uint64_t objects, bytes;
	bool written;
};


static void rows_free(struct row *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++) {
		free(rows[i].pool);
		free(rows[i].site);
	}
	free(rows);
}

/* Was the entry at j's cursor written by pid itself or by pmallocd (by
 * vio_by_pmallocd(), the rule of violations too)?  Fields with '_' come
 * from journald, not from the writer. */
static bool written_by_pid_or_daemon(sd_journal *j, int32_t pid)
{
	static const char *const names[] = { "_PID", "_UID", "_COMM", "_EXE", "_SYSTEMD_UNIT" };
	char *v[5], want[16];
	bool ok;

	if (ctl_learned_fields(j, names, 5, v) < 0)
		return false;
	snprintf(want, sizeof(want), "%d", (int)pid);
	ok = strcmp(v[0], want) == 0 || vio_by_pmallocd(v[1], v[2], v[3], v[4]);
	for (size_t k = 0; k < 5; k++)
		free(v[k]);
	return ok;
}

/* The entries of pid since usec; the count in *ret_n, those written by
 * another process (not shown) in *ret_forged. */
static int read_rows(int32_t pid, uint64_t since, struct row **ret, size_t *ret_n, size_t *ret_forged)
{
	sd_journal *j;
	char match[64];
	struct row *rows = NULL;
	size_t n = 0, cap = 0, forged = 0;
	int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
	if (r < 0)
		return r;
	snprintf(match, sizeof(match), "OBJECT_PID=%d", (int)pid);
	if ((r = sd_journal_add_match(j, "MESSAGE_ID=" MID_LEARNED, 0)) < 0 ||
	    (r = sd_journal_add_match(j, match, 0)) < 0 ||
	    (r = sd_journal_add_match(j, "PMALLOC_LEARN_REASON=learn-flush", 0)) < 0 ||
	    (r = sd_journal_seek_realtime_usec(j, since)) < 0) {
		sd_journal_close(j);
		return r;
	}
	while ((r = sd_journal_next(j)) > 0) {
		if (!written_by_pid_or_daemon(j, pid)) {
			forged++;
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct row *nr = realloc(rows, nc * sizeof(*nr));
			if (!nr) {
				r = -ENOMEM;
				break;
			}
			rows = nr;
			cap = nc;
		}
		struct row *w = &rows[n++];
		w->pool = ctl_learned_field(j, "PMALLOC_POOL");
		w->site = ctl_learned_field(j, "PMALLOC_SITE");
		w->objects = ctl_learned_u64(j, "PMALLOC_OBJECTS");
		w->bytes = ctl_learned_u64(j, "PMALLOC_BYTES");
		w->written = ctl_learned_u64(j, "PMALLOC_WRITTEN") == 1;
		if (!w->pool || !w->site) {
			r = -ENOMEM;
			break;
		}
	}
	sd_journal_close(j);
	if (r < 0) {
		rows_free(rows, n);
		return r;
	}
	*ret = rows;
	*ret_n = n;
	*ret_forged = forged;
	return 0;
}

static int by_bytes(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->site, y->site);
}

int ctl_cmd_sites(int argc, char **argv)
{
	uint64_t since = ctl_now_usec();
	char *text = NULL;
	int32_t pid;
	int r = ctl_learn_flush_ask(argc, argv, "sites", &pid, &text);

	if (r >= 0)
		return r;
	if (strncmp(text, "ok:", 3) != 0)
		return ctl_put_answer(text);    /* "pmallocctl: REASON", as learn-flush says it */
	free(text);
	/* The process writes its entries when its orders thread wakes: wait
	 * (at most 3 s) until two looks 200 ms apart see the same number. */
	struct row *rows = NULL;
	size_t n = 0, last = 0, forged = 0;
	for (int tries = 0; tries < 15; tries++) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		rows_free(rows, n);
		rows = NULL;
		n = 0;
		r = read_rows(pid, since, &rows, &n, &forged);
		if (r < 0) {
			fprintf(stderr, CTL_NAME ": sites: cannot read the journal: %s\n", strerror(-r));
			return CTL_EXIT_FAILURE;
		}
		if (n && n == last)
			break;
		last = n;
	}
	if (forged > 0)
		fprintf(stderr, CTL_NAME ": sites: %zu %s naming PID %d written by another process, not shown\n",
			forged, forged == 1 ? "entry" : "entries", (int)pid);
	if (n == 0) {
		fprintf(stderr, CTL_NAME ": sites: PID %d wrote no sites to the journal\n", (int)pid);
		rows_free(rows, n);
		return CTL_EXIT_FAILURE;
	}
	qsort(rows, n, sizeof(*rows), by_bytes);
	printf("%-16s %-40s %10s %12s %s\n", "POOL", "SITE", "OBJECTS", "BYTES", "WRITTEN");
	for (size_t i = 0; i < n; i++) {
		ctl_put_str(stdout, rows[i].pool, 0);
		printf("%*s ", rows[i].pool[0] && strlen(rows[i].pool) < 16 ? (int)(16 - strlen(rows[i].pool)) : 0, "");
		ctl_put_str(stdout, rows[i].site, 0);
		printf("%*s ", strlen(rows[i].site) < 40 ? (int)(40 - strlen(rows[i].site)) : 0, "");
		printf("%10" PRIu64 " %12" PRIu64 " %s\n", rows[i].objects, rows[i].bytes,
		       rows[i].written ? "yes" : "no");
	}
	rows_free(rows, n);
	return fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}
