#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# coexist_redis.sh - Debian's redis-server, which links jemalloc, starts
# under the shim with a policy armed and serves a bounded load on loopback:
# the pool takes redis's first 4 MiB of allocations (then fills up, so pool
# and jemalloc objects mix, and pool objects are realloc'ed onto the heap),
# everything else stays jemalloc's (INFO says so, and so does the shim).
# A private config in $T, a port of this test's own, stopped by its pid.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
[ -f "$SHIM" ] || fail "$SHIM is missing: run make"
for t in redis-server redis-cli redis-benchmark; do
	command -v $t >/dev/null || skip "$t not installed"
done
ldd "$(command -v redis-server)" | grep -q libjemalloc || skip "this redis-server does not link jemalloc"
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock
cat >"$T/pmalloc.conf" <<'CONF'
version = 1;
policies = (
  { name = "redis"; match = { exe = [ "*/redis-server", "*/redis-check-*" ]; };
    pools = ( { name = "early"; sites = [ "*" ]; max_bytes = 4194304; } ); }
);
CONF

pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; true; }
at_exit stop
# A port nobody else uses: try a few, each from this test's range.
for try in 1 2 3 4 5; do
	port=$((20000 + (RANDOM % 20000)))
	cat >"$T/redis.conf" <<CONF
bind 127.0.0.1
port $port
dir $T
save ""
appendonly no
daemonize no
logfile ""
CONF
	LD_PRELOAD=$SHIM PMALLOC_CONF=$T/pmalloc.conf PMALLOC_DEBUG=1 \
		redis-server "$T/redis.conf" >"$T/redis.out" 2>"$T/redis.err" &
	pid=$!
	wait_until 100 redis-cli -h 127.0.0.1 -p $port PING && break
	grep -q 'Address already in use' "$T/redis.out" || fail "redis-server did not start: $(tail -n 20 "$T/redis.out" "$T/redis.err")"
	stop
	pid=
done
[ -n "$pid" ] || fail "no free port for redis-server"
kill -0 "$pid" || fail "redis-server died: $(tail -n 20 "$T/redis.out" "$T/redis.err")"
grep -q 'policy "redis" (enforce, mprotect) applies' "$T/redis.err" ||
	fail "the policy is not armed in redis-server: $(head -n 20 "$T/redis.err")"
grep -q 'heap allocator: .*/libjemalloc.so.2 ' "$T/redis.err" ||
	fail "redis-server's heap is not jemalloc: $(grep 'heap allocator' "$T/redis.err")"
pass "redis-server $pid on 127.0.0.1:$port, policy armed, heap jemalloc"

timeout 120 redis-benchmark -h 127.0.0.1 -p $port -n 2000 -c 4 -r 1000 -d 200 -t set,get,lpush,lpop,incr -q \
	>"$T/bench.out" 2>&1 || fail "redis-benchmark: $(tail -n 5 "$T/bench.out")"
[ "$(grep -c 'requests per second' "$T/bench.out")" = 5 ] || fail "redis-benchmark: $(cat "$T/bench.out")"
r() { redis-cli -h 127.0.0.1 -p $port "$@"; }
[ "$(r SET pmalloc:key "$(printf 'v%.0s' {1..5000})")" = OK ] || fail "SET"
[ "$(r GET pmalloc:key | wc -c)" = 5001 ] || fail "GET returned the wrong value"
[ "$(r DBSIZE)" -ge 2 ] || fail "DBSIZE $(r DBSIZE)"
r INFO memory | grep -q '^mem_allocator:jemalloc' || fail "INFO memory: $(r INFO memory | grep allocator)"
r MEMORY STATS >/dev/null || fail "MEMORY STATS"
kill -0 "$pid" || fail "redis-server died under load: $(tail -n 20 "$T/redis.out" "$T/redis.err")"
grep -q 'pool "early" reached max_bytes' "$T/redis.err" ||
	fail "redis-server's allocations never filled the pool: $(head -n 20 "$T/redis.err")"
pass "redis-benchmark: 5 x 2000 requests answered; the pool filled, jemalloc serves the rest"

kill "$pid"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] || fail "redis-server exit $rc on SIGTERM: $(tail -n 5 "$T/redis.out" "$T/redis.err")"
grep -q 'Redis is now ready to exit' "$T/redis.out" || fail "no clean shutdown: $(tail -n 5 "$T/redis.out")"
if grep -v '^pmalloc\[[0-9]*\]: ' "$T/redis.err" | grep -q .; then
	fail "unexpected stderr: $(head -n 5 "$T/redis.err")"
fi
pass "redis-server stopped cleanly"
