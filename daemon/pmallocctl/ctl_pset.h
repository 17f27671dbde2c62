/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_pset.h - the inside of a set of learned contexts (struct pset):
 * its chains and frames, and the key table that holds what is known of
 * each function, call, wrapper name and object.  For ctl_propose_set.c,
 * which fills it, and ctl_propose_chain.c, which chooses and writes from
 * it; everyone else sees struct pset through ctl_propose_set.h only.
 */
#ifndef PMALLOC_CTL_PSET_H
#define PMALLOC_CTL_PSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl_propose_set.h"

struct pframe {
	const char *object, *build_id, *function;  /* interned; build_id "" when none, function NULL */
	uint64_t off;
};

struct pchain {
	const char *pool, *text, *triggers;
	struct pframe *f;
	size_t n;
	struct pcounts c;
	ssize_t choice;              /* step 1: the frame chosen, or -1 */
	ssize_t site;                /* step 2: the first frame outside the wrappers, or -1 */
};

enum kkind { K_CHAIN = 1, K_NAME, K_OFF, K_WNAME, K_OBJECT };

struct kslot {
	const void *pool, *a, *b;
	uint64_t c;
	int kind;                    /* 0: free */
	size_t v;
};

/* What is known of a function or call (K_NAME, K_OFF), a wrapper name
 * (K_WNAME), or an object (K_OBJECT: chains counts its sites written by
 * name). */
struct kstat {
	bool dirty;                  /* step 1: a chain through it is not clean */
	bool dirty_site;             /* step 2: a chain whose site it is is not clean */
	uint32_t unsafe_roles;       /* step 2: roles in which a chain whose site it is is not safe */
	uint32_t site_roles;         /* a site: the roles it is proposed for (site_roles()) */
	uint32_t seen_roles;         /* step 2: roles whose entries had a chain whose site it is */
	bool wrapper, site;
	bool below;                  /* a call: below a clean chain's choice */
	bool beyond;                 /* a wrapper name: a call of it is not below a choice */
	bool partly;                 /* a function: a call of it is a wrapper by its pinned call */
	bool said;                   /* written into the text already */
	size_t said_in;              /* a wrapper: the ordinal of the pool element it was written in */
	uint64_t site_live;          /* step 2: live bytes of the chains whose site it is */
	uint64_t site_early;         /* and what they freed before the trigger */
	uint64_t live;               /* protected live bytes through it as a site */
	uint64_t early;              /* and bytes its chains freed before the trigger */
	size_t chains;
	const struct pframe *fr;     /* a frame it names */
};

struct pset {
	char **str;
	size_t str_cap, str_n;
	struct kslot *k;
	size_t k_cap, k_n;
	struct kstat *ks;
	size_t ks_n, ks_cap;
	struct pchain *ch;
	size_t ch_n, ch_cap;
	size_t name_wrappers;        /* wrappers by name in every pool: each fits every object */
};

/* The value of key (kind, pool, a, b, c); a new one (a new kstat, or
 * `fresh` for chains) when create, else SIZE_MAX when absent. */
size_t pset_key(struct pset *s, int kind, const void *pool, const void *a, const void *b, uint64_t c, bool create,
		size_t fresh);

#endif
