/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * os.h - the shim's only door to the kernel's memory and signal calls.
 *
 * The rule of what goes through here is in os.c's opening comment.
 *
 * Contract, once for all: every function that can fail returns 0 or -errno
 * and writes its result parameters only on success; none allocates; all are
 * async-signal-safe except os_init(), os_process_barrier() and
 * os_sleep_until_ns() (which is only for the shim's own threads).
 */
#ifndef PMALLOC_OS_H
#define PMALLOC_OS_H

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The alignment and size of a page of the shim's own state made read-only
 * after it is written (ro.h lists them): a static at a link-time address,
 * so no writable pointer leads to it.  The largest page size of the
 * kernels built for (mprotect needs whole pages): x86-64's kernels have
 * 4 KiB pages, arm64's and ppc64's up to 64 KiB.  The one definition:
 * every read-only page of the shim is sized and aligned by it. */
#if defined(__x86_64__)
#define RO_PAGE 4096u
#else
#define RO_PAGE 65536u
#endif

/* What os_init() probes, in a page of its own made read-only once probed:
 * whether mseal(2) is used decides what a "seal" policy's protects are,
 * and the page size every protect's range is cut by, so neither may be a
 * writable word.  A static at a link-time address: no pointer leads to it. */
struct os_ro {
	size_t page_size;
	int have_mseal;              /* 1 when mseal(2) works here */
	/* The shim's secret (getrandom at os_init, else the kernel's AT_RANDOM
	 * bytes; 0 before): what a writable word that decides something is
	 * mixed with (the guard's token, guard.h; the walk's jump record,
	 * fault.c), so that a write cannot forge it without first reading
	 * this page, as glibc's pointer guard.  See shim/sys/guard.h for the
	 * rule. */
	uintptr_t secret;
	/* libc's sigaction (dlsym RTLD_NEXT at os_init): the shim exports
	 * sigaction and __sigaction itself, so neither name can be bound to
	 * from here; read-only with the page. */
	int (*libc_sigaction)(int, const struct sigaction *, struct sigaction *);
	/* libc's siglongjmp, the same way: the shim exports the jump functions
	 * (sigmask.c), and its own fault handler's jump is not the program's. */
	void (*libc_siglongjmp)(struct __jmp_buf_tag *, int);
};
union os_ro_page {
	struct os_ro s;
	unsigned char page[RO_PAGE];
};
extern union os_ro_page os_ro __attribute__((visibility("hidden")));
#define os_page_size (os_ro.s.page_size)
#define os_have_mseal (os_ro.s.have_mseal)
#define os_secret (os_ro.s.secret)

/* Probe once and freeze what was probed: 0, or -errno when the page could
 * not be made read-only (the caller runs unprotected, and says so). */
int os_init(void) __attribute__((warn_unused_result));
/* Reserve len bytes of address space, inaccessible, not charged to commit. */
int os_reserve(size_t len, void **ret);
/* Make [p, p+len) of a reservation read-write (fresh pages read as zero). */
int os_commit(void *p, size_t len);
/* Give [p, p+len) back to the system, leaving it reserved and inaccessible. */
int os_decommit(void *p, size_t len);
/* Drop the pages of [p, p+len), keeping the mapping and its protection:
 * they read as zero after (learn.c: pages whose objects were all freed
 * before the trigger). */
int os_discard(void *p, size_t len);
/* Make [p, p+len) read-only.  Every result is checked (a protect of pool
 * memory or of the shim's own state that fails silently would leave a
 * decision writable): fatal(), or said with the process unprotected. */
int os_protect_ro(void *p, size_t len) __attribute__((warn_unused_result));
/* Make [p, p+len) read-write again (audit mode's single-step, and the
 * narrow write paths of the shim's read-only pages). */
int os_protect_rw(void *p, size_t len) __attribute__((warn_unused_result));
/* mseal(2) [p, p+len): no later mprotect/munmap/mremap of it can succeed. */
int os_seal(void *p, size_t len) __attribute__((warn_unused_result));
/* The shim's own state frozen: [p, p+len) read-only, and sealed too when
 * seal and the kernel has mseal.  0 or -errno. */
int os_freeze(void *p, size_t len, bool seal) __attribute__((warn_unused_result));
/* Fresh read-write anonymous memory for the shim's own metadata. */
int os_map(size_t len, void **ret);
int os_unmap(void *p, size_t len);
/* len bytes of the file open at fd from offset off (a multiple of the page
 * size), mapped read-only and private: the mapping outlives the descriptor
 * (and a later chroot). */
int os_map_file(int fd, uint64_t off, size_t len, const void **ret);
/* Fresh read-write anonymous memory shared with the children forked
 * after (learn_stop.c's word a forked child reads). */
int os_map_shared(size_t len, void **ret);
/* Like os_map, but not charged to the commit limit: for metadata that is
 * sized for the worst case and touched as it is used. */
int os_map_lazy(size_t len, void **ret);
/* madvise(MADV_HUGEPAGE) [p, p+len): transparent huge pages where the
 * kernel offers them (a hint; failure changes nothing but speed). */
int os_advise_huge(void *p, size_t len);
/* Make [p, p+len) present and writable now, in one call
 * (MADV_POPULATE_WRITE, Linux 5.14): one kernel entry for its pages instead
 * of a fault per page.  A hint: where it is refused nothing changes but
 * speed, and a kernel without it is not asked again. */
int os_populate(void *p, size_t len);
/* Is the page holding p present in memory (mincore(2))? */
int os_present(const void *p, bool *ret);
/* A full memory barrier on every thread of the process (membarrier(2), or a
 * TLB shoot-down where that is refused).  Not async-signal-safe. */
int os_process_barrier(void);
/* The libc sigaction, bypassing the shim's interposed one. */
int os_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* This thread's signal mask, as rt_sigprocmask(2): not filtered by the
 * shim's own pthread_sigmask (sigmask.c). */
int os_sigmask(int how, const sigset_t *set, sigset_t *old);
/* libc's siglongjmp to env (saved by sigsetjmp), past the shim's own;
 * returns only when libc has none (never with glibc).  Async-signal-safe
 * after os_init. */
void os_siglongjmp(struct __jmp_buf_tag *env, int val);
/* This thread's alternate signal stack (sigaltstack(NULL, ret)). */
int os_altstack(stack_t *ret);
/* CLOCK_MONOTONIC (or, coarse, CLOCK_MONOTONIC_COARSE: a few ns cheaper,
 * a tick coarser) in nanoseconds.  vDSO; async-signal-safe. */
uint64_t os_monotonic_ns(bool coarse);
/* Let another thread run (sched_yield), errno kept. */
void os_yield(void);
/* write(2) all of buf to fd, retrying on EINTR and short writes. */
void os_write_all(int fd, const char *buf, size_t len);
/* This thread's kernel id (gettid(2)); cannot fail. */
int os_gettid(void);
/* Send sig to this thread (tgkill(2)), as the kernel sends a fault. */
int os_signal_self(int sig);
/* Is tid a live thread of this process (tgkill(2) with signal 0)?  For a
 * spin lock's owner word: one no thread holds (overwritten, or its thread
 * gone) is free, so a garbled word never hangs a fault handler. */
bool os_thread_alive(int tid);
/* Wait up to timeout_ms for events on fd (the raw ppoll(2): the shim
 * interposes poll() and ppoll() as triggers); *ret_revents is 0 when the
 * time ran out.  -EINTR when a signal came first. */
int os_wait_fd(int fd, short events, int timeout_ms, short *ret_revents);
/* How many threads of this process, the caller left out, are running or
 * ready to run (state R) or in an uninterruptible sleep (D), as
 * /proc/self/task says; -errno when it cannot be read (a chroot without
 * /proc).  A thread blocked in the kernel (S: a wait, a sleep, a lock
 * taken by another) or stopped counts as at rest.  For on-wait's settle
 * (trigger.c); reads a file per thread. */
int os_threads_busy(void);
/* Keep a descriptor of /proc (procfs checked) for os_threads_busy, called
 * before a chroot: inside, "/proc" is gone, but "self/task" looked up from
 * the kept directory still names the caller's threads (procfs resolves
 * "self" for whoever asks, so a fork after the chroot reads its own).
 * Believed only while the descriptor is still the one opened (device and
 * inode): a program that closed every descriptor may have reused it. */
void os_keep_proc(void);
/* len random bytes (getrandom(2)), for ids such as learn mode's run. */
int os_random(void *buf, size_t len);
/* Sleep until CLOCK_MONOTONIC reaches ns, through signals. */
void os_sleep_until_ns(uint64_t ns);
/* The shim's own reads (read(2), pread(2), recv(2) made raw): the bytes
 * read, or -errno (-EINTR not retried).  Raw because the shim interposes
 * read, pread and recv for the program (kwrite.c): its own reads, into its
 * own buffers, never go through them. */
ssize_t os_read(int fd, void *buf, size_t len);
ssize_t os_pread(int fd, void *buf, size_t len, uint64_t off);
ssize_t os_recv(int fd, void *buf, size_t len, int flags);

#endif
