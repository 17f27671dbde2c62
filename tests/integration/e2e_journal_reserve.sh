#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_journal_reserve.sh - journald stops reading while an unprivileged
# user's processes send hundreds of reports: pmallocd queues what journald
# does not take, but the user's entries never fill the last 64 places of
# the queue, so root's hand-outs and violations that come next are all
# queued, none dropped.  The journal is played by e2e_sink in a private
# mount namespace (the machine's journald is untouched); the counts come
# from pmallocctl status.
E2E_PRIVATE_NS_WHY='to fake the journal in'
. "$(dirname "$0")/e2e_lib.sh"

private_journal_dir
coproc SINK { exec "$B/progs/e2e_sink" "$JOURNAL_DIR/socket"; }
sink_stop() { [ -n "${SINK_PID:-}" ] && kill "$SINK_PID" 2>/dev/null; true; }
at_exit sink_stop
read -r -t 10 line <&"${SINK[0]}" && [ "$line" = ready ] || fail "e2e_sink did not start: $line"

# report_burst 100: neither the per-process limit nor the user's budget
# (800 per 30 s) holds the 250 reports back; only the queue does.
std_conf "$CONF" 100 30
start_daemon
echo stall >&"${SINK[1]}"
read -r -t 10 line <&"${SINK[0]}" || fail "e2e_sink did not stall"
case $line in "full "[0-9]*) ;; *) fail "e2e_sink: $line" ;; esac

journal_line() { client --status | grep '^journal: '; }
out=$(setpriv --reuid=61001 --regid=61001 --clear-groups "$WIRE" --socket "$SOCK" --many 50 --report 5 \
	--policy "" --pool api) || fail "user: $out"
printf '%s\n' "$out" | grep -qx 'reports=250' || fail "user: $out"
wait_until 100 sh -c "'$WIRE' --socket '$SOCK' --status | grep -q '^journal: .* 58 with the queue full'" ||
	fail "user's 250 entries: want 192 queued and 58 dropped: $(journal_line)"
pass "a user's 250 violations, journald stalled: 192 queued, 58 dropped ($(journal_line))"

# 10 processes (more of one program in a row would be summarised as a
# crash loop, repeat.h), 3 reports each.
for i in $(seq 10); do
	out=$(client --report 3) || fail "root client $i: $out"
done
wait_until 100 sh -c "'$WIRE' --socket '$SOCK' --status | grep -q '^clients: 1 connected'" || fail "root's clients not gone"
line=$(journal_line)
case $line in *"; 58 dropped: 58 with the queue full,"*) ;; *) fail "root's entries were dropped: $line" ;; esac
waiting=$(printf '%s\n' "$line" | sed -n 's/.*), \([0-9]*\) waiting.*/\1/p')
[ -n "$waiting" ] && [ "$waiting" -ge 232 ] || fail "want root's 40 entries queued behind the user's 192: $line"
pass "root's 10 hand-outs and 30 violations after that: all queued in the reserve ($line)"
exit 0
