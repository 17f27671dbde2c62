/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_inject.c - write one journal entry with exactly the fields given,
 * as a hostile or a well-behaved process could: the tests of pmallocctl
 * violations use it to fake pmallocd's violation entries.
 *
 *   journal_inject FIELD=VALUE... [hex:FIELD=HEXBYTES...]
 *
 * A "hex:" argument gives the value as hex digits, so that it can hold NUL,
 * newlines or bytes that are not UTF-8.  Exits 0 when journald took the entry,
 * JOURNAL_INJECT_LINGER_MS after it (journald reads the sender's _EXE from
 * /proc when it takes the datagram: a sender gone by then has none).
 *
 * Calls sd_journal_sendv() from libsystemd.so.0, loaded with dlopen() so that
 * the Makefile's plain rule for test programs (no libsystemd) builds it too.
 * Never used outside tests.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "NAME=4142" -> "NAME=AB" (malloc'ed, length in *len); NULL if malformed. */
static char *decode_hex(const char *arg, size_t *len)
{
	const char *eq = strchr(arg, '='), *h;
	size_t name_len, n;
	char *out;

	if (!eq || strlen(eq + 1) % 2)
		return NULL;
	name_len = (size_t)(eq - arg) + 1;
	n = strlen(eq + 1) / 2;
	out = malloc(name_len + n + 1);
	if (!out)
		return NULL;
	memcpy(out, arg, name_len);
	h = eq + 1;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(out);
			return NULL;
		}
		out[name_len + i] = (char)(hi << 4 | lo);
	}
	*len = name_len + n;
	return out;
}

int main(int argc, char **argv)
{
	int (*sendv)(const struct iovec *iov, int n);
	struct iovec *iov;
	void *lib;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FIELD=VALUE... [hex:FIELD=HEXBYTES...]\n", argv[0]);
		return 2;
	}
	lib = dlopen("libsystemd.so.0", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "journal_inject: %s\n", dlerror());
		return 1;
	}
	*(void **)&sendv = dlsym(lib, "sd_journal_sendv");
	if (!sendv) {
		fprintf(stderr, "journal_inject: %s\n", dlerror());
		return 1;
	}
	iov = calloc((size_t)argc, sizeof(*iov));
	if (!iov)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "hex:", 4) == 0) {
			iov[i - 1].iov_base = decode_hex(argv[i] + 4, &iov[i - 1].iov_len);
			if (!iov[i - 1].iov_base) {
				fprintf(stderr, "journal_inject: bad hex field: %s\n", argv[i]);
				return 2;
			}
		} else {
			iov[i - 1].iov_base = argv[i];
			iov[i - 1].iov_len = strlen(argv[i]);
		}
	}
	r = sendv(iov, argc - 1);
	if (r < 0) {
		fprintf(stderr, "journal_inject: sd_journal_sendv: %s\n", strerror(-r));
		return 1;
	}
	const char *linger = getenv("JOURNAL_INJECT_LINGER_MS");
	if (linger) {
		long ms = strtol(linger, NULL, 10);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		if (ms > 0)
			nanosleep(&ts, NULL);
	}
	return 0;
}
