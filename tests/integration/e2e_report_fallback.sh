#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_report_fallback.sh - no violation report is lost without trace.  An
# audit-mode program served by pmallocd writes 2000 times into protected
# memory while the daemon is stopped (SIGSTOP: its socket stops reading).
# A site is reported once per process, the rest counted: the one report
# reaches the journal (queued for the daemon and logged when it runs again,
# or written by the shim itself), and the 1999 writes let through are
# counted on stderr at exit.  Then, with no daemon at all, 50 writes: one
# entry, and a forked child writes none of its parent's.
. "$(dirname "$0")/e2e_lib.sh"

N=2000
journald_ensure
HOLD=$(readlink -f "$HOLD")
victim_conf "$CONF" held e2e_hold config on-call:listen audit "report_burst = 5; report_interval_s = 3600;"
start_daemon
stopped=
cont_daemon() { [ -n "$stopped" ] && [ -n "$DPID" ] && kill -CONT "$DPID" 2>/dev/null; true; }
at_exit_first cont_daemon

run_fed "$HOLD"
wait_until 100 grep -qx listening "$T/out" || fail "e2e_hold did not start: $(cat "$T/out" "$T/err")"
pid=$(cat "$T/hardened.pid")
jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$pid >/dev/null || fail "e2e_hold got no policy from pmallocd"

kill -STOP "$DPID"
stopped=1
printf 'write %d\nexit\n' $N >&3
exec 3>&-
wait $runner || fail "e2e_hold: exit $?: $(tail -n 3 "$T/err")"
# One report line (the site's first write), and the count of the rest.
[ "$(grep -c "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; audit: write allowed$" "$T/err")" = 1 ] ||
	fail "want 1 report line on stderr, got $(grep -c 'write to protected' "$T/err")"
grep -Eqx "pmalloc\[$pid\]: audit: [0-9]+ later writes of 1 sites reported once were let through unreported" "$T/err" ||
	fail "no count of the $((N - 1)) writes let through: $(tail -n 2 "$T/err")"
kill -CONT "$DPID"
stopped=

# The one report: logged by pmallocd once it runs again, or by the shim.
own=0 queued=0
total() {
	journal_sync
	own=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid _PID=$pid | grep -c .)
	queued=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid _PID=$DPID | grep -c .)
	[ $((own + queued)) -ge 1 ]
}
wait_until 200 total || fail "the report was lost: no entry from the shim or pmallocd"
total
[ $((own + queued)) = 1 ] || fail "$own entries from the shim + $queued from pmallocd: want 1"
pass "$N writes with pmallocd stopped: the report logged ($queued by pmallocd, $own by the shim), the rest counted"

# No daemon: 50 writes, 1 logged; a forked child exits (its destructors
# run) and writes nothing of its parent's.
stop_daemon || fail "pmallocd exit status $?"
printf 'write 50\nfork\nexit\n' >"$T/cmds2"
E2E_CONF=$CONF hardened "$T/out2" "$T/err2" "$HOLD" <"$T/cmds2" || fail "e2e_hold: exit $?: $(tail -n 3 "$T/err2")"
pid=$HPID
child=$(sed -n 's/^forked \([0-9]*\): exit 0$/\1/p' "$T/out2")
[ -n "$child" ] || fail "e2e_hold did not fork: $(cat "$T/out2")"
journal_sync
own=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid | grep -c .)
[ "$own" = 1 ] || fail "want 1 entry from PID $pid: $own"
c=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$child; jnow MESSAGE_ID=$MID_DROPPED OBJECT_PID=$child)
[ -z "$c" ] || fail "the forked child wrote its parent's: $c"
pass "no daemon: 1 entry from PID $pid, none from its forked child $child"
