/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * repeat.c - summaries of events repeated by new processes of one
 * executable (see repeat.h).
 *
 * Owns: the table of sites (REPEAT_KEYS, a fixed array: a site is found by
 * a linear walk of at most that many 64-bit keys, only for entries the
 * per-process limit let through), each site's run, count and timer, the
 * summary entry.
 * Never: drops a count (a site evicted for a new one writes its summary
 * first), reads anything of the process but the registry entry, or keeps
 * a pointer to it (what a summary names is copied).
 */
#define _GNU_SOURCE
#include "repeat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "log.h"
#include "registry.h"
#include "strbuf.h"

#define USEC_PER_SEC 1000000ULL

struct repeat_site {
	struct repeats *owner;
	bool used;
	enum repeat_kind kind;
	uint64_t key;
	uint64_t last_seen;              /* CLOCK_MONOTONIC usec */
	uint64_t window_end;             /* the current interval's end */
	unsigned int interval_s;         /* its length: doubles while the run goes on */
	pid_t admitted[REPEAT_FIRST];    /* the run's first processes: theirs are written */
	unsigned int n_admitted;
	uint64_t dropped;                /* not written since the last summary */
	uint64_t processes;              /* of those, how many processes (pid changes) */
	pid_t last_pid;
	uid_t uid;
	char unit[256];                  /* systemd's unit of the run's first process; "" none */
	char exe[ESCAPED_SIZE(PMW_PATH)];
	char policy[ESCAPED_SIZE(PMW_NAME)];
	char pool[ESCAPED_SIZE(PMW_NAME)];
	char where[ESCAPED_SIZE(PMW_PATH) + 24];  /* module+0xoffset of the faulting instruction */
	sd_event_source *timer;
};

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return (h ^ 0xff) * 1099511628211ULL;
}

/* The faulting instruction as the same text in every process of the
 * executable (load addresses differ): module+0xoffset, the main program's
 * module named by its exe; else the raw address. */
static void fault_where(const struct proc_entry *e, const struct pmw_report *rep, char *buf, size_t size)
{
	uint32_t idx = PMW_NO_MODULE;
	uint64_t off = 0;
	char path[PMW_PATH];

	if (rep->n_frames > 0 && rep->frames[0].ip == rep->fault_ip && rep->frames[0].module < rep->n_modules) {
		idx = rep->frames[0].module;
		off = rep->frames[0].offset;
	} else {
		for (uint32_t i = 0; i < rep->n_modules; i++)
			if (rep->modules[i].base <= rep->fault_ip &&
			    (idx == PMW_NO_MODULE || rep->modules[i].base > rep->modules[idx].base))
				idx = i;
		if (idx != PMW_NO_MODULE)
			off = rep->fault_ip - rep->modules[idx].base;
	}
	if (idx == PMW_NO_MODULE) {
		snprintf(buf, size, "0x%" PRIx64, rep->fault_ip);
		return;
	}
	str_copy(path, sizeof(path), rep->modules[idx].path);
	if (!path[0]) {
		snprintf(buf, size, "%s+0x%" PRIx64, proc_entry_exe(e), off);
		return;
	}
	text_escape(buf, size, path);
	snprintf(buf + strlen(buf), size - strlen(buf), "+0x%" PRIx64, off);
}

static void summary(struct repeat_site *s)
{
	struct jentry j;

	if (s->dropped == 0)
		return;
	/* Not charged to the user's journal budget: at most one per site and
	 * interval, and it carries counts nothing else keeps. */
	jentry_init(&j, MID_DROPPED, LOG_WARNING);
	jentry_about(&j, s->uid);
	jentry_add(&j, "MESSAGE=pmalloc: %s: %" PRIu64 " more violations at %s (pool \"%s\"%s%s%s) from %"
		   PRIu64 " %s not logged in %u s (a crash loop? the first %u processes' are, then one"
		   " summary per interval, doubling up to %u s)", s->exe, s->dropped, s->where, s->pool,
		   s->policy[0] ? " of policy \"" : "", s->policy, s->policy[0] ? "\"" : "", s->processes,
		   s->processes == 1 ? "process" : "processes", s->interval_s, REPEAT_FIRST,
		   REPEAT_INTERVAL_MAX_S);
	jentry_add(&j, "OBJECT_PID=%d", (int)s->last_pid);
	jentry_add(&j, "PMALLOC_DROPPED=%" PRIu64, s->dropped);
	jentry_add(&j, "PMALLOC_DROPPED_KIND=repeat");
	jentry_add(&j, "PMALLOC_REPEAT_OF=violation");
	jentry_add(&j, "PMALLOC_PROCESSES=%" PRIu64, s->processes);
	jentry_add(&j, "PMALLOC_EXE=%s", s->exe);
	jentry_add(&j, "PMALLOC_POLICY=%s", s->policy);
	jentry_add(&j, "PMALLOC_POOL=%s", s->pool);
	jentry_add(&j, "PMALLOC_FAULT_SITE=%s", s->where);
	jentry_add(&j, "PMALLOC_UID=%u", (unsigned)s->uid);
	if (s->unit[0])
		jentry_add(&j, "OBJECT_SYSTEMD_UNIT=%s", s->unit);
	jentry_add(&j, "PMALLOC_RATE_BURST=%u", REPEAT_FIRST);
	jentry_add(&j, "PMALLOC_RATE_INTERVAL_S=%u", s->interval_s);
	(void)jentry_send(&j);
	s->owner->summarised += s->dropped;
	s->dropped = 0;
	s->processes = 0;
}

static void site_free(struct repeat_site *s)
{
	struct repeats *r = s->owner;

	summary(s);
	s->timer = sd_event_source_disable_unref(s->timer);
	memset(s, 0, sizeof(*s));
	s->owner = r;
}

/* The end of an interval: a summary and a longer interval when the run
 * went on, the end of the run when it did not. */
static int on_window_end(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct repeat_site *s = userdata;

	if (s->dropped == 0) {
		site_free(s);
		return 0;
	}
	summary(s);
	s->interval_s = s->interval_s * 2 > REPEAT_INTERVAL_MAX_S ? REPEAT_INTERVAL_MAX_S : s->interval_s * 2;
	s->window_end = usec + (uint64_t)s->interval_s * USEC_PER_SEC;
	(void)sd_event_source_set_time(src, s->window_end);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

void repeats_init(struct repeats *r, sd_event *event)
{
	memset(r, 0, sizeof(*r));
	r->event = event;
	r->base_s = 10;
}

void repeats_done(struct repeats *r)
{
	if (r->sites)
		for (size_t i = 0; i < REPEAT_KEYS; i++)
			site_free(&r->sites[i]);
	free(r->sites);
	r->sites = NULL;
}

void repeats_set_interval(struct repeats *r, unsigned int interval_s)
{
	r->base_s = interval_s;
}

bool repeat_admit(struct repeats *r, enum repeat_kind kind, const struct proc_entry *e,
		  const struct pmw_report *rep, const char *policy, const char *pool)
{
	struct repeat_site *s = NULL, *stalest = NULL;
	char where[sizeof(s->where)] = "";
	uint64_t now = 0, key;
	int rr;

	if (r->base_s == 0 || sd_event_now(r->event, CLOCK_MONOTONIC, &now) < 0)
		return true;
	if (!r->sites) {
		r->sites = calloc(REPEAT_KEYS, sizeof(*r->sites));
		if (!r->sites)
			return true;
		for (size_t i = 0; i < REPEAT_KEYS; i++)
			r->sites[i].owner = r;
	}
	if (kind == REPEAT_VIOLATION && rep)
		fault_where(e, rep, where, sizeof(where));
	/* Keyed by the person and the unit too: one user's crash loop of a
	 * program must never fold another's (root's service) violation into a
	 * summary under her uid. */
	char person[16];
	snprintf(person, sizeof(person), "%u", (unsigned)proc_entry_person(e));
	key = fnv(fnv(fnv(fnv(fnv(fnv(1469598103934665603ULL + kind, proc_entry_exe(e)), policy),
				  pool ? pool : ""), where), person),
		  e->object.unit ? e->object.unit : "");

	for (size_t i = 0; i < REPEAT_KEYS && !s; i++) {
		struct repeat_site *c = &r->sites[i];

		if (c->used && c->kind == kind && c->key == key && c->uid == proc_entry_person(e))
			s = c;
		else if (!stalest || !c->used || (stalest->used && c->last_seen < stalest->last_seen))
			stalest = c;
	}
	if (!s) {
		s = stalest;
		if (s->used)
			site_free(s);            /* its counts go out in its summary */
		s->used = true;
		s->kind = kind;
		s->key = key;
		s->interval_s = r->base_s > REPEAT_INTERVAL_MAX_S ? REPEAT_INTERVAL_MAX_S : r->base_s;
		s->window_end = now + (uint64_t)s->interval_s * USEC_PER_SEC;
		s->uid = proc_entry_person(e);
		str_copy(s->exe, sizeof(s->exe), proc_entry_exe(e));
		str_copy(s->unit, sizeof(s->unit), e->object.unit ? e->object.unit : "");
		str_copy(s->policy, sizeof(s->policy), policy);
		str_copy(s->pool, sizeof(s->pool), pool ? pool : "");
		str_copy(s->where, sizeof(s->where), where);
		rr = sd_event_add_time(r->event, &s->timer, CLOCK_MONOTONIC, s->window_end, 100 * 1000,
				       on_window_end, s);
		if (rr < 0) {
			log_warning_errno(rr, "cannot arm the repeat timer: %m");
			s->timer = NULL;
			s->used = false;
			return true;             /* unlimited rather than uncounted */
		}
	}
	s->last_seen = now;
	for (unsigned int i = 0; i < s->n_admitted; i++)
		if (s->admitted[i] == e->pid)
			return true;     /* held by the per-process limit alone */
	if (s->n_admitted < REPEAT_FIRST) {
		s->admitted[s->n_admitted++] = e->pid;
		s->last_pid = e->pid;
		return true;
	}
	if (s->dropped == 0 || s->last_pid != e->pid)
		s->processes++;
	s->last_pid = e->pid;
	s->dropped++;
	return false;
}
