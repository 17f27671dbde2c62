#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# stress_protect.sh - threads racing protect against allocation
# (tests/progs/stress_api_protect.c): 1000 protects of an API pool and of a
# policy pool (manual trigger) while four threads allocate from both.  No
# object allocated before a protect stays writable, none allocated after
# one is read-only, nothing written before a protect is lost, objects never
# overlap, the pool's count is exact, and it ends (alarm, timeout).  Run
# three times, as a race shows only sometimes; about a second in all.
. "$(dirname "$0")/lib.sh"

PROG=$B/progs/stress_api_protect
cat >"$T/pmalloc.conf" <<EOF
version = 1;
policies = (
  {
    name = "race";
    match = { exe = [ "*/stress_api_protect" ]; };
    pools = ( { name = "shared"; sites = [ "race_alloc" ]; protect = [ "manual" ]; max_bytes = 268435456; } );
  }
);
EOF
for run in 1 2 3; do
	rc=0
	PMALLOC_CONF=$T/pmalloc.conf LD_PRELOAD=$B/libpmalloc_shim.so \
		timeout -s KILL 120 "$PROG" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc -ne 137 ] || fail "run $run: no end within 120 s (a deadlock)"
	[ $rc -eq 0 ] || fail "run $run: exit $rc: $(cat "$T/out" "$T/err" | head -n 20)"
	# The tail: 50 objects per thread after the last protect, and whatever
	# the threads allocated between it and their stop.
	tail=$(sed -n 's/^rounds 1000, objects enough, tail writable \([0-9]*\)$/\1/p' "$T/out")
	[ -n "$tail" ] && [ "$tail" -ge 200 ] && [ "$(sed -n 2p "$T/out")" = ok ] ||
		fail "run $run: $(cat "$T/out")"
	[ ! -s "$T/err" ] || fail "run $run: stderr: $(head -n 10 "$T/err")"
done
pass "3 x 1000 protects racing 4 allocating threads"
