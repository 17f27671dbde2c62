/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libconfig_streams.c - the standard streams of the shim's private libconfig.
 *
 * The shim links libconfig statically with its symbols hidden (see the
 * Makefile: the program's own config_init must never be the one called).
 * Debian's archive reads stdin, stdout and stderr PC-relative, which a
 * shared object cannot do with libc's variables, so the build renames the
 * three to these.  libconfig's scanner only stores stdin and stdout as its
 * default input and output (the shim gives it strings), and writes to
 * stderr only in a fatal error; the constructor gives them libc's values.
 *
 * Never called by anyone else; allocates nothing.
 */
#include <stdio.h>

/* Hidden, as everything in the shim not marked PMALLOC_EXPORT. */
FILE *pmalloc_libconfig_stdin;
FILE *pmalloc_libconfig_stdout;
FILE *pmalloc_libconfig_stderr;

__attribute__((constructor)) static void libconfig_streams_init(void)
{
	pmalloc_libconfig_stdin = stdin;
	pmalloc_libconfig_stdout = stdout;
	pmalloc_libconfig_stderr = stderr;
}
