#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_report_fallback.sh - no violation report is lost without trace.  An
# audit-mode program served by pmallocd writes 2000 times into protected
# memory while the daemon is stopped (SIGSTOP: its socket fills and stops
# reading).  Every report is then either a journal entry (queued for the
# daemon and logged when it runs again, or written by the shim itself once
# the socket is full) or counted in a "reports dropped" summary (the
# shim's, written at exit; the daemon's, for its own rate limit): the
# entries and the summaries' PMALLOC_DROPPED add up to 2000.  Then, with no
# daemon at all: a process that forks after its drops summarises them once
# (the child, exiting, has none of its own).
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
# stderr keeps the same limit as the journal: report_burst (5) lines, then
# one line counting the rest.
[ "$(grep -c "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; audit: write allowed$" "$T/err")" = 5 ] ||
	fail "want 5 report lines on stderr, got $(grep -c 'write to protected' "$T/err")"
grep -Eqx "pmalloc\[$pid\]: $((N - 5)) more write reports at ip 0x[0-9a-f]+ \(e2e_hold\+0x[0-9a-f]+\) not shown \(rate limit: 5 per 3600 s\)" "$T/err" ||
	fail "no stderr summary of the $((N - 5)) lines held back: $(tail -n 2 "$T/err")"
kill -CONT "$DPID"
stopped=

# total: violation entries about the program plus what the summaries count.
own=0 queued=0 dropped=0
total() {
	journal_sync
	own=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid _PID=$pid | grep -c .)
	queued=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid _PID=$DPID | grep -c .)
	dropped=$(jnow MESSAGE_ID=$MID_DROPPED OBJECT_PID=$pid | jfield PMALLOC_DROPPED | awk '{ s += $1 } END { print s + 0 }')
	[ $((own + queued + dropped)) -ge $N ]
}
# The daemon logs what waited in its socket, and its own summary once the
# program has gone (one window: 3600 s).
wait_until 200 total || fail "reports lost: $own entries from the shim, $queued from pmallocd, $dropped summarised: $((own + queued + dropped)) of $N"
total
[ $((own + queued + dropped)) = $N ] || fail "$own + $queued + $dropped is more than $N"
[ "$own" -ge 1 ] && [ "$own" -le 5 ] || fail "the shim wrote $own entries, want 1..5 (report_burst)"
s=$(jnow MESSAGE_ID=$MID_DROPPED OBJECT_PID=$pid _PID=$pid)
count_is 1 "$s" || fail "want one summary from the shim: $s"
expect_field "$s" PMALLOC_DROPPED_KIND violation
expect_field "$s" SYSLOG_IDENTIFIER pmalloc
printf '%s\n' "$s" | jfield MESSAGE | grep -Eq "^pmalloc: PID $pid: [0-9]+ violation reports were not logged \(rate limit: 5 per 3600 s" ||
	fail "summary: $s"
pass "$N writes with pmallocd stopped: $queued logged by pmallocd, $own by the shim, $dropped counted in summaries"

# No daemon: 50 writes, 5 logged, 45 dropped; a forked child exits (its
# destructors run) and must not summarise its parent's drops again.
stop_daemon || fail "pmallocd exit status $?"
printf 'write 50\nfork\nexit\n' >"$T/cmds2"
E2E_CONF=$CONF hardened "$T/out2" "$T/err2" "$HOLD" <"$T/cmds2" || fail "e2e_hold: exit $?: $(tail -n 3 "$T/err2")"
pid=$HPID
child=$(sed -n 's/^forked \([0-9]*\): exit 0$/\1/p' "$T/out2")
[ -n "$child" ] || fail "e2e_hold did not fork: $(cat "$T/out2")"
journal_sync
own=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid | grep -c .)
s=$(jsel 1 MESSAGE_ID=$MID_DROPPED OBJECT_PID=$pid) || fail "no summary from PID $pid"
[ "$own" = 5 ] && count_is 1 "$s" && [ "$(printf '%s\n' "$s" | jfield PMALLOC_DROPPED)" = 45 ] ||
	fail "want 5 entries and one summary of 45: $own entries, summary $s"
c=$(jnow MESSAGE_ID=$MID_DROPPED OBJECT_PID=$child)
[ -z "$c" ] || fail "the forked child summarised its parent's drops: $c"
pass "no daemon: 5 entries, one summary of 45 from PID $pid, none from its forked child $child"
