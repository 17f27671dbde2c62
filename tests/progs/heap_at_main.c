/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_at_main.c - what the program's heap holds when main begins
 * (glibc's mallinfo2): its size, the bytes in use, and the bytes in free
 * chunks other than the top one (holes: what a load that allocated and
 * freed before main would leave).  load_heap.sh runs it under the shim.
 */
#include <malloc.h>
#include <stdio.h>

int main(void)
{
	struct mallinfo2 m = mallinfo2();
	printf("arena %zu inuse %zu holes %zu\n", m.arena, m.uordblks, m.fordblks - m.keepcost);
	return 0;
}
