/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * common.h - what every file of the shim and the programs shares: export
 * marking, branch hints, sizes.  (The shim's fatal() and debug lines are
 * shim/sys/stderr.h's: the programs link no stderr.c.)
 */
#ifndef PMALLOC_COMMON_H
#define PMALLOC_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <assert.h>

#define PMALLOC_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define cold __attribute__((cold, noinline))

#define ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((uintptr_t)(a) - 1))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Object alignment: alignof(max_align_t) on every target we build for. */
#define PM_ALIGN 16u

#endif
