#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_manual.sh - the manual trigger from pmallocctl: a program whose policy
# pool has protect = [ "manual" ] runs its poll() loop, unprotected, until
# an administrator says `pmallocctl protect PID config`; pmallocd passes the
# order on, the shim applies it on receipt, the pool is
# logged as protected (trigger manual:pmallocctl), and a later write kills
# the process with the report.  A manual pool left empty: status says the
# protect was asked, and that nothing was there to protect.
. "$(dirname "$0")/e2e_lib.sh"

LOOP=$B/progs/e2e_loop
[ -x "$LOOP" ] || fail "$LOOP not built"
journald_ensure
write_conf "$CONF" <<EOF2
version = 1;
policies = (
  {
    name = "loop";
    match = { exe = [ "*/e2e_loop" ]; };
    pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "manual" ]; },
              { name = "empty"; sites = [ "corrupt" ]; protect = [ "manual" ]; } );
  }
);
EOF2
start_daemon

run_fed "$LOOP"
wait_until 100 grep -qx ready "$T/out" || fail "e2e_loop did not start: $(cat "$T/out" "$T/err")"
pid=$(cat "$T/hardened.pid")
printf 'state\n' >&3
wait_until 100 grep -qx 'protected=0' "$T/out" || fail "before: $(cat "$T/out")"
pass "PID $pid runs with its configuration writable"

"$B/pmallocctl" protect "$pid" nosuchpool --socket "$SOCK" >"$T/ctl.out" 2>&1
[ $? = 1 ] && grep -q '^pmallocctl: ' "$T/ctl.out" || fail "unknown pool: $(cat "$T/ctl.out")"
"$B/pmallocctl" protect "$pid" config --socket "$SOCK" >"$T/ctl.out" 2>&1 || fail "pmallocctl protect: $(cat "$T/ctl.out")"
grep -q '^ok: ' "$T/ctl.out" || fail "pmallocctl protect: $(cat "$T/ctl.out")"
# Applied on receipt by the shim's thread: ask until it says so.
protected() { printf 'state\n' >&3; grep -qx 'protected=1' "$T/out"; }
wait_until 100 protected || fail "not protected after pmallocctl protect: $(cat "$T/out")"
pass "pmallocctl protect: $(head -n 1 "$T/ctl.out")"

e=$(jsel 1 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$pid) || fail "no protected entry"
printf '%s\n' "$e" | grep -q '"PMALLOC_TRIGGER":"manual:pmallocctl"' || fail "protected entry: $e"

# A manual pool nothing was allocated into: the protect is passed on, the
# shim has nothing to make read-only and sends no protect message; status
# says what was asked, not that no trigger fired.
st() { "$B/pmallocctl" status --socket "$SOCK" >"$T/st" 2>&1; grep -qxF "$1" "$T/st"; }
wait_until 100 st '    pool "empty": not protected yet (no trigger has fired)' || fail "status before: $(cat "$T/st")"
"$B/pmallocctl" protect "$pid" empty --socket "$SOCK" >"$T/ctl.out" 2>&1 || fail "protect empty: $(cat "$T/ctl.out")"
wait_until 100 st '    pool "empty": protect asked (manual:pmallocctl), nothing protected: the pool was empty or the process has not acted on it yet' ||
	fail "status after protecting an empty pool: $(cat "$T/st")"
grep -q '^    pool "config": .* bytes protected' "$T/st" || fail "config's line: $(cat "$T/st")"
pass "status after a protect of an empty pool: $(grep 'pool "empty"' "$T/st")"

printf 'write\n' >&3
exec 3>&-
wait $runner
rc=$?
[ $rc = 139 ] || fail "write after protect: exit $rc: $(cat "$T/err")"
grep -q "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; policy \"loop\"; enforce: killed by SIGSEGV$" "$T/err" ||
	fail "report: $(cat "$T/err")"
pass "a write after the manual protect kills PID $pid with the report"
stop_daemon || fail "pmallocd exit status $?"
