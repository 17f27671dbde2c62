/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ro.c - the list of the shim's own read-only pages (ro.h), itself in a
 * page of its own frozen last: after ro_freeze_all no write can drop a
 * page from it.  Never allocates, never prints, never leaves a page
 * writable without naming it to the caller.
 */
#include "ro.h"
#include "os.h"

#include <errno.h>

struct ro_entry {
	const char *name;
	void *p;
	size_t len;
	bool by_owner;
	bool frozen;
};
static union {
	struct {
		size_t n;
		bool frozen;                 /* the list itself */
		struct ro_entry e[RO_MAX];
	} s;
	unsigned char page[RO_PAGE];
} list __attribute__((aligned(RO_PAGE)));
_Static_assert(sizeof(list) == RO_PAGE, "the list has its page to itself");

int ro_register(const char *name, void *p, size_t len, bool by_owner)
{
	if (list.s.frozen)
		return -EBUSY;
	if (!ro_fits(p, len, RO_PAGE))
		return -EINVAL;
	if (list.s.n == RO_MAX)
		return -ENOSPC;
	list.s.e[list.s.n++] = (struct ro_entry){ .name = name, .p = p, .len = len, .by_owner = by_owner };
	return 0;
}

size_t ro_count(void)
{
	return list.s.n;
}

int ro_freeze_all_page(size_t page, bool seal, const char **left)
{
	int first = 0;
	for (size_t i = 0; i < list.s.n && !list.s.frozen; i++) {
		struct ro_entry *e = &list.s.e[i];
		int r = 0;
		if (!ro_fits(e->p, e->len, page))
			r = -EOPNOTSUPP;     /* the kernel's page is larger than RO_PAGE */
		else if (!e->by_owner && !e->frozen && (r = os_freeze(e->p, e->len, seal)) == 0)
			e->frozen = true;
		if (r < 0 && first == 0) {
			first = r;
			*left = e->name;
		}
	}
	if (list.s.frozen)
		return first;
	list.s.frozen = true;
	int r = ro_fits(&list, sizeof(list), page) ? os_freeze(&list, sizeof(list), seal) : -EOPNOTSUPP;
	if (r < 0 && first == 0) {
		first = r;
		*left = "list of read-only pages";
	}
	return first;
}

int ro_freeze_all(bool seal, const char **left)
{
	return ro_freeze_all_page(os_page_size, seal, left);
}
