# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_ratelimit.sh - violations are logged at most report_burst times
# per process and site in each report_interval_s; the rest are counted and
# one summary entry says how many, when the interval ends or when the
# process goes away.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
std_conf "$CONF" 3 2              # 3 entries per 2 s
start_daemon

# 10 reports from one site, the connection kept open past the interval:
# the summary comes from the timer.
client --report 10 --hold 3500 >"$T/a.out" &
apid=$!
wait_until 100 grep -q '^pid=' "$T/a.out" || fail "client did not start"
cpid=$(sed -n 's/^pid=//p' "$T/a.out")
jwait 1 MESSAGE_ID=$MID_DROPPED OBJECT_PID=$cpid >/dev/null || fail "no summary entry"
kill -0 "$apid" 2>/dev/null || fail "the summary should come while the client still runs"
n=$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid | grep -c .)
[ "$n" = 3 ] || fail "$n violation entries logged, want 3 (report_burst)"
e=$(jentries MESSAGE_ID=$MID_DROPPED OBJECT_PID=$cpid)
[ "$(printf '%s\n' "$e" | grep -c .)" = 1 ] || fail "want one summary: $e"
expect_field "$e" PRIORITY 4
expect_field "$e" PMALLOC_DROPPED 7
expect_field "$e" PMALLOC_DROPPED_KIND violation
ip=$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid | head -n 1 | jfield PMALLOC_FAULT_IP)
expect_field "$e" MESSAGE "pmalloc: PID $cpid ($WIRE): 7 more violation reports at ip $ip not logged (rate limit: 3 per 2 s)"
pass "10 reports: 3 logged, 1 summary (priority 4) for the 7 dropped, at the end of the interval"
wait "$apid"

# The same, the client gone at once: the summary comes when it goes away.
out=$(client --report 10)
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
jwait 1 MESSAGE_ID=$MID_DROPPED OBJECT_PID=$cpid >/dev/null || fail "no summary after the client left"
expect_field "$(jentries MESSAGE_ID=$MID_DROPPED OBJECT_PID=$cpid)" PMALLOC_DROPPED 7
[ "$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid | grep -c .)" = 3 ] || fail "want 3 entries"
pass "client gone: the summary is written at once"

# After the interval, a new burst is allowed.
client --report 4 --delay-ms 800 >"$T/b.out"
cpid=$(sed -n 's/^pid=//p' "$T/b.out")
[ "$(jwait 4 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid | grep -c .)" = 4 ] || fail "4 reports 0.8 s apart: want 4 entries (3 + 1 in the next interval)"
[ -z "$(jentries MESSAGE_ID=$MID_DROPPED OBJECT_PID=$cpid)" ] || fail "nothing was dropped, but a summary was written"
pass "reports spread over two intervals: all logged, no summary"

status=$(client --status)
printf '%s\n' "$status" | grep -q "violations: 10 reported, 7 not logged (rate limit)" || fail "status: $status"
pass "status counts the dropped reports"

stop_daemon || fail "exit status $?"
exit 0
