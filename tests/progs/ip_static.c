/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ip_static - a static function as an allocation site.
 *
 * make_secret() is static: it exists only in .symtab, so the policy can
 * name it only because the program is not stripped.  make_scratch() is not
 * named and allocates from the ordinary heap.  listen() ends start-up.
 *
 *   ip_static          report where the objects went and exit 0
 *   ip_static write    then write into the secret (dies by SIGSEGV when
 *                      the secret is protected; exits 0 when it is not)
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prog.h"


STRING_SITE(make_secret, 20, "secret-0123456789")

STRING_SITE(make_scratch, 20, "scratch")

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char *secret = make_secret();
	char *scratch = make_scratch();
	printf("before listen: secret protected %d\n", is_protected(secret));
	listen_once();
	printf("after listen: secret protected %d, scratch protected %d\n", is_protected(secret),
	       is_protected(scratch));
	scratch[0] = 'S';                       /* the heap stays writable */
	fflush(stdout);
	if (strcmp(mode, "write") == 0)
		corrupt(secret + 5, 'X');
	printf("secret is %s\n", secret);
	free(scratch);
	free(secret);
	return 0;
}
