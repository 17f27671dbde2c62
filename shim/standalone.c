/*
 * standalone.c - what libpmalloc.so (the pool API without interposition)
 * answers for the parts of include/pmalloc.h that only the preloaded shim
 * has.  Never linked into libpmalloc_shim.so, whose definitions these are
 * stand-ins for: a program linked with -lpmalloc and preloaded with the shim
 * calls the shim's.
 */
#include "pmalloc.h"
#include "client.h"
#include "heap.h"
#include "shim.h"

#include <errno.h>

/* No policy is ever armed here: reports take the default limits. */
union shim_ro_page shim_ro __attribute__((aligned(RO_PAGE)));

/* Set by fault.c while it handles a violation; nothing here routes
 * allocations, so nothing reads it. */
__thread int shim_busy __attribute__((tls_model("initial-exec")));

/* No policy, hence no interposition pools: none by that name is active. */
PMALLOC_EXPORT int pmalloc_protect_named(const char *pool)
{
	(void)pool;
	errno = ENOENT;
	return -1;
}

/* No interposed free() here: nothing to switch when the arena is reserved. */
void heap_arena_reserved(void)
{
}

/* No pmallocd and no journal here: a violation's record ends with its
 * stderr line (report.c). */
void client_report(struct pmw_report *r)
{
	(void)r;
}
