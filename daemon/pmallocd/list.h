/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * list.h - the doubly linked lists of pmallocd (clients, budgets, served
 * processes): an element has prev and next, a list is its head pointer.
 *
 * Owns only these two operations, O(1).  Never allocates or frees, and
 * never counts: the caller keeps its own count.
 */
#ifndef PMALLOCD_LIST_H
#define PMALLOCD_LIST_H

#include "dlist.h"

/* e becomes the first element of the list at head. */
#define LIST_PUSH(head, e) DLIST_PUSH(head, e, prev, next)

/* e leaves the list at head (its own prev and next are left as they were). */
#define LIST_UNLINK(head, e) DLIST_UNLINK(head, e, prev, next)

#endif
