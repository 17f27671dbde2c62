#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_shim_ratelimit.sh - with no pmallocd, the shim writes violations to
# the journal itself.  An audit-mode program writing to its protected
# configuration 501 times, in two rate-limit windows, is reported once (a
# site is reported once per process; its later writes are counted, and the
# count said at exit), so neither stderr nor the journal floods: one report
# line, one journal entry, and the count of the 500 let through.  (The rate
# limit itself, report_burst per report_interval_s, holds reports of many
# sites and processes: daemon_ratelimit.sh, e2e_crashloop.sh.)
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
[ "$(grep -c "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; audit: write allowed$" "$T/err")" = 1 ] ||
	fail "want 1 report line on stderr: $(cat "$T/err")"
grep -Eqx "pmalloc\[$pid\]: audit: [0-9]+ later writes of 1 sites reported once were let through unreported" "$T/err" ||
	fail "no count of the 500 writes let through: $(cat "$T/err")"

journal_sync
n=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid SYSLOG_IDENTIFIER=pmalloc | grep -c .)
[ "$n" = 1 ] || fail "want 1 violation entry from the shim, got $n"
pass "shim alone: 501 writes of one site: 1 report line and 1 journal entry, the rest counted and said at exit"
