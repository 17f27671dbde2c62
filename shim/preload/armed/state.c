/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * state.c - the storage of the interposition's armed state (armed.h), and
 * what the pool core reads of it through its hooks (hooks.h).  Never
 * writes the state: init.c builds it and makes it read-only.
 */
#include "armed.h"

union shim_ro_page shim_ro __attribute__((aligned(RO_PAGE)));

bool state_report_limits(unsigned int *burst, unsigned int *interval_s, uint64_t *generation)
{
	const struct shim_state *st = shim;
	if (!st)
		return false;
	*burst = st->image->report_burst;
	*interval_s = st->image->report_interval_s;
	*generation = st->generation;
	return true;
}
