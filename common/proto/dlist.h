/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dlist.h - intrusive doubly linked lists whose head is a plain pointer and
 * whose ends are NULL: the shim's (the arena's free runs, the pool
 * registry, a pool's regions and spans) and pmallocd's (daemon/pmallocd/list.h).  Macros, so
 * that each struct names its own link fields.
 *
 * Never locks and never allocates: the caller holds the list's lock.  Each
 * operation is a few loads and stores, no loop.
 */
#ifndef PMALLOC_DLIST_H
#define PMALLOC_DLIST_H

#include <stddef.h>

/* Put e first in the list at head; e's links prev and next are written. */
#define DLIST_PUSH(head, e, prev, next) do { \
		(e)->prev = NULL; \
		(e)->next = (head); \
		if (head) \
			(head)->prev = (e); \
		(head) = (e); \
	} while (0)

/* The same for a list that also keeps its last element in tail. */
#define DLIST_PUSH_FRONT(head, tail, e, prev, next) do { \
		if (!(head)) \
			(tail) = (e); \
		DLIST_PUSH(head, e, prev, next); \
	} while (0)

/* e becomes the last element: the same, on the list read backwards. */
#define DLIST_PUSH_BACK(head, tail, e, prev, next) DLIST_PUSH_FRONT(tail, head, e, next, prev)

/* Take e out of the list at head; e's own links are left as they are. */
#define DLIST_UNLINK(head, e, prev, next) do { \
		if ((e)->prev) \
			(e)->prev->next = (e)->next; \
		else \
			(head) = (e)->next; \
		if ((e)->next) \
			(e)->next->prev = (e)->prev; \
	} while (0)

#endif
