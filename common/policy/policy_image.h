/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_image.h - one policy compiled: the flat, versioned image that
 * pmallocd hands a process and that the shim keeps, read-only, as its only
 * runtime form of the policy (policy_image.c).
 *
 * Layout, host byte order (same host), every record 8-byte aligned:
 *
 *   struct pimg_header                      the policy itself and the counts
 *   struct pimg_pool     [n_pools]          each names its slice of the next three
 *   struct pimg_site     [n_sites]
 *   struct pimg_wrapper  [n_wrappers]
 *   struct pimg_trigger  [n_triggers]
 *   char                 [strings_len]      every string, each NUL-terminated
 *
 * Strings are (offset, length) into the table; an absent string (a site
 * without OBJECT) has offset PIMG_NONE.  Nothing else points anywhere.
 *
 * The accessors below read an image that policy_image_validate() accepted;
 * they check nothing themselves, so never hand them anything else.
 */
#ifndef PMALLOC_POLICY_IMAGE_H
#define PMALLOC_POLICY_IMAGE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define PIMG_MAGIC 0x474d4950u        /* "PIMG" */
#define PIMG_VERSION 2
#define PIMG_MAX (1024 * 1024)        /* no image is larger (a policy file is at most 1 MiB) */
#define PIMG_POOLS_MAX 256
#define PIMG_NONE UINT32_MAX          /* offset of an absent string */

struct pimg_str {
	uint32_t off;                     /* into the string table; PIMG_NONE: absent */
	uint32_t len;                     /* without the NUL that follows */
};

struct pimg_header {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved;                /* 0 */
	uint32_t total_len;               /* the whole image, header and strings included */
	uint32_t n_pools;
	uint32_t n_sites;
	uint32_t n_wrappers;
	uint32_t n_triggers;
	uint32_t strings_len;
	struct pimg_str name;             /* the policy's */
	uint32_t mode;                    /* enum policy_mode */
	uint32_t protection;              /* enum policy_protection */
	uint32_t report_burst;            /* the file's daemon settings the shim obeys */
	uint32_t report_interval_s;
	/* CLOCK_REALTIME us when the policy was loaded, set by the loader
	 * after policy_image_compile() (0 there): pmallocd's load of the file,
	 * or the file's mtime where the shim read it itself.  Told in learned
	 * entries; nothing decides on it. */
	uint64_t loaded_us;
};

struct pimg_pool {
	struct pimg_str name;
	uint64_t max_bytes;               /* 0: no cap */
	uint32_t first_site, n_sites;     /* slices, in pool order, without gaps */
	uint32_t first_wrapper, n_wrappers;
	uint32_t first_trigger, n_triggers;
	uint32_t take;                    /* enum policy_take */
	uint32_t roles;                   /* role.h's mask; 0: every role */
};

#define PIMG_SITE_BY_OFFSET 1u

struct pimg_site {
	struct pimg_str object;           /* glob; absent: any object */
	struct pimg_str function;         /* glob; "+0xOFFSET" for an offset site */
	struct pimg_str build_id;         /* offset sites only; absent: any */
	uint64_t offset;                  /* offset sites only */
	uint32_t flags;                   /* PIMG_SITE_* */
	uint32_t reserved;                /* 0 */
};

struct pimg_wrapper {
	struct pimg_str function;         /* glob */
};

struct pimg_trigger {
	uint32_t kind;                    /* enum policy_trigger_kind */
	uint32_t call;                    /* enum policy_call, on-call only; 0 otherwise */
	uint64_t after_ns;                /* after only; 0 otherwise */
};

static_assert(sizeof(struct pimg_header) % 8 == 0, "records stay aligned");
static_assert(sizeof(struct pimg_pool) % 8 == 0, "records stay aligned");
static_assert(sizeof(struct pimg_site) % 8 == 0, "records stay aligned");
static_assert(sizeof(struct pimg_wrapper) % 8 == 0, "records stay aligned");
static_assert(sizeof(struct pimg_trigger) % 8 == 0, "records stay aligned");

/* The image of policy p of set (set's daemon settings included), malloc'ed
 * in *ret, its length in *ret_len.  0, -E2BIG when it would exceed
 * PIMG_MAX or has more than PIMG_POOLS_MAX pools, -EINVAL for a model the
 * parser cannot have produced, -ENOMEM.  Pure otherwise (no output). */
int policy_image_compile(const struct policy_set *set, const struct policy *p, void **ret,
			 size_t *ret_len);

/* 0 when buf[0, len) is a well-formed image: 8-byte aligned, magic,
 * version, total length, every count, slice, offset, length, enum, flag
 * and reserved field checked, every string NUL-terminated inside the table
 * with no NUL before its end; -EPROTO otherwise.  Reads nothing outside
 * buf[0, len); pure: no allocation, no system call, no output. */
int policy_image_validate(const void *buf, size_t len);

/* ---- accessors (a validated image only) ---- */

static inline const struct pimg_pool *pimg_pools(const struct pimg_header *h)
{
	return (const struct pimg_pool *)(const void *)(h + 1);
}

static inline const struct pimg_site *pimg_sites(const struct pimg_header *h)
{
	return (const struct pimg_site *)(const void *)(pimg_pools(h) + h->n_pools);
}

static inline const struct pimg_wrapper *pimg_wrappers(const struct pimg_header *h)
{
	return (const struct pimg_wrapper *)(const void *)(pimg_sites(h) + h->n_sites);
}

static inline const struct pimg_trigger *pimg_triggers(const struct pimg_header *h)
{
	return (const struct pimg_trigger *)(const void *)(pimg_wrappers(h) + h->n_wrappers);
}

static inline const char *pimg_strings(const struct pimg_header *h)
{
	return (const char *)(const void *)(pimg_triggers(h) + h->n_triggers);
}

/* The string s of h; NULL when absent. */
static inline const char *pimg_str(const struct pimg_header *h, struct pimg_str s)
{
	return s.off == PIMG_NONE ? NULL : pimg_strings(h) + s.off;
}

static inline const char *pimg_policy_name(const struct pimg_header *h)
{
	return pimg_str(h, h->name);
}

static inline const struct pimg_pool *pimg_pool(const struct pimg_header *h, size_t i)
{
	return &pimg_pools(h)[i];
}

static inline const char *pimg_pool_name(const struct pimg_header *h, size_t i)
{
	return pimg_str(h, pimg_pool(h, i)->name);
}

/* Site j (0 <= j < pool->n_sites) of pool. */
static inline const struct pimg_site *pimg_pool_site(const struct pimg_header *h,
						     const struct pimg_pool *pool, size_t j)
{
	return &pimg_sites(h)[pool->first_site + j];
}

/* Wrapper glob j of pool. */
static inline const char *pimg_pool_wrapper(const struct pimg_header *h, const struct pimg_pool *pool,
					    size_t j)
{
	return pimg_str(h, pimg_wrappers(h)[pool->first_wrapper + j].function);
}

static inline const struct pimg_trigger *pimg_pool_trigger(const struct pimg_header *h,
							   const struct pimg_pool *pool, size_t j)
{
	return &pimg_triggers(h)[pool->first_trigger + j];
}

#endif
