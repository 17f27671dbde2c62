/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * os.c - the shim's door to the kernel.
 *
 * The rule: every call the shim makes for memory (mmap, mprotect, mseal,
 * munmap, madvise, mincore, membarrier), for signals (sigaction, libc's
 * siglongjmp past the shim's own,
 * rt_sigprocmask, sigaltstack, tgkill), for the thread and the clock
 * (gettid, sched_yield, clock_gettime, clock_nanosleep, getrandom; the
 * threads' states in /proc/self/task), and every raw
 * system call made to get past one of the shim's own interposers (ppoll;
 * read, pread and recv: os_read, os_pread, os_recv), is made here and
 * nowhere else.  What stays in the file that owns the concern is the rest
 * of plain descriptor I/O through libc (open, close, send, connect ...:
 * names the shim does not interpose) and an interposer's hand-over to the
 * libc function it replaces (libc.h).
 *
 * Every function returns 0 or -errno (the contract in os.h; the reads, the
 * bytes read or -errno), never
 * allocates, never logs, and keeps errno as it found it, so callers inside
 * the host program's malloc and signal handler can use it.  Memory calls
 * are raw system calls: another preloaded library that wraps mmap or
 * mprotect must not run (or allocate) inside our allocator.
 * os_process_barrier() is the heavy half of an asymmetric fence: the pool's
 * fast path orders its own store and load with a compiler barrier only.
 */
#define _GNU_SOURCE
#include "os.h"
#include "guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <sys/auxv.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_mseal
#define __NR_mseal 462
#endif

union os_ro_page os_ro __attribute__((aligned(RO_PAGE))) = { .s = { .page_size = 4096 } };
static _Atomic int have_membarrier = 1;   /* until the kernel says otherwise */
static char *_Atomic barrier_page;   /* the fallback's page, when membarrier is refused */


#define OS_CALL(expr) ({ int _e = errno; int _r = (expr) == 0 ? 0 : -errno; errno = _e; _r; })

/* libc's name, the next definition after the shim's (which exports
 * sigaction, __sigaction and the jump functions itself); dlsym may
 * allocate: the guard is set. */
static void *libc_next(const char *name)
{
	int busy = shim_busy_enter();
	void *fn = dlsym(RTLD_NEXT, name);
	shim_busy_leave(busy);
	return fn;
}

static int (*libc_sigaction(void))(int, const struct sigaction *, struct sigaction *)
{
	return (int (*)(int, const struct sigaction *, struct sigaction *))libc_next("__sigaction");
}

int os_init(void)
{
	/* Probed once: the shim's start-up and the pool API's both call it
	 * (pool.c's under its pthread_once, init.c's first, in the
	 * constructor); a later call finds the page frozen and only says so. */
	static _Atomic int probed;           /* 1 frozen, -errno when it could not be */
	int done = atomic_load_explicit(&probed, memory_order_acquire);
	if (done)
		return done < 0 ? done : 0;
	long ps = sysconf(_SC_PAGESIZE);
	if (ps > 0)
		os_ro.s.page_size = (size_t)ps;
	/* mseal(addr, 0, 0) succeeds where the call exists and does nothing. */
	int e = errno;
	os_ro.s.have_mseal = syscall(__NR_mseal, (unsigned long)0, 0UL, 0UL) == 0;
	/* The secret: a thread inside a guarded section keeps its section
	 * (its token is re-made with the new secret). */
	int busy = shim_is_busy();
	uintptr_t secret = 0;
	if (syscall(SYS_getrandom, &secret, sizeof(secret), 1 /* GRND_NONBLOCK */) != (long)sizeof(secret)) {
		const unsigned char *at = (const void *)getauxval(AT_RANDOM);
		if (at)
			memcpy(&secret, at + 8, sizeof(secret));   /* glibc's guards take the first 8 */
	}
	os_ro.s.secret = secret | 2;          /* never 0: a token is never the address alone */
	os_ro.s.libc_sigaction = libc_sigaction();
	os_ro.s.libc_siglongjmp = (void (*)(struct __jmp_buf_tag *, int))libc_next("siglongjmp");
	if (busy)
		(void)shim_busy_enter();
	errno = e;
	int r = os_protect_ro(&os_ro, sizeof(os_ro));
	atomic_store_explicit(&probed, r < 0 ? r : 1, memory_order_release);
	return r;
}

static int map(void *hint, size_t len, int prot, int flags, void **ret)
{
	int e = errno;
	void *p = (void *)syscall(SYS_mmap, hint, len, prot, flags | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
	int r = p == MAP_FAILED ? -errno : 0;
	errno = e;
	if (r == 0)
		*ret = p;
	return r;
}

int os_map_file(int fd, uint64_t off, size_t len, const void **ret)
{
	int e = errno;
	void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ, MAP_PRIVATE, fd, (long)off);
	int r = p == MAP_FAILED ? -errno : 0;
	errno = e;
	if (r == 0)
		*ret = p;
	return r;
}

int os_reserve(size_t len, void **ret)
{
	return map(NULL, len, PROT_NONE, MAP_NORESERVE, ret);
}

int os_commit(void *p, size_t len)
{
	return OS_CALL(syscall(SYS_mprotect, p, len, PROT_READ | PROT_WRITE));
}

int os_decommit(void *p, size_t len)
{
	/* A fresh mapping on top drops the pages and any protection at once. */
	void *q;
	int r = map(p, len, PROT_NONE, MAP_FIXED | MAP_NORESERVE, &q);
	return r;
}

int os_discard(void *p, size_t len)
{
	return OS_CALL(syscall(SYS_madvise, p, len, MADV_DONTNEED));
}

int os_protect_ro(void *p, size_t len)
{
	return OS_CALL(syscall(SYS_mprotect, p, len, PROT_READ));
}

int os_protect_rw(void *p, size_t len)
{
	return OS_CALL(syscall(SYS_mprotect, p, len, PROT_READ | PROT_WRITE));
}

int os_seal(void *p, size_t len)
{
	return OS_CALL(syscall(__NR_mseal, (unsigned long)p, (unsigned long)len, 0UL));
}

int os_freeze(void *p, size_t len, bool seal)
{
	int r = os_protect_ro(p, len);
	if (r == 0 && seal && os_have_mseal)
		r = os_seal(p, len);
	return r;
}

int os_map(size_t len, void **ret)
{
	return map(NULL, len, PROT_READ | PROT_WRITE, 0, ret);
}

int os_map_shared(size_t len, void **ret)
{
	int e = errno;
	void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0L);
	int r = p == MAP_FAILED ? -errno : 0;
	errno = e;
	if (r == 0)
		*ret = p;
	return r;
}

int os_map_lazy(size_t len, void **ret)
{
	return map(NULL, len, PROT_READ | PROT_WRITE, MAP_NORESERVE, ret);
}

int os_advise_huge(void *p, size_t len)
{
	return OS_CALL(syscall(SYS_madvise, p, len, MADV_HUGEPAGE));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int os_populate(void *p, size_t len)
{
	static _Atomic bool unknown;         /* EINVAL once: the kernel has no such advice */
	if (atomic_load_explicit(&unknown, memory_order_relaxed))
		return -EINVAL;
	int r = OS_CALL(syscall(SYS_madvise, p, len, MADV_POPULATE_WRITE));
	if (r == -EINVAL)
		atomic_store_explicit(&unknown, true, memory_order_relaxed);
	return r;
}

int os_present(const void *p, bool *ret)
{
	unsigned char vec = 0;
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)(os_page_size - 1));
	int r = OS_CALL(syscall(SYS_mincore, page, os_page_size, &vec));
	if (r == 0)
		*ret = vec & 1;
	return r;
}

/* Every other thread of the process passes a full memory barrier before
 * this returns.  membarrier(2) where the kernel (and any seccomp filter)
 * allows it; otherwise a TLB shoot-down, which interrupts every CPU running
 * one of our threads: revoking write access to a page those CPUs may cache
 * forces an IPI to each, and taking an interrupt orders their stores. */
int os_process_barrier(void)
{
	int e = errno;
	if (have_membarrier) {
		long r = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
		if (r != 0 && errno == EPERM)     /* registered once per process, at first use */
			r = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ?
				    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) : -1;
		if (r == 0) {
			errno = e;
			return 0;
		}
		have_membarrier = 0;
	}
	char *page = atomic_load(&barrier_page);
	if (!page) {
		void *p = NULL;
		char *none = NULL;
		if (map(NULL, os_page_size, PROT_READ | PROT_WRITE, 0, &p) < 0) {
			errno = e;
			return -ENOMEM;
		}
		page = p;
		*(volatile char *)page = 1;      /* present, so that revoking write access flushes */
		if (!atomic_compare_exchange_strong(&barrier_page, &none, page)) {
			syscall(SYS_munmap, p, os_page_size);
			page = none;
		}
	}
	int r = os_protect_ro(page, os_page_size);
	if (r == 0)
		r = os_protect_rw(page, os_page_size);
	errno = e;
	return r;
}

int os_unmap(void *p, size_t len)
{
	return OS_CALL(syscall(SYS_munmap, p, len));
}

void os_siglongjmp(struct __jmp_buf_tag *env, int val)
{
	void (*fn)(struct __jmp_buf_tag *, int) = os_ro.s.libc_siglongjmp;
	if (fn)
		fn(env, val);
}

int os_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int (*fn)(int, const struct sigaction *, struct sigaction *) = os_ro.s.libc_sigaction;
	if (!fn)
		fn = libc_sigaction();       /* before os_init: never in a fault handler */
	if (!fn)
		return -ENOSYS;
	return OS_CALL(fn(sig, act, old));
}

uint64_t os_monotonic_ns(bool coarse)
{
	struct timespec ts;
	clock_gettime(coarse ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void os_write_all(int fd, const char *buf, size_t len)
{
	int e = errno;
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf += n;
		len -= (size_t)n;
	}
	errno = e;
}

int os_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

int os_signal_self(int sig)
{
	return OS_CALL(syscall(SYS_tgkill, (long)getpid(), (long)os_gettid(), (long)sig));
}

bool os_thread_alive(int tid)
{
	return tid > 0 && OS_CALL(syscall(SYS_tgkill, (long)getpid(), (long)tid, 0L)) == 0;
}

/* The state letter of thread tid (a name in /proc/self/task, dfd), 0 when
 * it is gone: the field after the command's closing parenthesis (a
 * command may hold ')' itself: the last one counts). */
static char thread_state(int dfd, const char *tid)
{
	char path[32], st[512];
	size_t n = strnlen(tid, 16);
	memcpy(path, tid, n);
	memcpy(path + n, "/stat", 6);
	int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t k = os_read(fd, st, sizeof(st) - 1);
	close(fd);
	if (k <= 0)
		return 0;
	st[k] = '\0';
	const char *p = strrchr(st, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static _Atomic int proc_fd = -1;
static dev_t proc_dev;
static ino_t proc_ino;

/* The kept /proc, when the descriptor is still the one opened; -1 else. */
static int kept_proc(void)
{
	struct stat st;
	int fd = atomic_load(&proc_fd);
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == proc_dev && st.st_ino == proc_ino ? fd : -1;
}

void os_keep_proc(void)
{
	int e = errno;
	struct stat st;
	struct statfs sf;
	if (kept_proc() >= 0) {
		errno = e;
		return;
	}
	int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC && fstat(fd, &st) == 0) {
		proc_dev = st.st_dev;
		proc_ino = st.st_ino;
		fd = atomic_exchange(&proc_fd, fd);
	}
	if (fd >= 0)
		close(fd);
	errno = e;
}

/* /proc/self/task, by its path, or from the kept /proc inside a chroot. */
static int open_task_dir(void)
{
	int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int kept = dfd < 0 ? kept_proc() : -1;
	if (kept >= 0)
		dfd = openat(kept, "self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dfd;
}

int os_threads_busy(void)
{
	int e = errno;
	int dfd = open_task_dir();
	if (dfd < 0) {
		int r = -errno;
		errno = e;
		return r;
	}
	struct dirent64_ {
		uint64_t ino;
		int64_t off;
		unsigned short reclen;
		unsigned char type;
		char name[];
	};
	char buf[2048] __attribute__((aligned(8)));
	int me = os_gettid(), busy = 0;
	long n;
	while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			const struct dirent64_ *d = (const void *)(buf + off);
			off += d->reclen;
			int tid = 0;
			for (const char *c = d->name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (tid <= 0 || tid == me)
				continue;
			char s = thread_state(dfd, d->name);
			busy += s == 'R' || s == 'D';
		}
	int r = n < 0 ? -errno : busy;
	close(dfd);
	errno = e;
	return r;
}

int os_wait_fd(int fd, short events, int timeout_ms, short *ret_revents)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
	int e = errno;
	long n = syscall(SYS_ppoll, &pfd, 1, &ts, NULL, (size_t)8);
	int r = n < 0 ? -errno : 0;
	errno = e;
	if (r == 0)
		*ret_revents = n > 0 ? pfd.revents : 0;
	return r;
}

void os_sleep_until_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	int e = errno;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	errno = e;
}

void os_yield(void)
{
	int e = errno;
	sched_yield();
	errno = e;
}

int os_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	/* The raw call: the shim's own pthread_sigmask filters, and glibc's
	 * refuses nothing we ask of it here. */
	return OS_CALL(syscall(SYS_rt_sigprocmask, how, set, old, (size_t)8));
}

int os_altstack(stack_t *ret)
{
	return OS_CALL(syscall(SYS_sigaltstack, NULL, ret));
}

#define OS_IO(expr) ({ int _e = errno; long _n = (expr); ssize_t _r = _n < 0 ? -errno : _n; errno = _e; _r; })

ssize_t os_read(int fd, void *buf, size_t len)
{
	return OS_IO(syscall(SYS_read, fd, buf, len));
}

ssize_t os_pread(int fd, void *buf, size_t len, uint64_t off)
{
	return OS_IO(syscall(SYS_pread64, fd, buf, len, (long)off));
}

ssize_t os_recv(int fd, void *buf, size_t len, int flags)
{
	return OS_IO(syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL));
}

int os_random(void *buf, size_t len)
{
	int e = errno;
	unsigned char *p = buf;
	while (len) {
		long n = syscall(SYS_getrandom, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;
			errno = e;
			return r;
		}
		p += n;
		len -= (size_t)n;
	}
	errno = e;
	return 0;
}
