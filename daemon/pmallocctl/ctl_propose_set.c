/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_propose_set.c - propose's learned contexts: each believed entry's
 * chain (PMALLOC_CHAIN: OBJECT@BUILDID+0xOFFSET[=FUNCTION] frames) parsed
 * and folded into one set, the same chain from several processes, runs or
 * hosts counted once with the largest counts; the strings interned; the
 * key table (ctl_pset.h) that ctl_propose_chain.c's choice fills; and
 * what one context's counts say (safe, kept enough, clean).
 *
 * Owns struct pset's memory and its two hash tables (open addressing,
 * doubled at half full).  Never chooses a site or writes policy text
 * (ctl_propose_chain.c does), never trusts a chain's text (a frame that
 * does not parse refuses the chain: -EBADMSG, nothing added).  Costs:
 * one hash lookup per frame and string.
 */
#define _GNU_SOURCE
#include "ctl_propose_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_pset.h"
static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdu;
}

static uint64_t str_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
	return h;
}

/* The set's one copy of s[0, n). */
static const char *intern(struct pset *s, const char *p, size_t n)
{
	if (s->str_n * 2 >= s->str_cap) {
		size_t cap = s->str_cap ? s->str_cap * 2 : 1024;
		char **t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < s->str_cap; i++)
			if (s->str[i]) {
				size_t j = str_hash(s->str[i], strlen(s->str[i])) & (cap - 1);
				while (t[j])
					j = (j + 1) & (cap - 1);
				t[j] = s->str[i];
			}
		free(s->str);
		s->str = t;
		s->str_cap = cap;
	}
	size_t j = str_hash(p, n) & (s->str_cap - 1);
	for (; s->str[j]; j = (j + 1) & (s->str_cap - 1))
		if (strncmp(s->str[j], p, n) == 0 && s->str[j][n] == '\0')
			return s->str[j];
	s->str[j] = strndup(p, n);
	if (s->str[j])
		s->str_n++;
	return s->str[j];
}

size_t pset_key(struct pset *s, int kind, const void *pool, const void *a, const void *b, uint64_t c, bool create,
		size_t fresh)
{
	if (create && s->k_n * 2 >= s->k_cap) {
		size_t cap = s->k_cap ? s->k_cap * 2 : 4096;
		struct kslot *t = calloc(cap, sizeof(*t));
		if (!t)
			return SIZE_MAX;
		for (size_t i = 0; i < s->k_cap; i++)
			if (s->k[i].kind) {
				const struct kslot *o = &s->k[i];
				size_t j = mix(mix(mix(mix((uint64_t)o->kind, (uintptr_t)o->pool), (uintptr_t)o->a),
						   (uintptr_t)o->b), o->c) & (cap - 1);
				while (t[j].kind)
					j = (j + 1) & (cap - 1);
				t[j] = *o;
			}
		free(s->k);
		s->k = t;
		s->k_cap = cap;
	}
	if (!s->k_cap)
		return SIZE_MAX;
	size_t j = mix(mix(mix(mix((uint64_t)kind, (uintptr_t)pool), (uintptr_t)a), (uintptr_t)b), c) & (s->k_cap - 1);
	for (; s->k[j].kind; j = (j + 1) & (s->k_cap - 1)) {
		const struct kslot *o = &s->k[j];
		if (o->kind == kind && o->pool == pool && o->a == a && o->b == b && o->c == c)
			return o->v;
	}
	if (!create)
		return SIZE_MAX;
	if (kind != K_CHAIN) {
		if (s->ks_n == s->ks_cap) {
			size_t cap = s->ks_cap ? s->ks_cap * 2 : 1024;
			struct kstat *t = realloc(s->ks, cap * sizeof(*t));
			if (!t)
				return SIZE_MAX;
			s->ks = t;
			s->ks_cap = cap;
		}
		memset(&s->ks[s->ks_n], 0, sizeof(s->ks[0]));
		fresh = s->ks_n++;
	}
	s->k[j] = (struct kslot){ .pool = pool, .a = a, .b = b, .c = c, .kind = kind, .v = fresh };
	s->k_n++;
	return fresh;
}

struct pset *pset_new(void)
{
	return calloc(1, sizeof(struct pset));
}

void pset_free(struct pset *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->str_cap; i++)
		free(s->str[i]);
	for (size_t i = 0; i < s->ch_n; i++)
		free(s->ch[i].f);
	free(s->str);
	free(s->k);
	free(s->ks);
	free(s->ch);
	free(s);
}

size_t pset_chains(const struct pset *s)
{
	return s->ch_n;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* OBJECT@BUILDID+0xOFFSET[=FUNCTION], OBJECT percent-encoded. */
static int parse_frame(struct pset *s, const char *t, size_t len, struct pframe *fr)
{
	for (size_t i = 1; i < len; i++) {
		if (t[i] != '@')
			continue;
		size_t j = i + 1, k;
		if (j < len && t[j] == '-')
			j++;
		else
			while (j < len && hexval(t[j]) >= 0)
				j++;
		if (j == i + 1 || len - j < 4 || strncmp(t + j, "+0x", 3) != 0)
			continue;
		uint64_t off = 0;
		for (k = j + 3; k < len && hexval(t[k]) >= 0 && k - j - 3 < 16; k++)
			off = off << 4 | (uint64_t)hexval(t[k]);
		if (k == j + 3 || (k < len && t[k] != '='))
			continue;
		/* The object, percent-decoded. */
		char *obj = malloc(i + 1);
		size_t n = 0;
		if (!obj)
			return -ENOMEM;
		for (size_t p = 0; p < i; p++) {
			if (t[p] == '%' && p + 2 < i && hexval(t[p + 1] | 0x20) >= 0 && hexval(t[p + 2] | 0x20) >= 0) {
				obj[n++] = (char)(hexval(t[p + 1] | 0x20) << 4 | hexval(t[p + 2] | 0x20));
				p += 2;
			} else {
				obj[n++] = t[p];
			}
		}
		fr->object = memchr(obj, '\0', n) ? NULL : intern(s, obj, n);
		free(obj);
		fr->build_id = t[i + 1] == '-' ? intern(s, "", 0) : intern(s, t + i + 1, j - i - 1);
		fr->off = off;
		fr->function = k + 1 < len ? intern(s, t + k + 1, len - k - 1) : NULL;
		if (!fr->object || !fr->build_id || (k + 1 < len && !fr->function))
			return -EBADMSG;
		return 0;
	}
	return -EBADMSG;
}

static uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

int pset_add(struct pset *s, const char *pool, const char *triggers, const char *chain, const struct pcounts *c)
{
	const char *ip = intern(s, pool, strlen(pool)), *it = intern(s, chain, strlen(chain));
	const char *itr = intern(s, triggers, strlen(triggers));
	if (!ip || !it || !itr)
		return -ENOMEM;
	size_t v = pset_key(s, K_CHAIN, ip, it, NULL, 0, false, 0);
	if (v == SIZE_MAX) {
		struct pchain ch = { .pool = ip, .text = it, .triggers = itr, .choice = -1, .site = -1 };
		for (const char *p = chain; *p;) {
			size_t n = strcspn(p, " ");
			if (n) {
				struct pframe *f = realloc(ch.f, (ch.n + 1) * sizeof(*f));
				if (!f) {
					free(ch.f);
					return -ENOMEM;
				}
				ch.f = f;
				int r = parse_frame(s, p, n, &ch.f[ch.n]);
				if (r < 0) {
					free(ch.f);
					return r;
				}
				ch.n++;
			}
			p += n + (p[n] == ' ');
		}
		if (ch.n == 0)
			return -EBADMSG;
		if (s->ch_n == s->ch_cap) {
			size_t cap = s->ch_cap ? s->ch_cap * 2 : 256;
			struct pchain *t = realloc(s->ch, cap * sizeof(*t));
			if (!t) {
				free(ch.f);
				return -ENOMEM;
			}
			s->ch = t;
			s->ch_cap = cap;
		}
		v = pset_key(s, K_CHAIN, ip, it, NULL, 0, true, s->ch_n);
		if (v == SIZE_MAX) {
			free(ch.f);
			return -ENOMEM;
		}
		s->ch[s->ch_n++] = ch;
	}
	struct pcounts *a = &s->ch[v].c;
	a->objects = umax(a->objects, c->objects);
	a->bytes = umax(a->bytes, c->bytes);
	a->live_objects = umax(a->live_objects, c->live_objects);
	a->live_bytes = umax(a->live_bytes, c->live_bytes);
	a->freed_objects = umax(a->freed_objects, c->freed_objects);
	a->freed_bytes = umax(a->freed_bytes, c->freed_bytes);
	a->late_objects = umax(a->late_objects, c->late_objects);
	a->late_bytes = umax(a->late_bytes, c->late_bytes);
	a->early_objects = umax(a->early_objects, c->early_objects);
	a->early_bytes = umax(a->early_bytes, c->early_bytes);
	a->served_objects = umax(a->served_objects, c->served_objects);
	a->written |= c->written;
	a->roles |= c->roles ? c->roles : PROLE_UNKNOWN;
	a->dirty_roles |= c->roles ? c->dirty_roles : pcounts_safe(c) ? 0 : PROLE_UNKNOWN;
	return 0;
}

void pcounts_split(struct pcounts *c, bool has_trigger, uint64_t trigger_live_objects, uint64_t trigger_live_bytes)
{
	c->early_objects = c->early_bytes = 0;
	if (has_trigger) {
		/* Never more than was freed: an entry's counts may disagree. */
		uint64_t eo = c->objects > trigger_live_objects ? c->objects - trigger_live_objects : 0;
		uint64_t eb = c->bytes > trigger_live_bytes ? c->bytes - trigger_live_bytes : 0;
		c->early_objects = eo < c->freed_objects ? eo : c->freed_objects;
		c->early_bytes = eb < c->freed_bytes ? eb : c->freed_bytes;
	}
	c->served_objects = c->freed_objects - c->early_objects;
}

bool pcounts_kept_enough(uint64_t live_bytes, uint64_t early_bytes)
{
	/* early <= RATIO * live, without overflow. */
	return live_bytes >= UINT64_MAX / PROPOSE_EARLY_RATIO || early_bytes <= live_bytes * PROPOSE_EARLY_RATIO;
}

bool pcounts_safe(const struct pcounts *c)
{
	return !c->written && c->late_objects == 0 && c->served_objects == 0 && c->objects > 0;
}

bool pcounts_clean(const struct pcounts *c)
{
	return pcounts_safe(c) && pcounts_kept_enough(c->live_bytes, c->early_bytes);
}
