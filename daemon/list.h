/*
 * list.h - the doubly linked lists of pmallocd (clients, budgets, served
 * processes): an element has prev and next, a list is its head pointer.
 *
 * Owns only these two operations, O(1).  Never allocates or frees, and
 * never counts: the caller keeps its own count.
 */
#ifndef PMALLOCD_LIST_H
#define PMALLOCD_LIST_H

#include <stddef.h>

/* e becomes the first element of the list at head. */
#define LIST_PUSH(head, e) \
	do { \
		(e)->prev = NULL; \
		(e)->next = (head); \
		if (head) \
			(head)->prev = (e); \
		(head) = (e); \
	} while (0)

/* e leaves the list at head (its own prev and next are left as they were). */
#define LIST_UNLINK(head, e) \
	do { \
		if ((e)->prev) \
			(e)->prev->next = (e)->next; \
		else \
			(head) = (e)->next; \
		if ((e)->next) \
			(e)->next->prev = (e)->prev; \
	} while (0)

#endif
