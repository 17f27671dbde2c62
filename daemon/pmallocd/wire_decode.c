/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wire_decode.c - what pmallocd checks in a client's packet before any of
 * its fields is used: framing (magic, length, version, reserved), the exact
 * size of each type a client may send, and the ranges inside a report.
 *
 * Pure: no socket, no state, no allocation, no logging (server.c counts and
 * logs what these refuse), so the fuzzer in tests/fuzz/ runs it as is.
 */
#include "wire_decode.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

/* Sizes each client-sent type must have exactly; 0 for the others. */
static const size_t client_sizes[] = {
	[PMW_HELLO] = sizeof(struct pmw_hello),
	[PMW_PROTECTED] = sizeof(struct pmw_protected),
	[PMW_REPORT] = sizeof(struct pmw_report),
	[PMW_STATUS_REQ] = sizeof(struct pmw_status_req),
	[PMW_PROTECT_REQ] = sizeof(struct pmw_protect_req),
	[PMW_RULES] = sizeof(struct pmw_rules),
	[PMW_STATUS_PID_REQ] = sizeof(struct pmw_status_pid_req),
	[PMW_EXITING] = sizeof(struct pmw_exiting),
	[PMW_NOTICE] = sizeof(struct pmw_notice),
};

static size_t expected_size(uint16_t type)
{
	return type < sizeof(client_sizes) / sizeof(client_sizes[0]) ? client_sizes[type] : 0;
}

enum wire_verdict wire_check_client(const void *buf, size_t n, char *why, size_t whylen)
{
	const struct pmw_header *h = buf;
	size_t want;

	if (n < sizeof(*h)) {
		snprintf(why, whylen, "%zu-byte packet, shorter than a header", n);
		return WIRE_MALFORMED;
	}
	if (h->magic != PMW_MAGIC) {
		snprintf(why, whylen, "bad magic 0x%08x", (unsigned)h->magic);
		return WIRE_MALFORMED;
	}
	if (h->length != n) {
		snprintf(why, whylen, "header says %u bytes, packet has %zu", (unsigned)h->length, n);
		return WIRE_MALFORMED;
	}
	if (h->version != PMW_VERSION) {
		snprintf(why, whylen, "message of protocol version %u", (unsigned)h->version);
		return WIRE_OTHER_VERSION;
	}
	if (h->reserved != 0) {
		snprintf(why, whylen, "reserved header field set");
		return WIRE_MALFORMED;
	}
	want = expected_size(h->type);
	if (want == 0) {
		snprintf(why, whylen, "sent message type %u, which clients do not send",
			 (unsigned)h->type);
		return WIRE_NOT_FROM_CLIENT;
	}
	/* A HELLO without PMW_HELLO_COMM may end before its comm. */
	if (h->type == PMW_HELLO && n == PMW_HELLO_SHORT &&
	    !(((const struct pmw_hello *)buf)->flags & PMW_HELLO_COMM))
		return WIRE_OK;
	if (n != want) {
		snprintf(why, whylen, "type %u message of %zu bytes, expected %zu", (unsigned)h->type, n,
			 want);
		return WIRE_MALFORMED;
	}
	return WIRE_OK;
}

#define FORCE_NUL(field) ((field)[sizeof(field) - 1] = '\0')

int wire_check_report(struct pmw_report *m)
{
	if (m->mode != PMW_MODE_ENFORCE && m->mode != PMW_MODE_AUDIT)
		return -EINVAL;
	if (m->cause > PMW_CAUSE_OTHER_THREAD)
		return -EINVAL;
	FORCE_NUL(m->kernel_call);
	FORCE_NUL(m->role);
	if (m->n_frames > PMW_FRAMES || m->n_modules > PMW_MODULES)
		return -EINVAL;
	for (uint32_t i = 0; i < m->n_frames; i++)
		if (m->frames[i].module != PMW_NO_MODULE && m->frames[i].module >= m->n_modules)
			return -EINVAL;
	for (uint32_t i = 0; i < m->n_modules; i++) {
		if (m->modules[i].build_id_len > PMW_BUILD_ID)
			return -EINVAL;
		FORCE_NUL(m->modules[i].path);
	}
	FORCE_NUL(m->policy);
	FORCE_NUL(m->pool);
	FORCE_NUL(m->object_site);
	FORCE_NUL(m->fault_symbol);
	FORCE_NUL(m->exe);
	return 0;
}

/* A row's kind and state must fit the table it is in. */
static bool row_fits(uint32_t what, const struct pmw_row *r)
{
	if (what == PMW_RULES_SITES)
		return r->kind == PMW_ROW_CALL_SITE && (r->state == PMW_ROW_COUNTED || r->state == PMW_ROW_LATE);
	if (r->kind != PMW_ROW_SITE && r->kind != PMW_ROW_WRAPPER && r->kind != PMW_ROW_ON_CALL)
		return false;
	return r->state == PMW_ROW_RESOLVED || r->state == PMW_ROW_NO_FUNCTION ||
	       r->state == PMW_ROW_NO_OFFSET || r->state == PMW_ROW_NOT_LOADED || r->state == PMW_ROW_DROPPED;
}

int wire_check_rules(struct pmw_rules *m)
{
	uint32_t unresolved = 0;

	if (m->what != PMW_RULES_RULES && m->what != PMW_RULES_SITES)
		return -EINVAL;
	if (m->n_rows > PMW_ROWS || m->n_rows > m->total || m->unresolved > m->total)
		return -EINVAL;
	FORCE_NUL(m->policy);
	for (uint32_t i = 0; i < m->n_rows; i++) {
		if (!row_fits(m->what, &m->rows[i]))
			return -EINVAL;
		unresolved += m->rows[i].state == PMW_ROW_NO_FUNCTION || m->rows[i].state == PMW_ROW_NO_OFFSET ||
			      m->rows[i].state == PMW_ROW_DROPPED;
		FORCE_NUL(m->rows[i].pool);
		FORCE_NUL(m->rows[i].text);
		if (!m->rows[i].pool[0] || !m->rows[i].text[0])
			return -EINVAL;
	}
	return unresolved > m->unresolved ? -EINVAL : 0;
}

static int check_protected(struct pmw_protected *m)
{
	FORCE_NUL(m->policy);
	FORCE_NUL(m->pool);
	FORCE_NUL(m->trigger);
	return m->pool[0] ? 0 : -EINVAL;
}

int wire_check_fields(void *buf, char *why, size_t whylen)
{
	const struct pmw_header *h = buf;
	const char *bad = NULL;

	if (h->type == PMW_PROTECTED && check_protected(buf) < 0)
		bad = "PROTECTED without a pool name";
	else if (h->type == PMW_REPORT && wire_check_report(buf) < 0)
		bad = "REPORT with out-of-range fields";
	else if (h->type == PMW_RULES && wire_check_rules(buf) < 0)
		bad = "RULES with out-of-range fields";
	else if (h->type == PMW_NOTICE && (!((const struct pmw_notice *)buf)->what ||
					   (((const struct pmw_notice *)buf)->what & ~PMW_NOTICE_ALL) ||
					   ((const struct pmw_notice *)buf)->reserved))
		bad = "NOTICE with unknown bits";
	if (!bad)
		return 0;
	snprintf(why, whylen, "%s", bad);
	return -EINVAL;
}
