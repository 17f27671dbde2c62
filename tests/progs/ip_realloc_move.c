/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_realloc_move - a name first allocated from a site of no pool (the
 * heap), then grown by realloc from grow_name(), as redis's sds strings
 * (sdsnewlen, then sdsMakeRoomFor's realloc): once before listen(), once
 * after.  A pool naming grow_name with take = "until-trigger" gets the
 * first (the heap block moves into it) and protects it at listen(); the
 * second stays on the heap.  With take = "always", both stay on the heap
 * (a heap block is moved only into an until-trigger pool).
 *
 *   ip_realloc_move          print "early P late P" (is_protected of each),
 *                            and whether both names survived the moves
 *   ip_realloc_move write    write into the early name (dies when protected)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

#define NOINLINE __attribute__((noinline))

NOINLINE static char *new_name(const char *s)
{
	char *p = malloc(8);
	if (!p)
		exit(3);
	snprintf(p, 8, "%s", s);
	__asm__ __volatile__("" ::: "memory");
	return p;
}

NOINLINE static char *grow_name(char *p, const char *more)
{
	size_t n = strlen(p);
	char *q = realloc(p, n + strlen(more) + 1);
	if (!q)
		exit(3);
	strcpy(q + n, more);
	__asm__ __volatile__("" ::: "memory");
	return q;
}

int main(int argc, char **argv)
{
	char *early = grow_name(new_name("client"), "|no-evict, grown past its first block");
	listen_once();
	char *late = grow_name(new_name("late"), "|grown after the trigger, stays on the heap");
	int ok = strcmp(early, "client|no-evict, grown past its first block") == 0 &&
		 strcmp(late, "late|grown after the trigger, stays on the heap") == 0;
	printf("early %d late %d %s\n", is_protected(early), is_protected(late), ok ? "intact" : "corrupt");
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "write") == 0)
		early[0] = 'X';
	return 0;
}
