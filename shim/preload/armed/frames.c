/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * frames.c - where a wrapper's own return address sits on the stack, read
 * from the unwind rule of its call instruction (.eh_frame, found by the
 * unwinder's own _Unwind_Find_FDE), for resolve.c: an allocation through a
 * wrapper is charged to the wrapper's caller, which an unwind found at
 * every such allocation (about 11,000 instructions: haproxy's master made
 * 151,000 at its start-up under its proposal, 82% of it, and became ready
 * in 400 ms instead of 85 ms).  With the rule, the caller is one load from
 * the stack.
 *
 * The rule used is only "at this call the wrapper's frame (its CFA) is the
 * stack pointer plus a constant", the rule of every frame that does not
 * alloca or realign its stack: the constant is then the distance from the
 * slot the call pushed its return address into to the slot of the
 * wrapper's own return address.  Any other rule (a frame pointer's, an
 * expression), an instruction this reader does not know, or a table it
 * cannot read says FRAMES_UNUSABLE, and resolve.c unwinds as before.  A
 * rule read is not believed at once: the unwinder's answer is compared
 * with the stack's for the first FRAMES_CHECKS allocations through it, and
 * one disagreement retires it for good.
 *
 * Owns the rule cache: RULES words, each a return address, its distance
 * and its state in one atomic word (several threads may read a rule at
 * once; a lost store costs one more read).  A forged word can only name
 * another slot of the same stack to read a caller from: what that caller's
 * route is, the read-only ranges say, as for any call site.
 *
 * Cost: a cached rule, a multiply, a shift and one load (a probe or two);
 * a miss, the unwinder's FDE search and a walk of the CIE's and FDE's
 * instructions up to the call (some hundreds of instructions), once per
 * wrapper call site.  Never in a signal handler.  x86-64 only: elsewhere
 * every rule is FRAMES_UNUSABLE.
 */
#define _GNU_SOURCE
#include "frames.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define RULES_BITS 12
#define RULES (1u << RULES_BITS)
#define PROBES 8
#define FRAMES_CHECKS 2
/* A word: the return address (47 bits), the distance in 8-byte words
 * (13 bits, signed), the checks passed (2 bits), the state (2 bits). */
#define W_STATE_EMPTY 0u
#define W_STATE_UNUSABLE 1u
#define W_STATE_RULE 2u
#define W_K_BITS 13
#define W_K_MAX ((1 << (W_K_BITS - 1)) - 1)

static _Atomic uint64_t rules[RULES];

static uint64_t word(uintptr_t ra, intptr_t k8, unsigned checks, unsigned state)
{
	return (uint64_t)ra << 17 | ((uint64_t)k8 & ((1u << W_K_BITS) - 1)) << 4 | (uint64_t)checks << 2 | state;
}

static uintptr_t word_ra(uint64_t w)
{
	return (uintptr_t)(w >> 17);
}

static intptr_t word_k8(uint64_t w)
{
	int64_t k = (int64_t)((w >> 4) & ((1u << W_K_BITS) - 1));
	return (intptr_t)(k >= 1 << (W_K_BITS - 1) ? k - (1 << W_K_BITS) : k);
}

static _Atomic uint64_t *slot_of(uintptr_t ra, bool for_insert)
{
	uint32_t h = (uint32_t)(((uint64_t)ra * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - RULES_BITS));
	for (uint32_t i = 0; i < PROBES; i++) {
		_Atomic uint64_t *s = &rules[(h + i) & (RULES - 1)];
		uint64_t w = atomic_load_explicit(s, memory_order_acquire);
		if ((w & 3u) != W_STATE_EMPTY && word_ra(w) == ra)
			return s;
		if ((w & 3u) == W_STATE_EMPTY)
			return for_insert ? s : NULL;
	}
	return NULL;
}

#if defined(__x86_64__)
/* The unwinder's own FDE search (libgcc's, linked into the shim): the FDE
 * covering pc, and the start of its function in bases->func. */
struct dwarf_eh_bases {
	void *tbase;
	void *dbase;
	void *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

struct reader {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t uleb(struct reader *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; r->p < r->end && shift < 64; shift += 7) {
		unsigned char b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static int64_t sleb(struct reader *r)
{
	int64_t v = 0;
	unsigned shift = 0;
	while (r->p < r->end && shift < 64) {
		unsigned char b = *r->p++;
		v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v = (int64_t)((uint64_t)v | ~(uint64_t)0 << shift);   /* sign-extended */
			return v;
		}
	}
	r->bad = true;
	return 0;
}

static const unsigned char *take(struct reader *r, size_t n)
{
	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		return NULL;
	}
	const unsigned char *at = r->p;
	r->p += n;
	return at;
}

static uint32_t u32(struct reader *r)
{
	const unsigned char *at = take(r, 4);
	uint32_t v = 0;
	if (at)
		memcpy(&v, at, 4);
	return v;
}

/* Skip one value of pointer encoding enc (DW_EH_PE_*: its low four bits). */
static void skip_encoded(struct reader *r, unsigned enc)
{
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: take(r, 8); break;     /* absptr, udata8, sdata8 */
	case 0x02: case 0x0a: take(r, 2); break;
	case 0x03: case 0x0b: take(r, 4); break;
	case 0x01: uleb(r); break;
	case 0x09: sleb(r); break;
	default: r->bad = true;
	}
}

struct cfa {
	uint64_t reg;
	int64_t off;
	bool expr;
};

#define STATES 8

/* Run the call-frame instructions [r) from loc (the FDE's: advancing), the
 * rule at pc left in *c.  false: an instruction not understood. */
static bool run(struct reader *r, uintptr_t *loc, uintptr_t pc, uint64_t code_align, int64_t data_align,
		struct cfa *c, struct cfa *saved, size_t *n_saved)
{
	while (r->p < r->end && !r->bad) {
		unsigned char op = *r->p++;
		uint64_t delta = 0;
		switch (op >> 6) {
		case 1: delta = op & 0x3f; goto advance;                 /* advance_loc */
		case 2: uleb(r); continue;                               /* offset */
		case 3: continue;                                        /* restore */
		default: break;
		}
		switch (op) {
		case 0x00: continue;                                     /* nop */
		case 0x02: { const unsigned char *a = take(r, 1); delta = a ? a[0] : 0; goto advance; }
		case 0x03: { const unsigned char *a = take(r, 2); uint16_t v = 0; if (a) memcpy(&v, a, 2); delta = v; goto advance; }
		case 0x04: delta = u32(r); goto advance;
		case 0x05: case 0x09: case 0x14: uleb(r); uleb(r); continue;   /* offset_ext, register, val_offset */
		case 0x06: case 0x07: case 0x08: uleb(r); continue;      /* restore_ext, undefined, same_value */
		case 0x0a:                                               /* remember_state */
			if (*n_saved == STATES)
				return false;
			saved[(*n_saved)++] = *c;
			continue;
		case 0x0b:                                               /* restore_state */
			if (*n_saved == 0)
				return false;
			*c = saved[--*n_saved];
			continue;
		case 0x0c: c->reg = uleb(r); c->off = (int64_t)uleb(r); c->expr = false; continue;
		case 0x0d: c->reg = uleb(r); c->expr = false; continue;
		case 0x0e: c->off = (int64_t)uleb(r); continue;
		case 0x0f: { uint64_t n = uleb(r); take(r, n); c->expr = true; continue; }
		case 0x10: case 0x16: { uleb(r); uint64_t n = uleb(r); take(r, n); continue; }   /* expression, val_expression */
		case 0x11: case 0x15: uleb(r); sleb(r); continue;        /* offset_ext_sf, val_offset_sf */
		case 0x12: c->reg = uleb(r); c->off = sleb(r) * data_align; c->expr = false; continue;
		case 0x13: c->off = sleb(r) * data_align; continue;
		case 0x2e: uleb(r); continue;                            /* GNU_args_size */
		case 0x2f: uleb(r); uleb(r); continue;                   /* GNU_negative_offset_extended */
		default: return false;                                   /* set_loc and the rest */
		}
	advance:
		*loc += delta * code_align;
		if (*loc > pc)
			return !r->bad;
	}
	return !r->bad;
}

/* The CFA rule at code address pc: true when it is rsp + *off. */
static bool read_rule(uintptr_t pc, int64_t *off)
{
	struct dwarf_eh_bases bases;
	const unsigned char *fde = _Unwind_Find_FDE((void *)pc, &bases);
	if (!fde || !bases.func)
		return false;
	uint32_t fde_len, cie_len;
	memcpy(&fde_len, fde, 4);
	if (fde_len == 0 || fde_len == 0xffffffffu)
		return false;
	uint32_t cie_back;
	memcpy(&cie_back, fde + 4, 4);
	const unsigned char *cie = fde + 4 - cie_back;
	memcpy(&cie_len, cie, 4);
	if (cie_len == 0 || cie_len == 0xffffffffu)
		return false;
	struct reader c = { cie + 4, cie + 4 + cie_len, false };
	if (u32(&c) != 0)
		return false;                       /* not a CIE */
	const unsigned char *v = take(&c, 1);
	if (!v || (*v != 1 && *v != 3))
		return false;
	const char *aug = (const char *)c.p;
	size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
	if (c.p + aug_len >= c.end || strstr(aug, "eh"))
		return false;
	c.p += aug_len + 1;
	uint64_t code_align = uleb(&c);
	int64_t data_align = sleb(&c);
	if (*v == 1)
		take(&c, 1);
	else
		uleb(&c);
	unsigned fde_enc = 0;
	bool z = aug[0] == 'z';
	if (z) {
		uint64_t n = uleb(&c);
		struct reader a = { c.p, c.p + n, false };
		if (c.bad || n > (uint64_t)(c.end - c.p))
			return false;
		for (const char *s = aug + 1; *s && !a.bad; s++) {
			if (*s == 'R') {
				const unsigned char *e = take(&a, 1);
				fde_enc = e ? *e : 0;
			} else if (*s == 'P') {
				const unsigned char *e = take(&a, 1);
				if (e)
					skip_encoded(&a, *e);
			} else if (*s == 'L') {
				take(&a, 1);
			} else if (*s != 'S' && *s != 'B') {
				return false;
			}
		}
		if (a.bad)
			return false;
		c.p += n;
	} else if (aug[0]) {
		return false;
	}
	if (c.bad)
		return false;
	struct reader f = { fde + 8, fde + 4 + fde_len, false };
	skip_encoded(&f, fde_enc);              /* pc_begin: bases.func says it */
	skip_encoded(&f, fde_enc & 0x0f);       /* pc_range */
	if (z) {
		uint64_t n = uleb(&f);
		take(&f, n);
	}
	if (f.bad)
		return false;
	struct cfa rule = { .reg = UINT64_MAX }, saved[STATES];
	size_t n_saved = 0;
	uintptr_t loc = (uintptr_t)bases.func;
	if (!run(&c, &loc, pc, code_align, data_align, &rule, saved, &n_saved) ||
	    !run(&f, &loc, pc, code_align, data_align, &rule, saved, &n_saved))
		return false;
	if (rule.expr || rule.reg != 7)         /* DWARF register 7: rsp */
		return false;
	*off = rule.off;
	return true;
}
#else
static bool read_rule(uintptr_t pc, int64_t *off)
{
	(void)pc;
	(void)off;
	return false;
}
#endif

enum frames_rule frames_rule(uintptr_t ra, intptr_t *k)
{
	if (!ra || ra >> 47)
		return FRAMES_UNUSABLE;
	_Atomic uint64_t *s = slot_of(ra, false);
	uint64_t w = s ? atomic_load_explicit(s, memory_order_acquire) : 0;
	if (!s || word_ra(w) != ra) {
		int64_t off = 0;
		bool ok = read_rule(ra - 1, &off) && off > 0 && off % 8 == 0 && off / 8 <= W_K_MAX;
		w = word(ra, ok ? (intptr_t)(off / 8) : 0, 0, ok ? W_STATE_RULE : W_STATE_UNUSABLE);
		s = slot_of(ra, true);
		if (s)
			atomic_store_explicit(s, w, memory_order_release);
	}
	if ((w & 3u) != W_STATE_RULE)
		return FRAMES_UNUSABLE;
	*k = word_k8(w) * 8;
	return ((w >> 2) & 3u) >= FRAMES_CHECKS ? FRAMES_TRUSTED : FRAMES_UNCHECKED;
}

void frames_checked(uintptr_t ra, bool agreed)
{
	_Atomic uint64_t *s = slot_of(ra, false);
	if (!s)
		return;
	uint64_t w = atomic_load_explicit(s, memory_order_acquire);
	if (word_ra(w) != ra || (w & 3u) != W_STATE_RULE)
		return;
	unsigned checks = (unsigned)((w >> 2) & 3u);
	uint64_t nw = agreed ? word(ra, word_k8(w), checks < 3 ? checks + 1 : 3, W_STATE_RULE)
			     : word(ra, 0, 0, W_STATE_UNUSABLE);
	atomic_compare_exchange_strong(s, &w, nw);
}

void frames_forget(void)
{
	for (uint32_t i = 0; i < RULES; i++)
		atomic_store_explicit(&rules[i], 0, memory_order_relaxed);
}
