/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sandbox_late - a program that restricts itself, then allocates from an
 * object for the first time: no_new_privs and a seccomp filter that kills
 * the process at any open(2) or openat(2) (as strict sandboxes do), then
 * libip_plugin's plugin_init() (preloaded; found with dlsym) allocates.
 * Says "sandboxed" on stderr between the two, with write(2), so that it
 * falls in order among the shim's words there.
 *
 *   sandbox_late     prints "plugin_init ok" and exits 0; killed by
 *                    SIGSYS if anything opens a file after the filter
 *   exits 77 where the filter cannot be built (not x86-64)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
#if defined(__x86_64__)
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	void *(*init)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "plugin_init");
	if (!init) {
		fprintf(stderr, "sandbox_late: no plugin_init (preload libip_plugin.so)\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("sandbox_late: seccomp");
		return 2;
	}
	static const char said[] = "sandboxed\n";
	if (write(2, said, sizeof(said) - 1) < 0)
		return 2;
	printf("plugin_init %s\n", init("sandboxed") ? "ok" : "failed");
	return 0;
#else
	return 77;
#endif
}
