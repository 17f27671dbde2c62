#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_audit_flood.sh - an audit-mode program that writes to its protected
# configuration over and over (e2e_hold "write 20000": 20000 violations,
# each reported from the SIGSEGV handler, faster than pmallocd reads them)
# stays within the journal's rate limit: pmallocd logs report_burst (20)
# entries and one summary of the rest it counted.  Reports that found the
# daemon's socket full went to the journal from the shim itself, under the
# shim's own limit (report_burst again) and with its own summary at exit:
# at most 2 x 20 entries, and entries plus summaries account for every
# one of the 20000.  stderr keeps the same limit: report_burst lines, then
# one line counting the rest.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
HOLD=$(readlink -f "$HOLD")
N=20000
victim_conf "$CONF" held e2e_hold config on-call:listen audit "report_burst = 20; report_interval_s = 3600;"
start_daemon

printf 'write %s\nexit\n' "$N" >"$T/cmds"
hardened "$T/out" "$T/err" "$HOLD" <"$T/cmds" || fail "e2e_hold: exit $?: $(tail -n 3 "$T/err")"
pid=$HPID
grep -qx "wrote $N times: name \"[a-z]lice\"" "$T/out" || fail "e2e_hold: $(cat "$T/out")"
# stderr keeps the same limit: report_burst lines, then at exit one line
# counting the rest.
[ "$(grep -c "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; audit: write allowed$" "$T/err")" = 20 ] ||
	fail "want 20 report lines on stderr: $(grep -c . "$T/err")"
grep -Eqx "pmalloc\[$pid\]: $((N - 20)) more write reports at ip 0x[0-9a-f]+ \(e2e_hold\+0x[0-9a-f]+\) not shown \(rate limit: 20 per 3600 s\)" "$T/err" ||
	fail "no stderr summary of the $((N - 20)) lines held back: $(tail -n 2 "$T/err")"
[ "$(grep -c . "$T/err")" = 21 ] || fail "want 21 lines on stderr, got $(grep -c . "$T/err")"
pass "audit: $N writes by PID $pid allowed; 20 reported on stderr, $((N - 20)) counted in one summary line"

# The daemon's summary is written when the process has gone (interval:
# 1 h); the shim's at its exit.
jsel 1 MESSAGE_ID=$MID_DROPPED OBJECT_PID=$pid _PID=$DPID >/dev/null || fail "no rate-limit summary from pmallocd for PID $pid"
journal_sync
daemon_n=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid _PID=$DPID | grep -c .)
shim_n=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid _PID=$pid | grep -c .)
all_n=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid | grep -c .)
d_dropped=$(jnow MESSAGE_ID=$MID_DROPPED OBJECT_PID=$pid _PID=$DPID | jfield PMALLOC_DROPPED | awk '{ s += $1 } END { print s + 0 }')
s_dropped=$(jnow MESSAGE_ID=$MID_DROPPED OBJECT_PID=$pid _PID=$pid | jfield PMALLOC_DROPPED | awk '{ s += $1 } END { print s + 0 }')
status=$("$B/pmallocctl" status --socket "$SOCK")
reported=$(printf '%s\n' "$status" | grep -A4 "^  PID $pid " | sed -n 's/^    violations: \([0-9]*\) reported.*/\1/p')
summary="daemon: $daemon_n entries, $d_dropped summarised, ${reported:-?} received; shim: $shim_n entries, $s_dropped summarised"
[ "$daemon_n" = 20 ] || fail "want report_burst (20) entries from pmallocd ($summary)"
[ "$shim_n" -le 20 ] || fail "the shim's own limit was bypassed: $shim_n entries ($summary)"
[ "$all_n" = $((daemon_n + shim_n)) ] || fail "entries from elsewhere: $all_n in all ($summary)"
[ -n "$reported" ] && [ "$reported" -le $N ] || fail "status: want at most $N reported ($summary): $status"
[ "$d_dropped" = $((reported - 20)) ] || fail "pmallocd's summary says $d_dropped dropped, want $((reported - 20)) ($summary)"
[ $((reported + shim_n + s_dropped)) = $N ] || fail "reports lost without trace ($summary)"
pass "$daemon_n + $shim_n entries, $d_dropped + $s_dropped summarised as dropped: all $N accounted for"

stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
