#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_audit_flood.sh - an audit-mode program that writes to its protected
# configuration over and over (e2e_hold "write 20000") is reported once
# per site and process: one stderr line, one journal entry (pmallocd's),
# and at exit one line counting the later writes that faulted (the page
# is left writable after the second, so 20000 writes cost two faults).
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
[ "$(grep -c "^pmalloc\[$pid\]: write to protected pool \"config\" at .*; audit: write allowed$" "$T/err")" = 1 ] ||
	fail "want 1 report line on stderr: $(head -n 5 "$T/err")"
grep -qx "pmalloc\[$pid\]: audit: 1 later writes of 1 sites reported once were let through unreported" "$T/err" ||
	fail "no count at exit: $(tail -n 2 "$T/err")"
[ "$(grep -c . "$T/err")" = 2 ] || fail "want 2 lines on stderr, got $(grep -c . "$T/err")"
jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid >/dev/null || fail "no violation entry for PID $pid"
sleep 0.3
journal_sync
all_n=$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid | grep -c .)
[ "$all_n" = 1 ] || fail "want one violation entry for $N writes of one site, got $all_n"
pass "audit: $N writes by PID $pid allowed; one report on stderr and in the journal, the rest counted at exit"

stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
