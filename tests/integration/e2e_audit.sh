#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_audit.sh - mode = "audit" handed out by the real pmallocd: the write
# is reported (stderr line, journal entry at PRIORITY=4 with
# PMALLOC_MODE=audit) and then allowed; the process carries on and exits
# normally.  The page is protected again after the write: a second write is
# reported too, as its own entry.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
DEMO=$(readlink -f "$DEMO")
HOLD=$(readlink -f "$HOLD")
# The shipped policy in audit mode, and the same for e2e_hold.
sed 's/^    mode = "enforce";/    mode = "audit";/' "$SRC/conf/pmalloc.conf" >"$T/audit.conf"
grep -q '^    mode = "audit";' "$T/audit.conf" || fail "cannot make the shipped policy audit"
sed 's|^);$|  , { name = "held"; match = { exe = [ "*/e2e_hold" ]; }; mode = "audit";\n      pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); }\n);|' \
	"$T/audit.conf" | write_conf "$CONF"
"$B/pmallocd" --check --config "$CONF" >"$T/check" 2>&1 || fail "config refused: $(cat "$T/check")"
start_daemon

hardened "$T/out" "$T/err" "$DEMO" attack || fail "audit: exit $?, want 0: $(cat "$T/out" "$T/err")"
pid=$HPID
[ "$(cat "$T/out")" = 'pmalloc-demo: serving as admin "alice" on 127.0.0.1, table[3]=21
pmalloc-demo: simulating a heap overflow into the admin name...
pmalloc-demo: admin is now "mlice"; exiting normally' ] || fail "audit: stdout: $(cat "$T/out")"
[ "$(wc -l <"$T/err")" = 1 ] || fail "audit: want one stderr line: $(cat "$T/err")"
line=$(cat "$T/err")
parse_report "$line" || fail "audit: not a report line: $line"
[ "$R_PID" = "$pid" ] && [ "$R_POLICY" = demo ] && [ "$R_POOL" = config ] || fail "audit: $line"
[ "$R_TAIL" = "audit: write allowed" ] || fail "audit: $line"
fsym=$(fault_symbol "$DEMO" "$R_LOC" corrupt)
pass "audit (PID $pid): the write is reported on stderr and allowed; the program exits 0"

e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) || fail "no violation entry for PID $pid"
count_is 1 "$e" || fail "violation entries: $e"
expect_field "$e" _PID "$DPID"
expect_violation "$e" audit demo "$DEMO"
expect_field "$e" PMALLOC_FAULT_SYMBOL "$fsym"
expect_field "$e" MESSAGE "pmalloc: PID $pid ($DEMO) wrote to protected pool \\\"config\\\" of policy \\\"demo\\\" at $R_ADDR (offset 0 in 16-byte object allocated at $R_SITE), ip $R_IP in $fsym; write allowed (audit)"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$pid) || fail "no hand-out entry"
expect_field "$e" MESSAGE "pmalloc: policy \\\"demo\\\" (generation 1, audit) handed to PID $pid ($DEMO)"
pass "journal: PRIORITY=4, PMALLOC_MODE=audit, MESSAGE says allowed; handed out as audit"

# Two writes of one site, one report (once per site and process): the
# second is counted, said at exit, and its page left writable.
printf 'write\nwrite\nprint\nexit\n' >"$T/cmds"
hardened "$T/out" "$T/err" "$HOLD" <"$T/cmds" || fail "e2e_hold: exit $?: $(cat "$T/out" "$T/err")"
pid=$HPID
[ "$(cat "$T/out")" = 'listening
wrote: name "mlice"
wrote: name "mlice"
name "mlice"' ] || fail "e2e_hold: stdout: $(cat "$T/out")"
[ "$(wc -l <"$T/err")" = 2 ] || fail "e2e_hold: want a report line and a count: $(cat "$T/err")"
parse_report "$(head -n 1 "$T/err")" && [ "$R_PID" = "$pid" ] && [ "$R_TAIL" = "audit: write allowed" ] ||
	fail "e2e_hold: $(head -n 1 "$T/err")"
grep -qx "pmalloc\[$pid\]: audit: 1 later writes of 1 sites reported once were let through unreported" "$T/err" ||
	fail "e2e_hold: no count at exit: $(cat "$T/err")"
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) || fail "want a violation entry for PID $pid: $e"
sleep 0.3
journal_sync
count_is 1 "$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid)" || fail "want one violation entry for PID $pid"
[ "$(printf '%s\n' "$e" | jfield PRIORITY | sort -u)" = 4 ] || fail "priorities: $e"
[ "$(printf '%s\n' "$e" | jfield PMALLOC_POLICY | sort -u)" = held ] || fail "policies: $e"
pass "e2e_hold (PID $pid): two audited writes of one site, one stderr report and one PRIORITY=4 entry, the second counted"

stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
