/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kwrite.c - a kernel write into protected pool memory (read(2) into a
 * buffer, epoll_wait(2) into an event array, ...): let through and
 * reported where the pool is audited, refused as before (the call fails
 * with EFAULT, the data stays with the kernel) where it is enforced.
 *
 * Mechanism: the libc calls whose buffers the kernel writes are
 * interposed.  Fast path: each buffer is tested against the arena (two
 * compares); almost every call stops there.  Slow path, only for buffers
 * inside the arena: each page of the buffer is looked up (lock-free); when
 * one is protected and its pool lets kernel writes through, the kernel
 * writes into a private bounce buffer (a fresh mapping, holding a copy of
 * the current bytes, so in-out arrays such as poll's keep their input),
 * and what the call wrote is copied into pool memory in an audit window
 * (audit.c: one page at a time, serialised with the fault handler's
 * windows, other threads' writes meanwhile detected) and reported, one
 * report per buffer, naming the call and its caller.  The program sees the
 * call succeed as it would without the shim.
 *
 * Once its site is reported (audit.c: once per site and process), a later
 * kernel write into the same object is a repeat, as a later store is: the
 * object's pages are opened (audit_repeat_range: counted, closed again
 * within 100 ms) and the kernel writes there, with no bounce buffer, copy
 * or window.  A server whose event array or read buffer was allocated at
 * start-up (redis's epoll array, 120 KiB) would otherwise map, copy and
 * unmap it at every turn of its event loop: 0.06 x its throughput here.
 *
 * One concern, to be shared with learn mode: "let a kernel write into
 * protected pool memory through, and tell me" - kw_lets_through() is where
 * a mode says yes.
 *
 * Not covered (documented in the README): calls made inside libc without
 * its exported entry points (stdio's reads into its FILE buffers,
 * getaddrinfo), raw syscall(2), io_uring, and calls not listed here.  For
 * those, a protected buffer still gets EFAULT in audit mode.
 *
 * Normal context only (never a signal handler).  Allocates nothing from
 * the heap: bounce buffers are mappings, unmapped before returning.
 */
#define _GNU_SOURCE
#include "kwrite.h"
#include "stderr.h"
#include "learn.h"
#include "audit.h"
#include "fault.h"
#include "os.h"
#include "pmalloc.h"
#include "pool.h"
#include "report.h"
#include "armed.h"
#include "hooks.h"

#include <errno.h>
#include <string.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define KW_BUFS 20              /* buffers one call may bounce */
#define KW_IOVS 16              /* readv/recvmsg vectors handled; more: the call as is */

struct kw_buf {
	void *user;
	size_t len;
	unsigned char *bounce;
	size_t map_len;
};

struct kw_call {
	const char *name;
	uintptr_t ra;
	int n;
	bool refused;           /* a buffer in protected memory that is not let through */
	bool retried;
	struct kw_buf b[KW_BUFS];
};

#define CALLER() ((uintptr_t)__builtin_return_address(0))

/* libc's functions (libc.h's read-only table), looked up at load (a
 * constructor), so that the first read() of a process inside a signal
 * handler does not run dlsym there;
 * looked up on first use when a call comes before the constructor. */
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef int (*recvmmsg_fn)(int, struct mmsghdr *, unsigned int, int, struct timespec *);


__attribute__((constructor)) static void kwrite_init(void)
{
	(void)REAL(read, read_fn);
	(void)REAL(pread, pread_fn);
	(void)REAL(pread64, pread_fn);
	(void)REAL(readv, readv_fn);
	(void)REAL(recvfrom, recvfrom_fn);
	(void)REAL(recvmsg, recvmsg_fn);
	(void)REAL(recvmmsg, recvmmsg_fn);
}


/* Does hit's pool let kernel writes into its protected memory through?
 * Audit by the read-only decision (fault.c); the writable flag can only
 * take it away (a sealed page cannot be opened anyway). */
static bool kw_lets_through(const struct pool_hit *hit)
{
	return fault_mode_of(hit) == FAULT_AUDIT && !pool_seals(hit->pool) &&
	       os_page_size == AUDIT_PAGE;
}


/* The first protected byte of [p, p+len), or 0; *refused when its pool
 * does not let kernel writes through. */
static uintptr_t first_protected(const void *p, size_t len, bool *refused)
{
	uintptr_t a = (uintptr_t)p, end = a + len;
	while (a < end) {
		/* The span's mark first (a few loads); the object, whose
		 * search is the costly part of pool_lookup (770 instructions
		 * a page in haproxy's buffers, which come from pools it filled
		 * before its trigger), only for a protected page. */
		struct pool_hit hit;
		if (pool_is_protected((const void *)a) && pool_lookup((const void *)a, &hit) && hit.is_protected &&
		    !learn_kernel_write(&hit, a)) {    /* learn mode: the page is writable now */
			*refused = !kw_lets_through(&hit);
			return a;
		}
		a = (a | (os_page_size - 1)) + 1;
	}
	return 0;
}

/* A repeat (see the top): [user, user+len) inside one object of a site
 * reported already, in a pool that lets kernel writes through, at most a
 * quarter of audit's ring of open pages; then opened for the kernel's
 * write.  Not on a retry: a page closed meanwhile (another thread's
 * reclose) made the call fail, and the bounce takes it. */
static bool kw_repeat_direct(const struct kw_call *c, void *user, size_t len, uintptr_t at)
{
	struct pool_hit hit;
	uintptr_t a = (uintptr_t)user;
	if (c->retried || !pool_lookup((const void *)at, &hit) || !kw_lets_through(&hit) || !hit.in_object ||
	    a < hit.object || a + len > hit.object + hit.object_size || !audit_site_reported(hit.site) ||
	    len > 128 * os_page_size)
		return false;
	return audit_repeat_range(a, len, hit.site) == 0;
}

/* What the kernel should write into instead of [user, user+len). */
static void *kw_sub(struct kw_call *c, void *user, size_t len)
{
	bool refused = false;
	uintptr_t at;
	if (!user || len == 0 || !kwrite_may_touch(user, len) || !(at = first_protected(user, len, &refused)))
		return user;
	if (!refused && kw_repeat_direct(c, user, len, at))
		return user;
	if (refused || c->n == KW_BUFS) {
		c->refused = true;
		return user;
	}
	struct kw_buf *b = &c->b[c->n];
	void *m;
	b->map_len = ALIGN_UP(len, os_page_size);
	if (os_map(b->map_len, &m) < 0) {
		c->refused = true;
		return user;
	}
	b->user = user;
	b->len = len;
	b->bounce = m;
	memcpy(b->bounce, user, len);   /* in-out buffers keep their input */
	c->n++;
	return b->bounce;
}

static void kw_release(struct kw_call *c)
{
	for (int i = 0; i < c->n; i++)
		os_unmap(c->b[i].bounce, c->b[i].map_len);
	c->n = 0;
}

static struct kw_buf *kw_find(struct kw_call *c, const void *sub)
{
	for (int i = 0; i < c->n; i++)
		if (c->b[i].bounce == sub)
			return &c->b[i];
	return NULL;
}

/* The kernel wrote written bytes at the start of bounce buffer sub: into
 * pool memory with them, and report. */
static void kw_done(struct kw_call *c, const void *sub, size_t written)
{
	struct kw_buf *b = kw_find(c, sub);
	if (!b || written == 0)
		return;
	if (written > b->len)
		written = b->len;
	bool refused = false;
	uintptr_t at = first_protected(b->user, written, &refused);
	if (audit_copy_in(b->user, b->bounce, written) < 0)
		fatal(c->name, "cannot let a kernel write into pool memory through");
	struct pool_hit hit;
	if (!at || !pool_lookup((const void *)at, &hit))
		return;
	/* Once per site and process (audit.c): a later write only counted. */
	if (hit.in_object && !audit_site_first(hit.site)) {
		(void)audit_repeat(at, hit.site);
		return;
	}
	const char *pool, *policy;
	fault_names(&hit, &pool, &policy);      /* the read-only page's */
	struct pmw_report *r = report_begin(&hit, pool, policy, at, c->ra, true);
	report_cause(r, PMW_CAUSE_KERNEL, c->name);
	report_end(r, NULL, NULL);
}

#define KW_BEGIN(call_name) \
	struct kw_call c_ = { .name = call_name, .ra = ra }; \
	int saved_errno_ = errno
/* A buffer not let through: the call as the program made it (EFAULT). */
#define KW_REFUSED() (c_.refused ? (kw_release(&c_), errno = saved_errno_, true) : false)
/* EFAULT with nothing bounced: the memory was protected while the call
 * waited (a blocking read or epoll_wait begun before the trigger fired).
 * The kernel keeps what it could not copy (pipes, sockets, epoll's ready
 * list), so the call is made once more, now through bounce buffers. */
#define KW_AGAIN(r) ((r) < 0 && errno == EFAULT && c_.n == 0 && !c_.refused && !c_.retried \
	? (c_.retried = true, errno = saved_errno_, true) : false)
#define KW_RETURN(r) do { int e_ = errno; kw_release(&c_); errno = e_; return (r); } while (0)

/* The slow path of a call whose kernel writes one buffer, and its return:
 * buf (a parameter of the function, len bytes) is pointed at a bounce
 * buffer, call (an expression naming buf) is made, and the first
 * written_if bytes go into pool memory, written_if an expression in r,
 * the call's result (0: nothing written).  On a refusal buf is the
 * program's again and the call is made as it is. */
#define KW_BOUNCE_ONE(call_name, buf, len, call, r, written_if) \
	KW_BEGIN(call_name); \
	void *const user_ = (buf); \
	__typeof__(call) r; \
	do { \
		(buf) = kw_sub(&c_, user_, (len)); \
		if (KW_REFUSED()) { \
			(buf) = user_; \
			return (call); \
		} \
		r = (call); \
		kw_done(&c_, (buf), (written_if)); \
	} while (KW_AGAIN(r)); \
	KW_RETURN(r)

/* ---- read family ---- */

/* An interposed call that libc does not define fails as a missing system
 * call would. */
static cold ssize_t no_libc(void)
{
	errno = ENOSYS;
	return -1;
}

/* An exported call: libc's lib (looked up at load into real_lib), made as
 * it is unless touches - the fast path, kwrite_may_touch's two compares a
 * buffer - says the kernel may write into the arena; then slow, the call's
 * cold path, named with fn and the caller's address.  After the fast
 * path's return, a load and a branch: on-wait's fallback deferred in a
 * single-threaded process (hooks.h) is looked at as a read returns. */
#define KW_WRAP(name, lib, params, args, touches, slow) \
	PMALLOC_EXPORT ssize_t name params \
	{ \
		lib##_fn fn = REAL(lib, lib##_fn); \
		if (unlikely(!fn)) \
			return no_libc(); \
		if (likely(!(touches))) { \
			ssize_t r_ = fn args; \
			core_deferred_poll(); \
			return r_; \
		} \
		return slow; \
	}
/* The same for a call of one buffer, with a fast path for pool memory
 * that is not protected (a server's buffers from pools it filled before
 * its trigger: haproxy's every recv(), whose slow path was 1,500
 * instructions): may_touch is the arena's two compares, touches whether a
 * page is protected; a call that failed with EFAULT while again holds (the
 * buffer in the arena: a protect came while the call waited) is made again
 * by the slow path, as the slow path itself does.  The exported function
 * is the two compares and a tail call, as without the shim (the rest in
 * name##_mid, out of line: inline, its registers were saved and restored
 * around every call, 20 instructions; libc's entry looked up there too
 * when the table has none yet, before the constructor: a call on the
 * exported function's path kept a register and the stack for it, 6
 * instructions of redis's every read); names: the parameters' names; slow
 * names the caller's address ra_, and takes the arguments in the exported
 * function's order, fn and ra_ after them (no register moved for it). */
#define KW_UNPAREN(...) __VA_ARGS__
#define KW_WRAP_AGAIN(name, lib, params, names, args, may_touch, touches, again, slow) \
	static __attribute__((noinline)) ssize_t name##_mid(KW_UNPAREN params, lib##_fn fn, uintptr_t ra_) \
	{ \
		if (unlikely(!fn) && !(fn = REAL(lib, lib##_fn))) \
			return no_libc(); \
		if (!(touches)) { \
			ssize_t r_ = fn args; \
			if (unlikely(r_ < 0) && errno == EFAULT && (again)) \
				return slow; \
			core_deferred_poll(); \
			return r_; \
		} \
		return slow; \
	} \
	PMALLOC_EXPORT ssize_t name params \
	{ \
		lib##_fn fn = libc_ro.s.fn[LIBC_FN_##lib]; \
		if (likely(fn) && likely(!(may_touch)) && \
		    likely(!atomic_load_explicit(&core_deferred_pending, memory_order_relaxed))) \
			return fn args; \
		return name##_mid(KW_UNPAREN names, fn, CALLER()); \
	}

/* Any byte of [p, p+len) in protected pool memory (or being protected:
 * the span's mark, pool_range_protected)?  Outside the arena,
 * kwrite_may_touch's two compares; inside it, a few loads a span. */
static inline bool touches_protected(const void *p, size_t len)
{
	return kwrite_may_touch(p, len) && pool_range_protected(p, len);
}

static cold ssize_t read_slow(ssize_t (*fn)(int, void *, size_t), uintptr_t ra, int fd, void *buf, size_t n)
{
	KW_BOUNCE_ONE("read", buf, n, fn(fd, buf, n), r, r > 0 ? (size_t)r : 0);
}

KW_WRAP_AGAIN(read, read, (int fd, void *buf, size_t n), (fd, buf, n), (fd, buf, n), kwrite_may_touch(buf, n),
	      touches_protected(buf, n), kwrite_may_touch(buf, n), read_slow(fn, ra_, fd, buf, n))

static cold ssize_t pread_slow(ssize_t (*fn)(int, void *, size_t, off_t), uintptr_t ra, int fd, void *buf,
			       size_t n, off_t off)
{
	KW_BOUNCE_ONE("pread", buf, n, fn(fd, buf, n, off), r, r > 0 ? (size_t)r : 0);
}

/* pread and pread64 (the same call on 64-bit), each with libc's own; the
 * fast path a tail call, the rest out of line (KW_WRAP_AGAIN's reasons). */
static __attribute__((noinline)) ssize_t pread_mid(pread_fn fn, uintptr_t ra, int fd, void *buf, size_t n,
						   off_t off)
{
	if (!touches_protected(buf, n)) {
		ssize_t r = fn(fd, buf, n, off);
		if (unlikely(r < 0) && errno == EFAULT && kwrite_may_touch(buf, n))
			return pread_slow(fn, ra, fd, buf, n, off);
		core_deferred_poll();
		return r;
	}
	return pread_slow(fn, ra, fd, buf, n, off);
}

static inline __attribute__((always_inline)) ssize_t pread_via(pread_fn fn, uintptr_t ra, int fd,
							       void *buf, size_t n, off_t off)
{
	if (unlikely(!fn))
		return no_libc();
	if (likely(!kwrite_may_touch(buf, n)) &&
	    likely(!atomic_load_explicit(&core_deferred_pending, memory_order_relaxed)))
		return fn(fd, buf, n, off);
	return pread_mid(fn, ra, fd, buf, n, off);
}

PMALLOC_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return pread_via(REAL(pread, pread_fn), CALLER(), fd, buf, n, off);
}

PMALLOC_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	return pread_via(REAL(pread64, pread_fn), CALLER(), fd, buf, n, off);
}

/* Any of iov[0, cnt) in the arena? */
static bool iov_may_touch(const struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++)
		if (kwrite_may_touch(iov[i].iov_base, iov[i].iov_len))
			return true;
	return false;
}

/* Bounce the vectors into mine; false when the call must go as it is. */
static bool iov_sub(struct kw_call *c, const struct iovec *iov, int cnt, struct iovec *mine)
{
	if (cnt < 0 || cnt > KW_IOVS)
		return false;
	for (int i = 0; i < cnt; i++) {
		mine[i].iov_len = iov[i].iov_len;
		mine[i].iov_base = kw_sub(c, iov[i].iov_base, iov[i].iov_len);
	}
	return !c->refused;
}

/* The kernel filled the vectors in order with total bytes. */
static void iov_done(struct kw_call *c, const struct iovec *mine, int cnt, size_t total)
{
	for (int i = 0; i < cnt && total > 0; i++) {
		size_t n = mine[i].iov_len < total ? mine[i].iov_len : total;
		kw_done(c, mine[i].iov_base, n);
		total -= n;
	}
}

static cold ssize_t readv_slow(ssize_t (*fn)(int, const struct iovec *, int), uintptr_t ra, int fd,
			       const struct iovec *iov, int cnt)
{
	KW_BEGIN("readv");
	struct iovec mine[KW_IOVS];
	ssize_t r;
	do {
		if (!iov_sub(&c_, iov, cnt, mine)) {
			kw_release(&c_);
			errno = saved_errno_;
			return fn(fd, iov, cnt);
		}
		r = fn(fd, mine, cnt);
		if (r > 0)
			iov_done(&c_, mine, cnt, (size_t)r);
	} while (KW_AGAIN(r));
	KW_RETURN(r);
}

KW_WRAP(readv, readv, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt),
	iov_may_touch(iov, cnt), readv_slow(fn, CALLER(), fd, iov, cnt))

/* ---- sockets ---- */

static cold ssize_t recvfrom_slow(ssize_t (*fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *),
				  uintptr_t ra, const char *name, int fd, void *buf, size_t n, int flags,
				  struct sockaddr *addr, socklen_t *alen)
{
	KW_BEGIN(name);
	ssize_t r;
	do {
		void *b = kw_sub(&c_, buf, n);
		socklen_t *l = kw_sub(&c_, alen, alen ? sizeof(*alen) : 0);
		struct sockaddr *a = kw_sub(&c_, addr, addr && alen ? *alen : 0);
		if (KW_REFUSED())
			return fn(fd, buf, n, flags, addr, alen);
		r = fn(fd, b, n, flags, a, l);
		if (r >= 0) {
			kw_done(&c_, b, (size_t)r);
			kw_done(&c_, a, alen ? *alen : 0);
			kw_done(&c_, l, sizeof(*l));
		}
	} while (KW_AGAIN(r));
	KW_RETURN(r);
}

KW_WRAP(recvfrom, recvfrom,
	(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen),
	(fd, buf, n, flags, addr, alen),
	kwrite_may_touch(buf, n) || kwrite_may_touch(alen, sizeof(*alen)) ||
		kwrite_may_touch(addr, alen ? *alen : 0),
	recvfrom_slow(fn, CALLER(), "recvfrom", fd, buf, n, flags, addr, alen))

KW_WRAP_AGAIN(recv, recvfrom, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags),
	      (fd, buf, n, flags, NULL, NULL), kwrite_may_touch(buf, n), touches_protected(buf, n),
	      kwrite_may_touch(buf, n), recvfrom_slow(fn, ra_, "recv", fd, buf, n, flags, NULL, NULL))

static bool msg_may_touch(const struct msghdr *m)
{
	return kwrite_may_touch(m, sizeof(*m)) || kwrite_may_touch(m->msg_name, m->msg_namelen) ||
	       kwrite_may_touch(m->msg_control, m->msg_controllen) ||
	       iov_may_touch(m->msg_iov, m->msg_iovlen > KW_IOVS ? KW_IOVS : (int)m->msg_iovlen);
}

static cold ssize_t recvmsg_slow(ssize_t (*fn)(int, struct msghdr *, int), uintptr_t ra, int fd,
				 struct msghdr *msg, int flags)
{
	KW_BEGIN("recvmsg");
	struct msghdr m = *msg;
	struct iovec mine[KW_IOVS];
	bool hdr_refused = false;
	bool hdr_protected = kwrite_may_touch(msg, sizeof(*msg)) && first_protected(msg, sizeof(*msg), &hdr_refused);
	if (hdr_refused || m.msg_iovlen > KW_IOVS || !iov_sub(&c_, msg->msg_iov, (int)m.msg_iovlen, mine)) {
		kw_release(&c_);
		errno = saved_errno_;
		return fn(fd, msg, flags);
	}
	m.msg_iov = mine;
	m.msg_name = kw_sub(&c_, msg->msg_name, msg->msg_namelen);
	m.msg_control = kw_sub(&c_, msg->msg_control, msg->msg_controllen);
	if (KW_REFUSED())
		return fn(fd, msg, flags);
	ssize_t r = fn(fd, &m, flags);
	if (r >= 0) {
		int e = errno;
		iov_done(&c_, mine, (int)m.msg_iovlen, (size_t)r);
		kw_done(&c_, m.msg_name, m.msg_namelen);
		kw_done(&c_, m.msg_control, m.msg_controllen);
		struct msghdr out = *msg;
		out.msg_namelen = m.msg_namelen;
		out.msg_controllen = m.msg_controllen;
		out.msg_flags = m.msg_flags;
		if (hdr_protected) {
			struct kw_call h = { .name = "recvmsg", .ra = ra };
			void *hb = kw_sub(&h, msg, sizeof(*msg));
			if (hb) {
				memcpy(hb, &out, sizeof(out));
				kw_done(&h, hb, sizeof(out));
			}
			kw_release(&h);
		} else {
			*msg = out;
		}
		errno = e;
	}
	KW_RETURN(r);
}

KW_WRAP(recvmsg, recvmsg, (int fd, struct msghdr *msg, int flags), (fd, msg, flags),
	msg && msg_may_touch(msg), recvmsg_slow(fn, CALLER(), fd, msg, flags))

/* ---- the fortified entry points (_FORTIFY_SOURCE: Debian builds its
 * servers so) ----
 * A program built with _FORTIFY_SOURCE calls __read_chk where its source
 * says read, when the buffer's size is known: libc's __read_chk reads
 * through its internal read, not the exported one, so without these the
 * calls above are not interposed at all in such a program.  The check is
 * libc's (a length past the buffer: the real __*_chk, which aborts); the
 * call, when its buffer may be pool memory, is the one above. */
typedef ssize_t (*read_chk_fn)(int, void *, size_t, size_t);
typedef ssize_t (*pread_chk_fn)(int, void *, size_t, off_t, size_t);
typedef ssize_t (*recv_chk_fn)(int, void *, size_t, size_t, int);
typedef ssize_t (*recvfrom_chk_fn)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);

PMALLOC_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	read_chk_fn chk = REAL(__read_chk, read_chk_fn);
	read_fn fn = REAL(read, read_fn);
	if (unlikely(!chk || !fn))
		return no_libc();
	if (likely(!kwrite_may_touch(buf, n)) || n > buflen)
		return chk(fd, buf, n, buflen);
	return read_slow(fn, CALLER(), fd, buf, n);
}

PMALLOC_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	pread_chk_fn chk = REAL(__pread_chk, pread_chk_fn);
	pread_fn fn = REAL(pread, pread_fn);
	if (unlikely(!chk || !fn))
		return no_libc();
	if (likely(!kwrite_may_touch(buf, n)) || n > buflen)
		return chk(fd, buf, n, off, buflen);
	return pread_slow(fn, CALLER(), fd, buf, n, off);
}

PMALLOC_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	pread_chk_fn chk = REAL(__pread64_chk, pread_chk_fn);
	pread_fn fn = REAL(pread64, pread_fn);
	if (unlikely(!chk || !fn))
		return no_libc();
	if (likely(!kwrite_may_touch(buf, n)) || n > buflen)
		return chk(fd, buf, n, off, buflen);
	return pread_slow(fn, CALLER(), fd, buf, n, off);
}

PMALLOC_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	recv_chk_fn chk = REAL(__recv_chk, recv_chk_fn);
	recvfrom_fn fn = REAL(recvfrom, recvfrom_fn);
	if (unlikely(!chk || !fn))
		return no_libc();
	if (likely(!kwrite_may_touch(buf, n)) || n > buflen)
		return chk(fd, buf, n, buflen, flags);
	return recvfrom_slow(fn, CALLER(), "recv", fd, buf, n, flags, NULL, NULL);
}

PMALLOC_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				      struct sockaddr *addr, socklen_t *alen)
{
	recvfrom_chk_fn chk = REAL(__recvfrom_chk, recvfrom_chk_fn);
	recvfrom_fn fn = REAL(recvfrom, recvfrom_fn);
	if (unlikely(!chk || !fn))
		return no_libc();
	if (n > buflen || (likely(!kwrite_may_touch(buf, n)) && !kwrite_may_touch(alen, sizeof(*alen)) &&
			   !kwrite_may_touch(addr, alen ? *alen : 0)))
		return chk(fd, buf, n, buflen, flags, addr, alen);
	return recvfrom_slow(fn, CALLER(), "recvfrom", fd, buf, n, flags, addr, alen);
}

/* ---- calls learn mode opens the pages of, before the kernel writes ----
 *
 * recvmmsg, preadv (and preadv2), getsockopt and ioctl: a learn pool's
 * protected page among the buffers the kernel will write is opened first
 * and its context marked written (learn_kernel_write), as a fault would;
 * the call is then made as it is.  Audit and enforce pools are not
 * bounced here: their protected buffers get EFAULT, as before these calls
 * were interposed (the README's "not covered").  ioctl does not say how
 * long its buffer is: _IOC_SIZE where the request encodes one, else
 * LEARN_GUESS bytes.  A guess too long marks a neighbouring context
 * written (it is then not proposed: less protection, never a false kill);
 * one too short, a kernel write past it, is an EFAULT the program sees in
 * learn mode as in enforce.  syscall(2) is not interposed: the shim's own
 * system calls (os.c) go through libc's, and must not come here. */
#define LEARN_GUESS 64

/* Learn pools' protected pages of [p, p+len) opened, their contexts marked. */
static void learn_open(const void *p, size_t len)
{
	if (!p || len == 0 || !kwrite_may_touch(p, len) || !learn_active())
		return;
	uintptr_t a = (uintptr_t)p, end = a + len;
	while (a < end && a >= (uintptr_t)p) {
		struct pool_hit hit;
		if (pool_lookup((const void *)a, &hit) && hit.is_protected)
			(void)learn_kernel_write(&hit, a);
		a = (a | (os_page_size - 1)) + 1;
	}
}

static void learn_open_iov(const struct iovec *iov, size_t cnt)
{
	/* The vector itself may lie in pool memory: the kernel only reads it. */
	for (size_t i = 0; iov && i < cnt && i < 1024; i++)
		learn_open(iov[i].iov_base, iov[i].iov_len);
}

static void learn_open_msg(struct msghdr *m)
{
	if (!m)
		return;
	learn_open(m, sizeof(*m));     /* msg_namelen, msg_controllen, msg_flags */
	learn_open(m->msg_name, m->msg_namelen);
	learn_open(m->msg_control, m->msg_controllen);
	learn_open_iov(m->msg_iov, m->msg_iovlen);
}

static void learn_open_mmsg(struct mmsghdr *v, size_t n)
{
	if (!v)
		return;
	learn_open(v, n * sizeof(*v));
	for (size_t i = 0; i < n && i < 1024; i++)
		learn_open_msg(&v[i].msg_hdr);
}

typedef ssize_t (*preadv_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*preadv2_fn)(int, const struct iovec *, int, off_t, int);
typedef int (*getsockopt_fn)(int, int, int, void *, socklen_t *);
typedef int (*ioctl_fn)(int, unsigned long, void *);

PMALLOC_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *t)
{
	recvmmsg_fn fn = REAL(recvmmsg, recvmmsg_fn);
	if (unlikely(!fn))
		return (int)no_libc();
	if (unlikely(v && learn_active()))
		learn_open_mmsg(v, n);
	return fn(fd, v, n, flags, t);
}

#define PREADV(name, type, params, args) \
	PMALLOC_EXPORT ssize_t name params \
	{ \
		type fn = REAL(name, type); \
		if (unlikely(!fn)) \
			return no_libc(); \
		if (unlikely(learn_active()) && cnt > 0) \
			learn_open_iov(iov, (size_t)cnt); \
		return fn args; \
	}
PREADV(preadv, preadv_fn, (int fd, const struct iovec *iov, int cnt, off_t off), (fd, iov, cnt, off))
PREADV(preadv64, preadv_fn, (int fd, const struct iovec *iov, int cnt, off_t off), (fd, iov, cnt, off))
PREADV(preadv2, preadv2_fn, (int fd, const struct iovec *iov, int cnt, off_t off, int flags),
       (fd, iov, cnt, off, flags))
PREADV(preadv64v2, preadv2_fn, (int fd, const struct iovec *iov, int cnt, off_t off, int flags),
       (fd, iov, cnt, off, flags))

PMALLOC_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	getsockopt_fn fn = REAL(getsockopt, getsockopt_fn);
	if (unlikely(!fn))
		return (int)no_libc();
	if (unlikely(learn_active()) && (kwrite_may_touch(len, sizeof(*len)) || kwrite_may_touch(val, 1))) {
		learn_open(len, sizeof(*len));
		learn_open(val, len ? *len : 0);
	}
	return fn(fd, level, name, val, len);
}

PMALLOC_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	ioctl_fn fn = REAL(ioctl, ioctl_fn);
	if (unlikely(!fn))
		return (int)no_libc();
	if (unlikely(kwrite_may_touch(arg, 1)) && learn_active())
		learn_open(arg, (_IOC_DIR(req) & _IOC_READ) && _IOC_SIZE(req) ? _IOC_SIZE(req) : LEARN_GUESS);
	return fn(fd, req, arg);
}

/* ---- the calls trigger.c interposes (it passes their real function) ---- */

/* The wait calls' slow paths: kwrite.h's inline fast path found their
 * buffer may be pool memory. */

int kwrite_epoll_wait_slow(kwrite_epoll_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n, int t)
{
	size_t len = n > 0 ? (size_t)n * sizeof(*e) : 0;
	KW_BOUNCE_ONE("epoll_wait", e, len, fn(fd, e, n, t), r, r > 0 ? (size_t)r * sizeof(*e) : 0);
}

int kwrite_epoll_pwait_slow(kwrite_epoll_p_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n, int t,
		       const sigset_t *s)
{
	size_t len = n > 0 ? (size_t)n * sizeof(*e) : 0;
	KW_BOUNCE_ONE("epoll_pwait", e, len, fn(fd, e, n, t, s), r, r > 0 ? (size_t)r * sizeof(*e) : 0);
}

int kwrite_epoll_pwait2_slow(kwrite_epoll_p2_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n,
			const struct timespec *t, const sigset_t *s)
{
	size_t len = n > 0 ? (size_t)n * sizeof(*e) : 0;
	KW_BOUNCE_ONE("epoll_pwait2", e, len, fn(fd, e, n, t, s), r, r > 0 ? (size_t)r * sizeof(*e) : 0);
}

int kwrite_poll_slow(kwrite_poll_fn fn, uintptr_t ra, struct pollfd *f, nfds_t n, int t)
{
	size_t len = n * sizeof(*f);
	KW_BOUNCE_ONE("poll", f, len, fn(f, n, t), r, r >= 0 ? len : 0);
}

int kwrite_ppoll_slow(kwrite_ppoll_fn fn, uintptr_t ra, struct pollfd *f, nfds_t n, const struct timespec *t,
		 const sigset_t *s)
{
	size_t len = n * sizeof(*f);
	KW_BOUNCE_ONE("ppoll", f, len, fn(f, n, t, s), r, r >= 0 ? len : 0);
}

static bool sets_may_touch(fd_set *r, fd_set *w, fd_set *e, void *t, size_t tlen)
{
	return kwrite_may_touch(r, sizeof(*r)) || kwrite_may_touch(w, sizeof(*w)) ||
	       kwrite_may_touch(e, sizeof(*e)) || kwrite_may_touch(t, tlen);
}

int kwrite_select(kwrite_select_fn fn, uintptr_t ra, int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
	if (likely(!sets_may_touch(r, w, e, t, sizeof(*t))))
		return fn(n, r, w, e, t);
	KW_BEGIN("select");
	fd_set *br = kw_sub(&c_, r, r ? sizeof(*r) : 0), *bw = kw_sub(&c_, w, w ? sizeof(*w) : 0);
	fd_set *be = kw_sub(&c_, e, e ? sizeof(*e) : 0);
	struct timeval *bt = kw_sub(&c_, t, t ? sizeof(*t) : 0);
	if (KW_REFUSED())
		return fn(n, r, w, e, t);
	int res = fn(n, br, bw, be, bt);
	if (res >= 0) {
		kw_done(&c_, br, sizeof(fd_set));
		kw_done(&c_, bw, sizeof(fd_set));
		kw_done(&c_, be, sizeof(fd_set));
		kw_done(&c_, bt, sizeof(struct timeval));
	}
	KW_RETURN(res);
}

int kwrite_pselect(kwrite_pselect_fn fn, uintptr_t ra, int n, fd_set *r, fd_set *w, fd_set *e,
		   const struct timespec *t, const sigset_t *s)
{
	if (likely(!sets_may_touch(r, w, e, NULL, 0)))
		return fn(n, r, w, e, t, s);
	KW_BEGIN("pselect");
	fd_set *br = kw_sub(&c_, r, r ? sizeof(*r) : 0), *bw = kw_sub(&c_, w, w ? sizeof(*w) : 0);
	fd_set *be = kw_sub(&c_, e, e ? sizeof(*e) : 0);
	if (KW_REFUSED())
		return fn(n, r, w, e, t, s);
	int res = fn(n, br, bw, be, t, s);
	if (res >= 0) {
		kw_done(&c_, br, sizeof(fd_set));
		kw_done(&c_, bw, sizeof(fd_set));
		kw_done(&c_, be, sizeof(fd_set));
	}
	KW_RETURN(res);
}

static int accept_common(kwrite_accept4_fn fn4, kwrite_accept_fn fn, uintptr_t ra, int fd, struct sockaddr *a,
			 socklen_t *l, int flags)
{
	KW_BEGIN(fn4 ? "accept4" : "accept");
	socklen_t *bl = kw_sub(&c_, l, l ? sizeof(*l) : 0);
	struct sockaddr *ba = kw_sub(&c_, a, a && l ? *l : 0);
	if (KW_REFUSED())
		return fn4 ? fn4(fd, a, l, flags) : fn(fd, a, l);
	int r = fn4 ? fn4(fd, ba, bl, flags) : fn(fd, ba, bl);
	if (r >= 0) {
		kw_done(&c_, ba, l ? *l : 0);
		kw_done(&c_, bl, sizeof(*bl));
	}
	KW_RETURN(r);
}

int kwrite_accept(kwrite_accept_fn fn, uintptr_t ra, int fd, struct sockaddr *a, socklen_t *l)
{
	if (likely(!kwrite_may_touch(l, sizeof(*l)) && !kwrite_may_touch(a, a && l ? *l : 0)))
		return fn(fd, a, l);
	return accept_common(NULL, fn, ra, fd, a, l, 0);
}

int kwrite_accept4(kwrite_accept4_fn fn, uintptr_t ra, int fd, struct sockaddr *a, socklen_t *l, int f)
{
	if (likely(!kwrite_may_touch(l, sizeof(*l)) && !kwrite_may_touch(a, a && l ? *l : 0)))
		return fn(fd, a, l, f);
	return accept_common(fn, NULL, ra, fd, a, l, f);
}
