/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kwrite_audit - the kernel writes into protected pool memory: read(2),
 * readv(2), recv(2), recvmsg(2), epoll_wait(2), poll(2) and accept4(2)
 * into buffers allocated by make_config() (the site) and protected at
 * listen() (the trigger).  Prints each call's result and what the buffer
 * holds afterwards: in audit mode the calls succeed as without the shim;
 * in enforce mode they fail with EFAULT and the data stays unread.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "prog.h"

static void say(const char *call, long r)
{
	if (r < 0)
		printf("%s: -1 %s\n", call, strerror(errno));
	else
		printf("%s: %ld\n", call, r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char *buf = make_config(64);
	char *vbuf = make_config(64);
	struct epoll_event *ev = make_config(4 * sizeof(*ev));
	struct pollfd *pfd = make_config(sizeof(*pfd));
	struct msghdr *msg = make_config(sizeof(*msg));
	struct iovec *iov = make_config(sizeof(*iov));
	struct sockaddr_in *peer = make_config(sizeof(*peer));
	socklen_t *peer_len = make_config(sizeof(*peer_len));

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		return 2;
	iov->iov_base = vbuf + 32;
	iov->iov_len = 16;
	msg->msg_iov = iov;
	msg->msg_iovlen = 1;
	*peer_len = sizeof(*peer);
	if (listen(ls, 4) < 0)      /* the trigger: everything above is read-only now */
		return 2;

	int p[2];
	if (pipe(p) < 0 || write(p[1], "pipe data", 9) != 9)
		return 2;
	say("read", read(p[0], buf, 64));
	printf("buf: %.9s\n", buf);

	if (write(p[1], "vectored", 8) != 8)
		return 2;
	struct iovec two[2] = { { vbuf, 4 }, { vbuf + 8, 4 } };
	say("readv", readv(p[0], two, 2));
	printf("vbuf: %.4s %.4s\n", vbuf, vbuf + 8);

	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return 2;
	int s = accept4(ls, (struct sockaddr *)peer, peer_len, 0);
	say("accept4", s < 0 ? -1 : 0);
	if (s < 0)
		return 4;
	printf("peer: %s len %u\n", inet_ntoa(peer->sin_addr), (unsigned)*peer_len);

	int ep = epoll_create1(0);
	struct epoll_event want = { .events = EPOLLIN, .data.u32 = 77 };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &want) < 0 || write(c, "socket", 6) != 6)
		return 2;
	say("epoll_wait", epoll_wait(ep, ev, 4, 5000));
	printf("event: data %u\n", ev[0].data.u32);

	pfd->fd = s;
	pfd->events = POLLIN;
	say("poll", poll(pfd, 1, 5000));
	printf("revents: %s\n", pfd->revents & POLLIN ? "POLLIN" : "none");

	say("recv", recv(s, buf + 16, 3, 0));
	printf("buf: %.3s\n", buf + 16);
	say("recvmsg", recvmsg(s, msg, 0));
	printf("vbuf: %.3s\n", vbuf + 32);
	return 0;
}
