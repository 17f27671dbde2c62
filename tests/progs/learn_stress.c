/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * learn_stress - many threads, 64 allocation contexts interleaved, writes
 * after the trigger from threads born before it, one born just before it
 * (still starting when it fires), threads born after it, and two threads
 * still allocating when it fires (with contexts 48..63 of their own:
 * allocating after the trigger, those are never proposed, but their
 * objects share the pool with the others).  Knows nothing of pmalloc: its trigger is
 * its listen(2).
 *
 * Context k (the function ctx_k) is, after listen:
 *   k % 3 == 0  written by the program (its first and its last byte),
 *   k % 3 == 1  written by the kernel (read, readv, recv, recvmsg,
 *               recvmmsg, pread, preadv, getsockopt,
 *               __read_chk, __recv_chk),
 *   k % 3 == 2  never written.
 * Which object each thread writes is fixed by its index, whoever allocated
 * it, so learn and enforce runs of this program make the same writes: a
 * proposal learned from one run never kills another (exit 0, "ok ...").
 *
 * learn_stress inject: at the end, writes into an object of ctx_5 (never
 * written otherwise): with ctx_2 protected, death by SIGSEGV.
 *
 * learn_stress shared (with or without inject): the even contexts allocate
 * through five functions of their own (via1..via5), so that their chains
 * begin alike and learn mode puts their objects on shared pages, written
 * and unwritten contexts side by side; the odd ones call malloc as above.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define N_CTX 48         /* allocated before the trigger only */
#define N_STRAG_CTX 16   /* the stragglers', 48..63: allocating when it fires */
#define PRE 6            /* threads allocating before the trigger */
#define PRE_OBJS 40      /* objects each */
#define STRAG 2          /* threads still allocating when it fires */
#define STRAG_MAX 3000   /* objects each at most */
#define POST 4           /* threads born after it */
#define WRITERS (PRE + STRAG + 1 + POST)
#define MAX_OBJS (PRE * PRE_OBJS + STRAG * STRAG_MAX)

static size_t size_of(int k)
{
	return k % 8 == 5 ? 5000 + (size_t)k : 16 + (size_t)(k * 40 % 600);
}

static int shared;

/* The even contexts' allocator when shared: five frames alike. */
__attribute__((noinline)) static char *via5(size_t n) { return malloc(n); }
__attribute__((noinline)) static char *via4(size_t n) { return via5(n); }
__attribute__((noinline)) static char *via3(size_t n) { return via4(n); }
__attribute__((noinline)) static char *via2(size_t n) { return via3(n); }
__attribute__((noinline)) static char *via1(size_t n) { return via2(n); }

/* ctx_K(): one allocation context each (a function of its own). */
#define CTX(k) __attribute__((noinline)) static char *ctx_##k(void) \
	{ return shared && (k) % 2 == 0 ? via1(size_of(k)) : malloc(size_of(k)); }
#define EACH8(M, a) M(a##0) M(a##1) M(a##2) M(a##3) M(a##4) M(a##5) M(a##6) M(a##7)
CTX(0) CTX(1) CTX(2) CTX(3) CTX(4) CTX(5) CTX(6) CTX(7) CTX(8) CTX(9)
EACH8(CTX, 1) CTX(18) CTX(19) EACH8(CTX, 2) CTX(28) CTX(29) EACH8(CTX, 3) CTX(38) CTX(39)
EACH8(CTX, 4) CTX(48) CTX(49) EACH8(CTX, 5) CTX(58) CTX(59) CTX(60) CTX(61) CTX(62) CTX(63)
#define PTR(k) ctx_##k,
static char *(*const ctx[N_CTX + N_STRAG_CTX])(void) = {
	PTR(0) PTR(1) PTR(2) PTR(3) PTR(4) PTR(5) PTR(6) PTR(7) PTR(8) PTR(9)
	EACH8(PTR, 1) PTR(18) PTR(19) EACH8(PTR, 2) PTR(28) PTR(29) EACH8(PTR, 3) PTR(38) PTR(39)
	EACH8(PTR, 4) PTR(48) PTR(49) EACH8(PTR, 5) PTR(58) PTR(59) PTR(60) PTR(61) PTR(62) PTR(63)
};

/* libc's fortified entry points (what _FORTIFY_SOURCE makes of read and
 * recv when the buffer's size is known). */
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);

struct obj {
	char *p;
	int k;
};

static struct obj objs[MAX_OBJS];
static _Atomic int strag_n[STRAG];
static _Atomic int pre_done, strag_done, stop_alloc, go, failures;

static void alloc_one(int slot, int k)
{
	objs[slot].p = ctx[k]();
	objs[slot].k = k;
	if (!objs[slot].p)
		abort();
}

static void wait_go(void)
{
	while (!atomic_load(&go))
		usleep(200);
}

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "learn_stress: %s: %s\n", what, strerror(errno));
		atomic_fetch_add(&failures, 1);
	}
}

/* The kernel writes n bytes at p, by method m. */
static void kernel_write(char *p, size_t n, int m, int pfd[2], int sv[2], int mfd)
{
	static const char src[64] = "kernel-bytes-kernel-bytes-kernel-bytes-kernel-bytes-kernel-byt";
	struct iovec iov = { p, n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = mh };
	ssize_t r = -1;
	switch (m) {
	case 0: check(write(pfd[1], src, n) == (ssize_t)n, "write"); r = read(pfd[0], p, n); break;
	case 1: check(write(pfd[1], src, n) == (ssize_t)n, "write"); r = readv(pfd[0], &iov, 1); break;
	case 2: check(send(sv[1], src, n, 0) == (ssize_t)n, "send"); r = recv(sv[0], p, n, 0); break;
	case 3: check(send(sv[1], src, n, 0) == (ssize_t)n, "send"); r = recvmsg(sv[0], &mh, 0); break;
	case 4:
		check(send(sv[1], src, n, 0) == (ssize_t)n, "send");
		r = recvmmsg(sv[0], &mm, 1, 0, NULL) == 1 ? (ssize_t)mm.msg_len : -1;
		break;
	case 5: r = pread(mfd, p, n, 0); break;
	case 6: r = preadv(mfd, &iov, 1, 0); break;
	case 7: {
		struct iovec two[2] = { { p, n / 2 }, { p + n / 2, n - n / 2 } };
		check(write(pfd[1], src, n) == (ssize_t)n, "write");
		r = readv(pfd[0], two, 2);
		break;
	}
	case 8:   /* read() as a program built with _FORTIFY_SOURCE calls it */
		check(write(pfd[1], src, n) == (ssize_t)n, "write");
		r = __read_chk(pfd[0], p, n, n);
		break;
	case 9:
		check(send(sv[1], src, n, 0) == (ssize_t)n, "send");
		r = __recv_chk(sv[0], p, n, n, 0);
		break;
	default: {
		socklen_t len = sizeof(int);
		int type = 0;
		check(getsockopt(sv[0], SOL_SOCKET, SO_TYPE, p, &len) == 0, "getsockopt");
		memcpy(&type, p, sizeof(type));
		check(type == SOCK_DGRAM, "getsockopt's bytes");
		return;
	}
	}
	check(r == (ssize_t)n, "a kernel write");
	check(memcmp(p, src, n) == 0, "the kernel's bytes");
}

/* Writer w's share of the objects: every one whose index is w modulo
 * WRITERS, by its context's kind. */
static void write_share(int w)
{
	int pfd[2], sv[2], mfd;
	static const char src[64] = "kernel-bytes-kernel-bytes-kernel-bytes-kernel-bytes-kernel-byt";
	check(pipe(pfd) == 0 && socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0, "pipe");
	mfd = memfd_create("learn_stress", 0);
	check(mfd >= 0 && write(mfd, src, sizeof(src)) == (ssize_t)sizeof(src), "memfd");
	for (int i = w, m = 0; i < MAX_OBJS; i += WRITERS) {
		struct obj *o = &objs[i];
		if (!o->p)
			continue;
		size_t size = size_of(o->k);
		if (o->k % 3 == 0) {
			o->p[0] = 1;
			o->p[size - 1] = 1;
		} else if (o->k % 3 == 1) {
			size_t n = o->k % 9 == 7 ? sizeof(int) : size < 64 ? size : 64;
			kernel_write(o->p + size - n, n, n == sizeof(int) ? 10 : m++ % 10, pfd, sv, mfd);
		}
	}
	close(pfd[0]);
	close(pfd[1]);
	close(sv[0]);
	close(sv[1]);
	close(mfd);
}

static void *pre_thread(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int i = 0; i < PRE_OBJS; i++)
		alloc_one(t * PRE_OBJS + i, (i * 5 + t * 7) % N_CTX);
	atomic_fetch_add(&pre_done, 1);
	wait_go();
	write_share(t);
	return NULL;
}

static void *strag_thread(void *arg)
{
	int t = (int)(intptr_t)arg, n = 0;
	atomic_fetch_add(&pre_done, 1);
	while (n < STRAG_MAX && (!atomic_load(&stop_alloc) || n < 50)) {
		alloc_one(PRE * PRE_OBJS + t * STRAG_MAX + n, N_CTX + (n * 11 + t) % N_STRAG_CTX);
		atomic_store(&strag_n[t], ++n);
	}
	atomic_fetch_add(&strag_done, 1);
	wait_go();
	write_share(PRE + t);
	return NULL;
}

static void *late_thread(void *arg)
{
	wait_go();
	write_share((int)(intptr_t)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[WRITERS];
	int n = 0, inject = 0;
	for (int i = 1; i < argc; i++) {
		inject |= strcmp(argv[i], "inject") == 0;
		shared |= strcmp(argv[i], "shared") == 0;
	}
	for (int t = 0; t < PRE; t++, n++)
		if (pthread_create(&th[n], NULL, pre_thread, (void *)(intptr_t)t) != 0)
			return 2;
	for (int t = 0; t < STRAG; t++, n++)
		if (pthread_create(&th[n], NULL, strag_thread, (void *)(intptr_t)t) != 0)
			return 2;
	while (atomic_load(&pre_done) < PRE + STRAG)
		usleep(100);
	/* Born just before the trigger: still starting when it fires. */
	if (pthread_create(&th[n], NULL, late_thread, (void *)(intptr_t)n) != 0)
		return 2;
	n++;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
		return 2;
	atomic_store(&stop_alloc, 1);
	for (int t = 0; t < POST; t++, n++)
		if (pthread_create(&th[n], NULL, late_thread, (void *)(intptr_t)n) != 0)
			return 2;
	while (atomic_load(&strag_done) < STRAG)
		usleep(100);
	atomic_store(&go, 1);
	for (int t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	close(s);
	if (atomic_load(&failures))
		return 1;
	if (inject)
		objs[1].p[0] = 2;   /* thread 0's object 1: ctx_5 */
	printf("ok %d objects, %d allocated by stragglers\n", PRE * PRE_OBJS + strag_n[0] + strag_n[1],
	       strag_n[0] + strag_n[1]);
	return 0;
}
