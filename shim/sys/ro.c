/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ro.c - the list of the shim's own read-only pages (ro.h), itself in a
 * page of its own frozen last: after ro_freeze_all no write can drop a
 * page from it; and arming's freezes of listed pages, held and done
 * together (ro_hold .. ro_release), adjacent pages in one mprotect, under
 * the owners' locks of pages other threads open (ro_freeze_locked).
 * Never allocates, never prints, never leaves a page writable without
 * naming it to the caller, never holds a page that is not listed.
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

/* The freezes put off between ro_hold and ro_release: written by the
 * constructor's thread alone before main, empty again after, and only
 * ever pages of the list (never a pool's, never what the program owns),
 * so no decision rests on them once the program runs. */
#define HELD_MAX 12
static struct held {
	void *p;
	size_t len;
	void (*lock)(void), (*unlock)(void);   /* its owner's, or NULL */
} held[HELD_MAX];
static size_t n_held;
static __thread bool holding __attribute__((tls_model("initial-exec")));

void ro_hold(void)
{
	holding = true;
}

static const char *listed_name(const void *p, size_t len)
{
	for (size_t i = 0; i < list.s.n; i++)
		if (list.s.e[i].p == p && list.s.e[i].len == len)
			return list.s.e[i].name;
	return NULL;
}

int ro_freeze_locked(void *p, size_t len, void (*lock)(void), void (*unlock)(void))
{
	if (!holding || !listed_name(p, len))
		return os_protect_ro(p, len);
	for (size_t i = 0; i < n_held; i++)
		if (held[i].p == p && held[i].len == len)
			return 0;
	if (n_held == HELD_MAX)
		return os_protect_ro(p, len);
	held[n_held++] = (struct held){ p, len, lock && unlock ? lock : NULL, lock && unlock ? unlock : NULL };
	return 0;
}

int ro_freeze(void *p, size_t len)
{
	return ro_freeze_locked(p, len, NULL, NULL);
}

/* The owners' locks of held[i..j), each once, in address order. */
struct lock_pair {
	void (*lock)(void), (*unlock)(void);
};

static size_t run_locks(size_t i, size_t j, struct lock_pair *out)
{
	size_t n = 0;
	for (size_t k = i; k < j; k++) {
		bool seen = !held[k].lock;
		for (size_t m = 0; m < n && !seen; m++)
			seen = out[m].lock == held[k].lock;
		if (!seen)
			out[n++] = (struct lock_pair){ held[k].lock, held[k].unlock };
	}
	return n;
}

bool ro_held(const void *p, size_t len)
{
	for (size_t i = 0; holding && i < n_held; i++)
		if (held[i].p == p && held[i].len == len)
			return true;
	return false;
}

int ro_release(const char **left)
{
	holding = false;
	/* By address (a handful: insertion), then each run of adjacent pages
	 * in one call; a run that fails is tried again a page at a time, so
	 * that what stays writable is named as each owner's own call would. */
	for (size_t i = 1; i < n_held; i++)
		for (size_t j = i; j > 0 && (uintptr_t)held[j - 1].p > (uintptr_t)held[j].p; j--) {
			struct held t = held[j];
			held[j] = held[j - 1];
			held[j - 1] = t;
		}
	int first = 0;
	for (size_t i = 0; i < n_held;) {
		size_t j = i + 1;
		uintptr_t end = (uintptr_t)held[i].p + held[i].len;
		for (; j < n_held && (uintptr_t)held[j].p == end; j++)
			end += held[j].len;
		/* Under the owners' locks: never between another thread's open
		 * and its write (ro_freeze_locked). */
		struct lock_pair lk[HELD_MAX];
		size_t n_lk = run_locks(i, j, lk);
		for (size_t m = 0; m < n_lk; m++)
			lk[m].lock();
		if (os_protect_ro(held[i].p, end - (uintptr_t)held[i].p) < 0) {
			for (size_t k = i; k < j; k++) {
				int r = os_protect_ro(held[k].p, held[k].len);
				if (r < 0 && first == 0) {
					first = r;
					*left = listed_name(held[k].p, held[k].len);
				}
			}
		}
		for (size_t m = n_lk; m > 0; m--)
			lk[m - 1].unlock();
		i = j;
	}
	n_held = 0;
	return first;
}
