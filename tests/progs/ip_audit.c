/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_audit - audit mode: writes to protected pool memory are reported and
 * let through; the program sees its writes, and the memory is read-only
 * again afterwards.  make_secret() and make_table() are the sites,
 * listen() the trigger.
 *
 *   ip_audit             two one-byte writes into a small object
 *   ip_audit straddle    one 8-byte write across the boundary of two
 *                        protected pages of a large object
 *   ip_audit sigtrap     as the first, with the program's own SIGTRAP
 *                        handler installed after start-up (it counts)
 *   ip_audit sigtrap-ign as the first, with SIGTRAP ignored
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"

STRING_SITE(make_secret, 20, "secret")

static char *make_table(void)
{
	char *t = malloc(3 * 4096);
	if (!t)
		exit(3);
	memset(t, 0, 3 * 4096);
	return t;
}

/* One unaligned 8-byte store: a single instruction touching two pages. */
static void corrupt_u64(volatile uint64_t *where, uint64_t what)
{
	*where = what;
}

static int straddle(void)
{
	char *t = make_table();
	listen_once();
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t boundary = ((uintptr_t)t + page) & ~(uintptr_t)(page - 1);
	volatile uint64_t *w = (volatile uint64_t *)(boundary - 4);
	printf("protected %d %d; write at offset %zu\n", is_protected((const void *)w),
	       is_protected((const void *)(boundary + 3)), (size_t)((uintptr_t)w - (uintptr_t)t));
	fflush(stdout);
	corrupt_u64(w, UINT64_C(0x1122334455667788));
	printf("after the write: %llx; still protected %d %d\n", (unsigned long long)*w,
	       is_protected((const void *)w), is_protected((const void *)(boundary + 3)));
	return 0;
}

static volatile sig_atomic_t traps;

static void on_trap(int sig)
{
	(void)sig;
	traps++;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "straddle") == 0)
		return straddle();
	if (strcmp(mode, "sigtrap") == 0)
		signal(SIGTRAP, on_trap);
	else if (strcmp(mode, "sigtrap-ign") == 0)
		signal(SIGTRAP, SIG_IGN);
	char *s = make_secret();
	listen_once();
	printf("protected %d\n", is_protected(s));
	fflush(stdout);
	corrupt(s, 'S');
	corrupt(s + 1, 'E');
	printf("after the writes: %s; still protected %d\n", s, is_protected(s));
	if (strcmp(mode, "sigtrap") == 0)
		printf("the program's SIGTRAP handler ran %d times\n", (int)traps);
	return 0;
}
