/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daemon_wire.c - libFuzzer harness for pmallocd's checks on what a client
 * sends (daemon/pmallocd/wire_decode.c).
 *
 * Input: one packet, as recvmsg() would leave it in the daemon's buffer.
 * Besides memory errors, it checks the decoder's contract: a passed message
 * has the exact size of its type (a HELLO: or the short one, without a
 * comm), a passed report has its counts, cause and
 * module indices in range and every string NUL-terminated, a passed rules
 * message its counts in bounds, its rows' kinds fitting their table and
 * their strings NUL-terminated and not empty; a refusal says why.  A passed
 * report is then formatted (common/proto/violation_fmt.c, as pmallocd does): the
 * stderr line is one line, the fields one a line, with no control byte.
 */
#include <stdlib.h>
#include <string.h>

#include "violation_fmt.h"
#include "wire_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

static void check_report(struct pmw_report *m)
{
	if (wire_check_report(m) < 0)
		return;
	if (m->n_frames > PMW_FRAMES || m->n_modules > PMW_MODULES ||
	    (m->mode != PMW_MODE_ENFORCE && m->mode != PMW_MODE_AUDIT))
		abort();
	for (uint32_t i = 0; i < m->n_frames; i++)
		if (m->frames[i].module != PMW_NO_MODULE && m->frames[i].module >= m->n_modules)
			abort();
	for (uint32_t i = 0; i < m->n_modules; i++)
		if (!TERMINATED(m->modules[i].path) || m->modules[i].build_id_len > PMW_BUILD_ID)
			abort();
	if (!TERMINATED(m->policy) || !TERMINATED(m->pool) || !TERMINATED(m->object_site) ||
	    !TERMINATED(m->fault_symbol) || !TERMINATED(m->exe) || !TERMINATED(m->kernel_call) ||
	    m->cause > PMW_CAUSE_OTHER_THREAD)
		abort();
}

/* No control byte but the newlines that end lines; at most max_lines. */
static void check_text(const char *t, int max_lines)
{
	int lines = 0;

	for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
		if (*p == '\n')
			lines++;
		else if (*p < 0x20 || *p == 0x7f)
			abort();
	}
	if (lines > max_lines)
		abort();
}

static void format_report(const struct pmw_report *m)
{
	static char out[32768];
	struct violation_shown shown = { .pid = 1, .exe = "/bin/x" };
	struct fmt f;

	fmt_init(&f, out, sizeof(out));
	violation_fmt_line(&f, m);
	check_text(fmt_cstr(&f), 1);
	fmt_init(&f, out, sizeof(out));
	violation_fmt_fields(&f, m, &shown);
	check_text(fmt_cstr(&f), 20);
}

static void check_rules(struct pmw_rules *m)
{
	uint32_t unresolved = 0;

	if (wire_check_rules(m) < 0)
		return;
	if ((m->what != PMW_RULES_RULES && m->what != PMW_RULES_SITES) || m->n_rows > PMW_ROWS ||
	    m->n_rows > m->total || m->unresolved > m->total || !TERMINATED(m->policy))
		abort();
	for (uint32_t i = 0; i < m->n_rows; i++) {
		const struct pmw_row *r = &m->rows[i];

		if (!TERMINATED(r->pool) || !TERMINATED(r->text) || !r->pool[0] || !r->text[0])
			abort();
		if ((m->what == PMW_RULES_SITES) != (r->kind == PMW_ROW_CALL_SITE) ||
		    (m->what == PMW_RULES_SITES) != (r->state == PMW_ROW_COUNTED || r->state == PMW_ROW_LATE))
			abort();
		unresolved += r->state == PMW_ROW_NO_FUNCTION || r->state == PMW_ROW_NO_OFFSET ||
			      r->state == PMW_ROW_DROPPED;
	}
	if (unresolved > m->unresolved)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[PMW_SYM] = "";
	struct pmw_header *h;
	void *buf;

	/* The daemon refuses bigger packets before decoding (MSG_TRUNC). */
	if (size > PMW_MAX_MSG)
		return 0;
	/* Exactly size bytes, so that ASan sees any read past the packet. */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	h = buf;
	switch (wire_check_client(buf, size, why, sizeof(why))) {
	case WIRE_OK:
		if (size < sizeof(*h) || h->length != size || h->version != PMW_VERSION ||
		    h->reserved != 0)
			abort();
		if (h->type == PMW_REPORT) {
			if (size != sizeof(struct pmw_report))
				abort();
			check_report(buf);
			if (wire_check_report(buf) == 0)
				format_report(buf);
		}
		if (h->type == PMW_RULES) {
			if (size != sizeof(struct pmw_rules))
				abort();
			check_rules(buf);
		}
		/* A HELLO is whole, or short without the flag that says its
		 * comm is there (pmallocd reads comm only under the flag). */
		if (h->type == PMW_HELLO && size != sizeof(struct pmw_hello) &&
		    (size != PMW_HELLO_SHORT || (((const struct pmw_hello *)buf)->flags & PMW_HELLO_COMM)))
			abort();
		/* What the served state's dispatch runs first: PMW_PROTECTED's
		 * strings end inside their fields and name a pool when it passes. */
		why[0] = '\0';
		if (wire_check_fields(buf, why, sizeof(why)) < 0) {
			if (!why[0] || !memchr(why, '\0', sizeof(why)))
				abort();
		} else if (h->type == PMW_PROTECTED) {
			const struct pmw_protected *p = buf;

			if (!p->pool[0] || !memchr(p->pool, '\0', sizeof(p->pool)) ||
			    !memchr(p->policy, '\0', sizeof(p->policy)) ||
			    !memchr(p->trigger, '\0', sizeof(p->trigger)))
				abort();
		}
		break;
	default:
		if (!why[0] || !memchr(why, '\0', sizeof(why)))
			abort();
		break;
	}
	free(buf);
	return 0;
}
