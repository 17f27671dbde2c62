/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tamper.h - what the two tamper programs (api_tamper, api_tamper_reload)
 * share: where the shim's writable data and its thread-local block are
 * (find_shim, a dl_iterate_phdr callback that fills seg), and the fake
 * journald they play under TAMPER_JOURNAL=1 (journal_open, journal_has).
 *
 * Header-only, as prog.h: each program is one .c file.  Knows nothing of
 * the shim's layout but its ELF program headers; the violation's
 * MESSAGE_ID comes from common/proto/msgid.h, never written out here.
 * Must never allocate (journal_has drains into a static buffer).
 */
#ifndef PMALLOC_TEST_TAMPER_H
#define PMALLOC_TEST_TAMPER_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../common/proto/msgid.h"

struct shim_seg {
	uintptr_t base;              /* load bias */
	uintptr_t lo, hi;            /* writable, outside RELRO */
	uintptr_t tls;               /* this thread's block */
	size_t tls_len;
	char path[512];
};
static struct shim_seg seg;

/* For dl_iterate_phdr: the shim's writable PT_LOAD segment, less what
 * RELRO makes read-only (up to the first page boundary past its end), and
 * its TLS block, into seg; 1 once found. */
static int find_shim(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libpmalloc_shim.so"))
		return 0;
	uintptr_t relro_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_RELRO)
			relro_hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		if (ph->p_type == PT_TLS)
			seg.tls_len = ph->p_memsz;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			seg.lo = info->dlpi_addr + ph->p_vaddr;
			seg.hi = seg.lo + ph->p_memsz;
		}
	}
	relro_hi &= ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	if (relro_hi > seg.lo)
		seg.lo = relro_hi;
	seg.base = info->dlpi_addr;
	seg.tls = (uintptr_t)info->dlpi_tls_data;
	snprintf(seg.path, sizeof(seg.path), "%s", info->dlpi_name);
	return 1;
}

/* The fake journald: a datagram socket bound at journald's path, read
 * after each run.  Exits 2 (naming who) when it cannot be bound. */
#define JOURNAL_SOCKET "/run/systemd/journal/socket"
static int journal_fd = -1;

static void journal_open(const char *who)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", JOURNAL_SOCKET);
	unlink(JOURNAL_SOCKET);
	journal_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int size = 4 << 20;
	if (journal_fd < 0 || bind(journal_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "%s: the fake journal: %m\n", who);
		exit(2);
	}
	setsockopt(journal_fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

/* Did the fake journald get a violation entry from pid?  Drains it;
 * false when it was never opened. */
static bool journal_has(pid_t pid)
{
	static char buf[16384];
	char field[40];
	bool found = false;
	if (journal_fd < 0)
		return false;
	snprintf(field, sizeof(field), "\nOBJECT_PID=%d\n", (int)pid);
	for (;;) {
		ssize_t len = recv(journal_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (len < 0)
			break;
		buf[len] = '\0';
		if (strstr(buf, "MESSAGE_ID=" MID_VIOLATION "\n") && strstr(buf, field))
			found = true;
	}
	return found;
}

#endif
