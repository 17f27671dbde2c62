/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_image.c - a policy compiled once into its image, and the checks
 * every image passes before anything reads it (policy_image.h).
 *
 * Owns the image format: policy_image_compile() is the only writer (pmallocd
 * compiles what it hands out, at load; the shim compiles its policy file
 * with the same code when no daemon answers), policy_image_validate() the
 * only gate (the shim validates what it received, and its own copy, like a
 * wire message).
 *
 * Never prints, never keeps state, never calls into libconfig; compile
 * allocates with malloc (never from a signal handler, and in the shim only
 * under its re-entrancy guard), validate allocates nothing and makes no
 * system call.
 */
#include "policy_image.h"
#include "../proto/role.h"   /* relative: test programs compile this file alone */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GLOB_MAX 255                   /* as the parser allows */
#define BUILD_ID_MAX 128
#define DURATION_MAX_NS (UINT64_C(24) * 3600 * 1000000000)
#define BURST_MAX 1000000u
#define INTERVAL_MAX_S 86400u

/* ---- compile ---- */

/* The last strings added are kept, and a string equal to one of them is
 * not added again: a proposal's offset sites repeat their object and its
 * build-id, site after site (redis: 807 sites, 85 KiB of image written
 * out, 45 KiB shared; an image must fit a message of PMW_MAX_MSG). */
#define STRTAB_RECENT 8

struct strtab {
	char *buf;
	size_t len, cap;
	int r;                             /* the first error, sticky */
	struct pimg_str recent[STRTAB_RECENT];
	unsigned n_recent;
};

static struct pimg_str strtab_add(struct strtab *t, const char *s)
{
	struct pimg_str out = { PIMG_NONE, 0 };
	if (!s || t->r < 0)
		return out;
	size_t n = strlen(s);
	for (unsigned i = 0; i < t->n_recent && i < STRTAB_RECENT; i++)
		if (t->recent[i].len == n && memcmp(t->buf + t->recent[i].off, s, n) == 0)
			return t->recent[i];
	if (n >= PIMG_MAX || t->len + n + 1 > PIMG_MAX) {
		t->r = -E2BIG;
		return out;
	}
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 1024;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *b = realloc(t->buf, cap);
		if (!b) {
			t->r = -ENOMEM;
			return out;
		}
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n + 1);
	out.off = (uint32_t)t->len;
	out.len = (uint32_t)n;
	t->len += n + 1;
	t->recent[t->n_recent++ % STRTAB_RECENT] = out;
	return out;
}

int policy_image_compile(const struct policy_set *set, const struct policy *p, void **ret,
			 size_t *ret_len)
{
	size_t n_sites = 0, n_wrappers = 0, n_triggers = 0;
	struct strtab t = { 0 };

	if (!set || !p || !ret || !ret_len || p->n_pools == 0)
		return -EINVAL;
	if (p->n_pools > PIMG_POOLS_MAX)
		return -E2BIG;
	for (size_t i = 0; i < p->n_pools; i++) {
		n_sites += p->pools[i].n_sites;
		n_wrappers += p->pools[i].n_wrappers;
		n_triggers += p->pools[i].n_triggers;
	}
	size_t records = sizeof(struct pimg_header) + p->n_pools * sizeof(struct pimg_pool) +
			 n_sites * sizeof(struct pimg_site) + n_wrappers * sizeof(struct pimg_wrapper) +
			 n_triggers * sizeof(struct pimg_trigger);
	if (records > PIMG_MAX)
		return -E2BIG;

	struct pimg_header h = {
		.magic = PIMG_MAGIC, .version = PIMG_VERSION,
		.n_pools = (uint32_t)p->n_pools, .n_sites = (uint32_t)n_sites,
		.n_wrappers = (uint32_t)n_wrappers, .n_triggers = (uint32_t)n_triggers,
		.mode = (uint32_t)p->mode, .protection = (uint32_t)p->protection,
		.report_burst = set->daemon.report_burst, .report_interval_s = set->daemon.report_interval_s,
	};
	/* Records are laid out after the strings are known: built apart first. */
	struct pimg_pool *pools = calloc(p->n_pools, sizeof(*pools));
	struct pimg_site *sites = calloc(n_sites ? n_sites : 1, sizeof(*sites));
	struct pimg_wrapper *wrappers = calloc(n_wrappers ? n_wrappers : 1, sizeof(*wrappers));
	struct pimg_trigger *triggers = calloc(n_triggers ? n_triggers : 1, sizeof(*triggers));
	int r = pools && sites && wrappers && triggers ? 0 : -ENOMEM;
	size_t s_at = 0, w_at = 0, t_at = 0;

	h.name = strtab_add(&t, p->name);
	for (size_t i = 0; r == 0 && i < p->n_pools; i++) {
		const struct policy_pool *pp = &p->pools[i];
		struct pimg_pool *ip = &pools[i];
		ip->name = strtab_add(&t, pp->name);
		ip->max_bytes = pp->max_bytes;
		ip->take = (uint32_t)pp->take;
		ip->roles = pp->roles;
		ip->first_site = (uint32_t)s_at;
		ip->n_sites = (uint32_t)pp->n_sites;
		ip->first_wrapper = (uint32_t)w_at;
		ip->n_wrappers = (uint32_t)pp->n_wrappers;
		ip->first_trigger = (uint32_t)t_at;
		ip->n_triggers = (uint32_t)pp->n_triggers;
		for (size_t j = 0; j < pp->n_sites; j++) {
			const struct policy_site *ps = &pp->sites[j];
			struct pimg_site *is = &sites[s_at++];
			is->object = strtab_add(&t, ps->object);
			is->function = strtab_add(&t, ps->function);
			if (ps->by_offset) {
				is->flags = PIMG_SITE_BY_OFFSET;
				is->offset = ps->offset;
				is->build_id = strtab_add(&t, ps->build_id);
			} else {
				is->build_id = (struct pimg_str){ PIMG_NONE, 0 };
			}
		}
		for (size_t j = 0; j < pp->n_wrappers; j++)
			wrappers[w_at++].function = strtab_add(&t, pp->wrappers[j]);
		for (size_t j = 0; j < pp->n_triggers; j++) {
			const struct policy_trigger *pt = &pp->triggers[j];
			struct pimg_trigger *it = &triggers[t_at++];
			it->kind = (uint32_t)pt->kind;
			it->call = pt->kind == POLICY_TRIGGER_ON_CALL ? (uint32_t)pt->call : 0;
			it->after_ns = pt->kind == POLICY_TRIGGER_AFTER ? pt->after_ns : 0;
		}
	}
	if (r == 0)
		r = t.r;
	/* The table ends 8-byte aligned (padding NULs belong to no string). */
	size_t strings_len = (t.len + 8) & ~(size_t)7;
	if (r == 0 && records + strings_len > PIMG_MAX)
		r = -E2BIG;
	char *img = r == 0 ? calloc(1, records + strings_len) : NULL;
	if (r == 0 && !img)
		r = -ENOMEM;
	if (r == 0) {
		h.strings_len = (uint32_t)strings_len;
		h.total_len = (uint32_t)(records + strings_len);
		char *at = img;
		memcpy(at, &h, sizeof(h));
		at += sizeof(h);
		memcpy(at, pools, p->n_pools * sizeof(*pools));
		at += p->n_pools * sizeof(*pools);
		memcpy(at, sites, n_sites * sizeof(*sites));
		at += n_sites * sizeof(*sites);
		memcpy(at, wrappers, n_wrappers * sizeof(*wrappers));
		at += n_wrappers * sizeof(*wrappers);
		memcpy(at, triggers, n_triggers * sizeof(*triggers));
		at += n_triggers * sizeof(*triggers);
		if (t.len)
			memcpy(at, t.buf, t.len);
		/* A model the parser cannot have made (a bad name, an unknown
		 * enum) is refused here rather than handed out. */
		if (policy_image_validate(img, records + strings_len) < 0) {
			free(img);
			img = NULL;
			r = -EINVAL;
		}
	}
	free(pools);
	free(sites);
	free(wrappers);
	free(triggers);
	free(t.buf);
	if (r < 0)
		return r;
	*ret = img;
	*ret_len = records + strings_len;
	return 0;
}

/* ---- validate ---- */

struct check {
	const char *table;
	uint32_t table_len;
};

/* The string s: inside the table, NUL-terminated there, no NUL before its
 * end, min..max bytes, no control character.  absent_ok: may be absent. */
static bool str_ok(const struct check *c, struct pimg_str s, bool absent_ok, uint32_t min, uint32_t max)
{
	if (s.off == PIMG_NONE)
		return absent_ok && s.len == 0;
	if ((uint64_t)s.off + s.len >= c->table_len || s.len < min || s.len > max)
		return false;
	const char *p = c->table + s.off;
	if (p[s.len] != '\0')
		return false;
	for (uint32_t i = 0; i < s.len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return false;       /* NUL included */
	return true;
}

/* [A-Za-z0-9_.-]{1,63}, as the parser allows. */
static bool name_ok(const struct check *c, struct pimg_str s)
{
	if (!str_ok(c, s, false, 1, POLICY_NAME_MAX))
		return false;
	for (uint32_t i = 0; i < s.len; i++) {
		char ch = c->table[s.off + i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_' || ch == '.' || ch == '-'))
			return false;
	}
	return true;
}

static bool hex_ok(const char *s, uint32_t len, bool lower_only)
{
	for (uint32_t i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
		      (!lower_only && ch >= 'A' && ch <= 'F')))
			return false;
	}
	return true;
}

static bool site_ok(const struct check *c, const struct pimg_site *s)
{
	if (s->reserved != 0 || (s->flags & ~PIMG_SITE_BY_OFFSET) ||
	    !str_ok(c, s->object, true, 1, GLOB_MAX) || !str_ok(c, s->function, false, 1, GLOB_MAX))
		return false;
	if (!(s->flags & PIMG_SITE_BY_OFFSET))
		return s->offset == 0 && s->build_id.off == PIMG_NONE && s->build_id.len == 0;
	/* An offset site names its object, and its function text is the
	 * offset's canonical "+0x..." (reports print it). */
	char canon[24];
	int n = snprintf(canon, sizeof(canon), "+0x%llx", (unsigned long long)s->offset);
	if (s->object.off == PIMG_NONE || n < 0 || (uint32_t)n != s->function.len ||
	    memcmp(c->table + s->function.off, canon, (size_t)n) != 0)
		return false;
	if (s->build_id.off == PIMG_NONE)
		return s->build_id.len == 0;
	return str_ok(c, s->build_id, false, 8, BUILD_ID_MAX) && s->build_id.len % 2 == 0 &&
	       hex_ok(c->table + s->build_id.off, s->build_id.len, true);
}

static bool trigger_ok(const struct pimg_trigger *t)
{
	switch (t->kind) {
	case POLICY_TRIGGER_ON_CALL:
		return t->call < POLICY_CALL__COUNT && t->after_ns == 0;
	case POLICY_TRIGGER_AFTER:
		return t->call == 0 && t->after_ns > 0 && t->after_ns <= DURATION_MAX_NS;
	case POLICY_TRIGGER_MANUAL:
	case POLICY_TRIGGER_ON_WAIT:
		return t->call == 0 && t->after_ns == 0;
	default:
		return false;
	}
}

int policy_image_validate(const void *buf, size_t len)
{
	const struct pimg_header *h = buf;

	if (!buf || ((uintptr_t)buf & 7) || len < sizeof(*h) || len > PIMG_MAX)
		return -EPROTO;
	if (h->magic != PIMG_MAGIC || h->version != PIMG_VERSION || h->reserved != 0 ||
	    h->total_len != len)
		return -EPROTO;
	if (h->n_pools == 0 || h->n_pools > PIMG_POOLS_MAX)
		return -EPROTO;
	/* Counts are 32-bit: the sum cannot wrap in 64 bits. */
	uint64_t need = sizeof(*h) + (uint64_t)h->n_pools * sizeof(struct pimg_pool) +
			(uint64_t)h->n_sites * sizeof(struct pimg_site) +
			(uint64_t)h->n_wrappers * sizeof(struct pimg_wrapper) +
			(uint64_t)h->n_triggers * sizeof(struct pimg_trigger) + h->strings_len;
	if (need != len || h->strings_len == 0 || h->strings_len % 8 != 0)
		return -EPROTO;
	struct check c = { pimg_strings(h), h->strings_len };
	if (c.table[c.table_len - 1] != '\0')
		return -EPROTO;
	if (!name_ok(&c, h->name) || h->mode > POLICY_MODE_LEARN || h->protection > POLICY_PROT_SEAL ||
	    h->report_burst < 1 || h->report_burst > BURST_MAX || h->report_interval_s < 1 ||
	    h->report_interval_s > INTERVAL_MAX_S)
		return -EPROTO;

	/* The pools' slices follow each other, in order, and cover each array:
	 * no record is shared, none left over. */
	uint64_t s_at = 0, w_at = 0, t_at = 0;
	for (uint32_t i = 0; i < h->n_pools; i++) {
		const struct pimg_pool *p = pimg_pool(h, i);
		if (!name_ok(&c, p->name) || p->max_bytes > (uint64_t)INT64_MAX || p->n_sites == 0 ||
		    p->take > POLICY_TAKE_UNTIL_TRIGGER || (p->roles & ~ROLE_MASK_ALL) ||
		    p->first_site != s_at || p->first_wrapper != w_at || p->first_trigger != t_at)
			return -EPROTO;
		s_at += p->n_sites;
		w_at += p->n_wrappers;
		t_at += p->n_triggers;
		if (s_at > h->n_sites || w_at > h->n_wrappers || t_at > h->n_triggers)
			return -EPROTO;
		/* Pool names are unique: orders and reports name pools. */
		for (uint32_t k = 0; k < i; k++) {
			const struct pimg_pool *q = pimg_pool(h, k);
			if (q->name.len == p->name.len &&
			    memcmp(c.table + q->name.off, c.table + p->name.off, p->name.len) == 0)
				return -EPROTO;
		}
	}
	if (s_at != h->n_sites || w_at != h->n_wrappers || t_at != h->n_triggers)
		return -EPROTO;
	for (uint32_t i = 0; i < h->n_sites; i++)
		if (!site_ok(&c, &pimg_sites(h)[i]))
			return -EPROTO;
	for (uint32_t i = 0; i < h->n_wrappers; i++)
		if (!str_ok(&c, pimg_wrappers(h)[i].function, false, 1, GLOB_MAX))
			return -EPROTO;
	for (uint32_t i = 0; i < h->n_triggers; i++)
		if (!trigger_ok(&pimg_triggers(h)[i]))
			return -EPROTO;
	return 0;
}
