#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_protect_target.sh - `pmallocctl protect PID POOL` reaches exactly the
# process named, also when it makes no interposed call at all: e2e_worker's
# master waits in a plain read(2) (no event loop) while the worker it forked
# polls, sharing the master's connection to pmallocd.  The master's pool is
# protected (a later write kills it with the report); the worker, which
# would have read the order first, never takes it.
. "$(dirname "$0")/e2e_lib.sh"

WORKER=$B/progs/e2e_worker
[ -x "$WORKER" ] || fail "$WORKER not built"
journald_ensure
victim_conf "$CONF" masters e2e_worker config manual
start_daemon

run_fed "$WORKER"
wait_until 100 grep -q '^ready worker=' "$T/out" || fail "e2e_worker did not start: $(cat "$T/out" "$T/err")"
pid=$(cat "$T/hardened.pid")
worker=$(sed -n 's/^ready worker=//p' "$T/out")
printf 'state\n' >&3
wait_until 100 grep -qx 'protected=0' "$T/out" || fail "before: $(cat "$T/out")"

"$B/pmallocctl" protect "$pid" config --socket "$SOCK" >"$T/ctl.out" 2>&1 || fail "pmallocctl protect: $(cat "$T/ctl.out")"
grep -q '^ok: ' "$T/ctl.out" || fail "pmallocctl protect: $(cat "$T/ctl.out")"
protected() { printf 'state\n' >&3; grep -qx 'protected=1' "$T/out"; }
wait_until 100 protected || fail "the master (PID $pid, no event loop) was not protected: $(cat "$T/out")"
e=$(jsel 1 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$pid) || fail "no protected entry for the master"
printf '%s\n' "$e" | grep -q '"PMALLOC_TRIGGER":"manual:pmallocctl"' || fail "protected entry: $e"
pass "the master, waiting in read(2), got the order: $(head -n 1 "$T/ctl.out")"

printf 'write\n' >&3
exec 3>&-
wait $runner
rc=$?
[ $rc = 139 ] || fail "write after protect: exit $rc: $(cat "$T/err")"
grep -q "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; policy \"masters\"; enforce: killed by SIGSEGV$" "$T/err" ||
	fail "report: $(cat "$T/err")"
# The worker leaves once its master is gone; by then it has said whether
# it took the order.
wait_until 100 sh -c "! kill -0 $worker 2>/dev/null" || fail "worker $worker still running"
grep -q 'worker protected' "$T/out" && fail "the forked worker $worker took the master's order: $(cat "$T/out")"
[ -z "$(jnow MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$worker)" ] || fail "the worker logged a protect"
pass "a write after the order kills the master with the report; the worker (PID $worker) never took it"
stop_daemon || fail "pmallocd exit status $?"
exit 0
