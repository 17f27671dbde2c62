/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hooks.c - the pool core's hooks (hooks.h): stored once, then read-only.
 * Owns their page; never calls a hook itself (their callers do).
 */
#include "hooks.h"
#include "stderr.h"
#include "os.h"

#include <stdatomic.h>

union core_hooks_page core_hooks_ro __attribute__((aligned(RO_PAGE)));
static_assert(sizeof(core_hooks_ro) == RO_PAGE, "the hooks have their page to themselves");
_Atomic int core_deferred_pending;

void core_hooks_set(const struct core_hooks *h)
{
	static atomic_flag set = ATOMIC_FLAG_INIT;
	if (atomic_flag_test_and_set(&set))
		fatal("pmalloc", "the pool core's hooks are set twice");
	core_hooks_ro.h = *h;
	if (os_protect_ro(&core_hooks_ro, sizeof(core_hooks_ro)) < 0)
		fatal("pmalloc", "cannot make the pool core's hooks read-only");
}
