#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# exit_writes.sh - exit is not a violation: programs whose clean-up writes
# their start-up state, protected at listen() by an enforce policy from the
# real pmallocd, stop cleanly: an atexit handler after main returns or
# after exit(), a destructor of the program, C++ static destructors
# (exit_cxx), OpenSSL's atexit clean-up (exit_openssl).  A write before
# exit (main's own) and one from another thread while exit runs are still
# killed.  Under a learn policy the clean-up's writes are not learned
# (PMALLOC_WRITTEN=0), while main's own write is (=1).
. "$(dirname "$0")/e2e_lib.sh"

W=$(readlink -f "$B/progs/exit_writes")
CXX=$(readlink -f "$B/progs/exit_cxx")
SSL=$(readlink -f "$B/progs/exit_openssl")
for p in "$CXX" "$SSL"; do [ -x "$p" ] || skip "$p not built (g++, libssl-dev)"; done
journald_ensure
write_conf "$CONF" <<EOF
version = 1;
policies = (
  { name = "w"; match = { exe = [ "*/exit_writes" ]; }; mode = "enforce";
    pools = ( { name = "state"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); },
  { name = "cxx"; match = { exe = [ "*/exit_cxx" ]; }; mode = "enforce";
    pools = ( { name = "registry"; sites = [ "make_registry" ]; protect = [ "on-call:listen" ]; } ); },
  { name = "ssl"; match = { exe = [ "*/exit_openssl" ]; }; mode = "enforce";
    pools = ( { name = "crypto"; sites = [ "libcrypto.so*:CRYPTO_malloc", "libcrypto.so*:CRYPTO_zalloc" ];
                protect = [ "on-call:listen" ]; } ); }
);
EOF
start_daemon

for how in return exit destroy; do
	hardened "$T/out" "$T/err" "$W" "$how" || fail "$how: exit $?: $(cat "$T/out" "$T/err")"
	grep -qx 'cleaned 0' "$T/out" && [ ! -s "$T/err" ] || fail "$how: $(cat "$T/out" "$T/err")"
done
pass "atexit after return from main, atexit after exit(), a destructor: each wrote the protected state, exit 0"

hardened "$T/out" "$T/err" "$W" write && fail "main's own write was let through: $(cat "$T/out" "$T/err")"
parse_report "$(cat "$T/err")" || fail "write: not a report line: $(cat "$T/err")"
hardened "$T/out" "$T/err" "$W" thread && fail "another thread's write during exit was let through"
parse_report "$(head -n 1 "$T/err")" || fail "thread: not a report line: $(cat "$T/err")"
grep -q 'cleaned' "$T/out" && fail "thread: the exit went on past the other thread's write: $(cat "$T/out")"
pass "a write before exit, and another thread's during exit, are still killed"

hardened "$T/out" "$T/err" "$CXX" || fail "exit_cxx: exit $?: $(cat "$T/out" "$T/err")"
grep -qx 'destroyed 0' "$T/out" && [ ! -s "$T/err" ] || fail "exit_cxx: $(cat "$T/out" "$T/err")"
pass "C++ static destructors wrote start-up memory after main returned: exit 0"

E2E_DEBUG=1 hardened "$T/out" "$T/err" "$SSL" || fail "exit_openssl: exit $?: $(cat "$T/out" "$T/err")"
grep -q 'pool "crypto": [0-9]* bytes made read-only' "$T/err" || fail "exit_openssl: nothing protected: $(cat "$T/err")"
grep -q 'write to protected pool' "$T/err" && fail "exit_openssl: $(cat "$T/err")"
grep -qx 'ready 32' "$T/out" || fail "exit_openssl: $(cat "$T/out")"
pass "OpenSSL set up before the trigger, its atexit clean-up after main: exit 0"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"

# Learning: the clean-up's writes are not counted, main's write is.
write_conf "$CONF" <<EOF
version = 1;
policies = (
  { name = "wl"; match = { exe = [ "*/exit_writes" ]; }; mode = "learn";
    pools = ( { name = "state"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); }
);
EOF
start_daemon
for how in return write; do
	hardened "$T/out" "$T/err" "$W" "$how" || fail "learn $how: exit $?: $(cat "$T/out" "$T/err")"
	e=$(jsel 1 MESSAGE_ID=$MID_LEARNED OBJECT_PID=$HPID PMALLOC_POOL=state PMALLOC_LEARN_REASON=exit) ||
		fail "learn $how: no learned entry at exit"
	want=0
	[ "$how" = write ] && want=1
	expect_field "$e" PMALLOC_WRITTEN "$want"
	expect_field "$e" PMALLOC_ROLE main
done
pass "learn: the atexit handler's write is not learned (PMALLOC_WRITTEN=0), main's is (1); role main"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
