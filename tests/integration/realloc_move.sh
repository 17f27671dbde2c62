#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# realloc_move.sh - realloc of a heap block from a site of a pool with
# take = "until-trigger": moved into the pool while it takes (protected at
# its trigger, a write into it kills), left on the heap after the trigger;
# with take = "always" every heap block stays on the heap.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/ip_realloc_move
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock

conf() { # TAKE
	cat >"$T/p.conf" <<EOC
version = 1;
policies = ( { name = "move"; match = { exe = [ "$PROG" ]; }; mode = "enforce";
  pools = ( { name = "names"; sites = [ "grow_name" ]; protect = [ "on-call:listen" ]; take = "$1"; } ); } );
EOC
}

conf until-trigger
out=$(PMALLOC_CONF=$T/p.conf LD_PRELOAD=$SHIM "$PROG" 2>"$T/err") || fail "until-trigger run: $(cat "$T/err")"
[ "$out" = "early 1 late 0 intact" ] || fail "until-trigger: $out"
rc=0; PMALLOC_CONF=$T/p.conf LD_PRELOAD=$SHIM "$PROG" write >/dev/null 2>"$T/err" || rc=$?
[ $rc = 139 ] || fail "a write into the moved name: exit $rc, expected SIGSEGV: $(cat "$T/err")"
pass "take = until-trigger: a heap block grown by realloc from a site moves into the pool before the trigger (protected, a write kills), not after"

conf always
out=$(PMALLOC_CONF=$T/p.conf LD_PRELOAD=$SHIM "$PROG" 2>"$T/err") || fail "always run: $(cat "$T/err")"
[ "$out" = "early 0 late 0 intact" ] || fail "always: $out"
pass "take = always: a heap block stays on the heap"
