#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_shim_ratelimit.sh - with no pmallocd, the shim writes violations to
# the journal itself, and keeps the same rate limit the daemon would
# (daemon.report_burst per report_interval_s of the policy file): an
# audit-mode program writing to its protected configuration 500 times
# leaves report_burst entries, and the next window starts with a summary of
# what was dropped.  stderr keeps the same limit (per faulting
# instruction): report_burst lines, then one summary line counting the rest.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
HOLD=$(readlink -f "$HOLD")
victim_conf "$CONF" held e2e_hold config on-call:listen audit "report_burst = 5; report_interval_s = 1;"
# No daemon on $SOCK: the program reads the policy file itself.
E2E_CONF=$CONF
export E2E_CONF

# Two windows: 500 writes, then (a window later) one more, which carries
# the summary of the first window's drops.
run_fed "$HOLD"
printf 'write 500\n' >&3
wait_until 100 grep -q "wrote 500 times" "$T/out" || fail "e2e_hold did not write: $(cat "$T/out" "$T/err")"
start=$(date +%s%N)
until [ $(( ($(date +%s%N) - start) / 1000000 )) -ge 1100 ]; do sleep 0.1; done   # the window is time itself
printf 'write 1\nexit\n' >&3
exec 3>&-
wait $runner || fail "e2e_hold: exit $?: $(tail -n 3 "$T/err")"
pid=$(cat "$T/hardened.pid")
[ "$(grep -c "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; audit: write allowed$" "$T/err")" = 6 ] ||
	fail "want 5 + 1 report lines on stderr: $(cat "$T/err")"
grep -Eqx "pmalloc\[$pid\]: 495 more write reports at ip 0x[0-9a-f]+ \(e2e_hold\+0x[0-9a-f]+\) not shown \(rate limit: 5 per 1 s\)" "$T/err" ||
	fail "no stderr summary of the 495 lines held back: $(cat "$T/err")"
[ "$(grep -c . "$T/err")" = 7 ] || fail "want 7 lines on stderr: $(cat "$T/err")"

journal_sync
n=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid SYSLOG_IDENTIFIER=pmalloc | grep -c .)
[ "$n" = 6 ] || fail "want 5 + 1 violation entries from the shim, got $n"
e=$(jsel 1 MESSAGE_ID=$MID_DROPPED OBJECT_PID=$pid SYSLOG_IDENTIFIER=pmalloc) || fail "no summary entry"
[ "$(printf '%s\n' "$e" | jfield PMALLOC_DROPPED)" = 495 ] || fail "summary: $e"
pass "shim alone: 501 writes: 5 + 1 lines and a summary of 495 on stderr, 5 + 1 journal entries, 495 summarised as dropped"
