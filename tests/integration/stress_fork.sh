#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# stress_fork.sh - a fork storm under an armed policy with max_bytes
# (tests/progs/stress_api_fork.c): 200 children forked while four threads
# allocate into a capped policy pool, an API pool and the heap.  Nothing
# deadlocks (each child has an alarm, the whole run a timeout), every child
# exits 0 after finding the parent's objects intact, allocating, protecting
# and checking the pools' accounting, and so does the parent.  Bounded: a
# few seconds here.
. "$(dirname "$0")/lib.sh"

PROG=$B/progs/stress_api_fork
MAX=262144
cat >"$T/pmalloc.conf" <<EOF
version = 1;
policies = (
  {
    name = "storm";
    match = { exe = [ "*/stress_api_fork" ]; };
    pools = ( { name = "storm"; sites = [ "storm_alloc" ]; protect = [ "manual" ]; max_bytes = $MAX; } );
  }
);
EOF
rc=0
PMALLOC_CONF=$T/pmalloc.conf PMALLOC_DEBUG=1 LD_PRELOAD=$B/libpmalloc_shim.so \
	timeout -s KILL 120 "$PROG" $MAX >"$T/out" 2>"$T/err" || rc=$?
[ $rc -ne 137 ] || fail "no end within 120 s (a deadlock): $(tail -n 5 "$T/out" "$T/err")"
[ $rc -eq 0 ] || fail "exit $rc: $(cat "$T/out"; grep -v '^pmalloc\[' "$T/err" | head -n 20)"
grep -qx 'forks 200, clean exits 200, storm objects enough' "$T/out" || fail "$(cat "$T/out")"
grep -qx ok "$T/out" || fail "$(cat "$T/out")"
# The policy was armed: its pool reached the cap (said under PMALLOC_DEBUG).
grep -q 'pool "storm" reached max_bytes' "$T/err" || fail "the cap was never reached: $(head -n 20 "$T/err")"
pass "200 forks under 4 allocating threads, pools and cap consistent in every child"
