#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# audit_memcached.sh - audit mode never changes what a program does, also
# when the kernel is the writer.  Debian's memcached under an audit policy
# that takes every allocation (sites ["*"]) and protects it after 1 s:
# libevent's epoll_wait array, the connections' read buffers and the like
# become read-only under it, and the kernel writes into them (epoll_wait,
# read, ...).  memcached must keep serving a bounded load (set + get, each
# checked), and the kernel writes must be reported as such on stderr.
# (Enforce mode keeps EFAULT for kernel writes: audit_kwrite.sh.)
. "$(dirname "$0")/lib.sh"

MEMCACHED=/usr/bin/memcached
[ -x "$MEMCACHED" ] || skip "memcached is not installed (make test-deps)"
command -v python3 >/dev/null || skip "python3 is not installed"
SHIM=$B/libpmalloc_shim.so
N=100         # rounds (about 30 ms each on loopback)

# A free loopback port, chosen by the kernel.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

policy() {
	cat <<EOC
version = 1;
daemon = { report_burst = 5; report_interval_s = 3600; };
policies = ( { name = "mc"; match = { exe = [ "*/memcached" ]; }; mode = "$1";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "after:1s" ]; } ); } );
EOC
}
policy audit >"$T/audit.conf"

MPID=
stop_memcached() {
	[ -n "$MPID" ] || return 0
	kill "$MPID" 2>/dev/null
	wait "$MPID" 2>/dev/null
	MPID=
}
at_exit stop_memcached

# start CONF: memcached under the shim on $port; returns once its pool is
# protected (PMALLOC_DEBUG says so) and it answers.
start() {
	env LD_PRELOAD="$SHIM" PMALLOC_CONF="$1" PMALLOC_SOCKET="$T/no-daemon.sock" PMALLOC_DEBUG=1 \
		"$MEMCACHED" -u "$(id -un)" -U 0 -l 127.0.0.1 -p "$port" -t 2 -m 16 >"$T/mc.out" 2>"$T/mc.err" &
	MPID=$!
	wait_until 200 grep -q 'bytes made read-only (after:' "$T/mc.err" ||
		fail "memcached: the pool was not protected: $(head -c 2000 "$T/mc.err")"
}

# load N: N rounds of set + get on fresh connections, 2 s timeout each;
# prints the rounds that came back right.
load() {
	python3 - "$port" "$1" <<'EOPY'
import socket, sys
port, n, ok = int(sys.argv[1]), int(sys.argv[2]), 0
for i in range(n):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(b"set k%d 0 0 6\r\nv%05d\r\nget k%d\r\n" % (i, i, i))
        buf = b""
        while not buf.endswith(b"END\r\n"):
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
        ok += buf == b"STORED\r\nVALUE k%d 0 6\r\nv%05d\r\nEND\r\n" % (i, i)
    except OSError:
        pass
print(ok)
EOPY
}

start "$T/audit.conf"
ok=$(load $N)
[ "$ok" = $N ] || fail "audit: $ok of $N set+get rounds answered right; stderr: $(grep -v '^pmalloc\[[0-9]*\]: write to' "$T/mc.err" | tail -n 5)"
kill -0 "$MPID" 2>/dev/null || fail "audit: memcached is gone"
ok=$(load 20)
[ "$ok" = 20 ] || fail "audit: memcached stopped serving after the load ($ok of 20)"
grep -q 'Bad address' "$T/mc.err" && fail "audit: a kernel write failed: $(grep 'Bad address' "$T/mc.err" | head -n 3)"
kernel=$(grep -o 'by the kernel in [a-z_0-9]*(2); policy "mc"; audit: write allowed$' "$T/mc.err" |
	sed 's/by the kernel in \([a-z_0-9]*\)(2).*/\1/' | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
[ -n "$kernel" ] || fail "audit: no kernel write was reported: $(grep '^pmalloc' "$T/mc.err" | head -n 5)"
grep -q 'by the kernel in epoll_wait(2)' "$T/mc.err" || fail "audit: epoll_wait's writes were not reported ($kernel)"
pass "audit: memcached served $N set+get rounds and 20 more; kernel writes let through and reported: $kernel"
stop_memcached

exit 0
