/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kwrite.h - kernel writes into protected pool memory: let through and
 * reported where the pool says so (audit), refused with EFAULT otherwise.
 * The libc calls whose buffers the kernel writes are interposed here; the
 * ones trigger.c interposes too (epoll_wait, poll, accept, ...) hand their
 * real call to the kwrite_ function of the same name.
 */
#ifndef PMALLOC_KWRITE_H
#define PMALLOC_KWRITE_H

#include "arena.h"

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>

/* Might [p, p+len) be pool memory?  Two compares; the fast path of every
 * interposed call. */
static inline bool kwrite_may_touch(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	return a < arena_base + arena_size && a + len > arena_base;
}

typedef int (*kwrite_epoll_fn)(int, struct epoll_event *, int, int);
typedef int (*kwrite_epoll_p_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*kwrite_epoll_p2_fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
typedef int (*kwrite_poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*kwrite_ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*kwrite_select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*kwrite_pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
typedef int (*kwrite_accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*kwrite_accept4_fn)(int, struct sockaddr *, socklen_t *, int);

/* The wait calls: their buffer's two compares inline (a server's every
 * wait), the bounce out of line (kwrite.c, cold). */
int kwrite_epoll_wait_slow(kwrite_epoll_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n, int t);
int kwrite_epoll_pwait_slow(kwrite_epoll_p_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n, int t,
			    const sigset_t *s);
int kwrite_epoll_pwait2_slow(kwrite_epoll_p2_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n,
			     const struct timespec *t, const sigset_t *s);
int kwrite_poll_slow(kwrite_poll_fn fn, uintptr_t ra, struct pollfd *f, nfds_t n, int t);
int kwrite_ppoll_slow(kwrite_ppoll_fn fn, uintptr_t ra, struct pollfd *f, nfds_t n, const struct timespec *t,
		      const sigset_t *s);

static inline int kwrite_epoll_wait(kwrite_epoll_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n, int t)
{
	if (likely(!kwrite_may_touch(e, n > 0 ? (size_t)n * sizeof(*e) : 0)))
		return fn(fd, e, n, t);
	return kwrite_epoll_wait_slow(fn, ra, fd, e, n, t);
}

static inline int kwrite_epoll_pwait(kwrite_epoll_p_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n,
				     int t, const sigset_t *s)
{
	if (likely(!kwrite_may_touch(e, n > 0 ? (size_t)n * sizeof(*e) : 0)))
		return fn(fd, e, n, t, s);
	return kwrite_epoll_pwait_slow(fn, ra, fd, e, n, t, s);
}

static inline int kwrite_epoll_pwait2(kwrite_epoll_p2_fn fn, uintptr_t ra, int fd, struct epoll_event *e, int n,
				      const struct timespec *t, const sigset_t *s)
{
	if (likely(!kwrite_may_touch(e, n > 0 ? (size_t)n * sizeof(*e) : 0)))
		return fn(fd, e, n, t, s);
	return kwrite_epoll_pwait2_slow(fn, ra, fd, e, n, t, s);
}

static inline int kwrite_poll(kwrite_poll_fn fn, uintptr_t ra, struct pollfd *f, nfds_t n, int t)
{
	if (likely(!kwrite_may_touch(f, n * sizeof(*f))))
		return fn(f, n, t);
	return kwrite_poll_slow(fn, ra, f, n, t);
}

static inline int kwrite_ppoll(kwrite_ppoll_fn fn, uintptr_t ra, struct pollfd *f, nfds_t n,
			       const struct timespec *t, const sigset_t *s)
{
	if (likely(!kwrite_may_touch(f, n * sizeof(*f))))
		return fn(f, n, t, s);
	return kwrite_ppoll_slow(fn, ra, f, n, t, s);
}
int kwrite_select(kwrite_select_fn fn, uintptr_t ra, int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t);
int kwrite_pselect(kwrite_pselect_fn fn, uintptr_t ra, int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
		   const sigset_t *s);
int kwrite_accept(kwrite_accept_fn fn, uintptr_t ra, int fd, struct sockaddr *a, socklen_t *l);
int kwrite_accept4(kwrite_accept4_fn fn, uintptr_t ra, int fd, struct sockaddr *a, socklen_t *l, int f);

#endif
