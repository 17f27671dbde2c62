#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_daemon_killed.sh - pmallocd killed (SIGKILL) while a hardened program
# runs.  The running program (e2e_hold, driven through a fifo, so no sleeps)
# keeps its protection: a later write still kills it with the report line,
# and the shim logs that violation to the journal itself.  A NEW program
# started after the daemon died (stale socket left behind) falls back to the
# policy file and is protected; its violation, too, is logged by the shim
# (SYSLOG_IDENTIFIER=pmalloc, same MESSAGE_ID, pmallocd(8) fields, OBJECT_PID).
# A restarted daemon serves again.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
DEMO=$(readlink -f "$DEMO")
HOLD=$(readlink -f "$HOLD")
victim_conf "$CONF" held e2e_hold config on-call:listen
# The file the programs fall back to: the shipped one.
write_conf "$T/file.conf" <"$SRC/conf/pmalloc.conf"
start_daemon

# e2e_hold in the background, its stdin a fifo held open here on fd 7.
hold_served
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$hpid) || fail "e2e_hold got no policy from pmallocd"
expect_field "$e" PMALLOC_POLICY held
e=$(jsel 1 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$hpid) || fail "e2e_hold: no pool-protected entry"
expect_field "$e" _PID "$DPID"
pass "e2e_hold (PID $hpid) got policy \"held\" from pmallocd and protected its pool at listen()"

kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
[ -S "$SOCK" ] || fail "the killed daemon's socket should be left behind"
echo print >&7
wait_until 200 grep -qx 'name "alice"' "$T/hold.out" || fail "e2e_hold stopped answering: $(cat "$T/hold.out" "$T/hold.err")"
kill -0 "$hpid" || fail "e2e_hold died with the daemon"
pass "pmallocd killed by SIGKILL; e2e_hold runs on"

echo write >&7
wait "$hold_bg"
rc=$?
hold_bg=
[ $rc = 139 ] || fail "write after the daemon died: exit $rc, want 139: $(cat "$T/hold.out" "$T/hold.err")"
grep -q '^wrote' "$T/hold.out" && fail "the write went through: $(cat "$T/hold.out")"
[ "$(wc -l <"$T/hold.err")" = 1 ] || fail "want one stderr line: $(cat "$T/hold.err")"
line=$(cat "$T/hold.err")
parse_report "$line" || fail "not a report line: $line"
[ "$R_PID" = "$hpid" ] && [ "$R_POLICY" = held ] && [ "$R_POOL" = config ] &&
	[ "$R_TAIL" = "enforce: killed by SIGSEGV" ] || fail "$line"
expect_site "$HOLD" "$R_SITE" strdup@plt
pass "the protection outlived the daemon: the write killed PID $hpid with the report line"

# Logged by the shim itself: _PID is the program, not a daemon.
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$hpid) || fail "no violation entry for PID $hpid"
count_is 1 "$e" || fail "violation entries: $e"
expect_field "$e" SYSLOG_IDENTIFIER pmalloc
expect_field "$e" _PID "$hpid"
expect_violation "$e" enforce held "$HOLD"
expect_field "$e" PMALLOC_GENERATION 1
pass "the shim logged it itself (SYSLOG_IDENTIFIER=pmalloc, _PID=$hpid, generation 1 as handed out)"

# A new program, the daemon dead: the policy file.
E2E_CONF=$T/file.conf hardened "$T/out" "$T/err" "$DEMO" attack
rc=$?
pid=$HPID
[ $rc = 139 ] || fail "new program: exit $rc, want 139: $(cat "$T/out" "$T/err")"
grep -q 'admin is now' "$T/out" && fail "new program: the attack went through: $(cat "$T/out")"
[ "$(wc -l <"$T/err")" = 1 ] || fail "new program: want one stderr line: $(cat "$T/err")"
line=$(cat "$T/err")
parse_report "$line" || fail "new program: not a report line: $line"
[ "$R_PID" = "$pid" ] && [ "$R_POLICY" = demo ] && [ "$R_POOL" = config ] &&
	[ "$R_TAIL" = "enforce: killed by SIGSEGV" ] && [ "$R_OFF" = 0 ] && [ "$R_SIZE" = 16 ] ||
	fail "new program: $line"
expect_site "$DEMO" "$R_SITE" xstrdup
fsym=$(fault_symbol "$DEMO" "$R_LOC" corrupt)
pass "a program started after the daemon died fell back to the policy file and was protected (PID $pid)"

e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) || fail "no violation entry for PID $pid"
count_is 1 "$e" || fail "violation entries: $e"
ve=$e
expect_field "$e" SYSLOG_IDENTIFIER pmalloc
expect_field "$e" _PID "$pid"
expect_field "$e" OBJECT_PID "$pid"
expect_violation "$e" enforce demo "$DEMO"
expect_field "$e" PMALLOC_GENERATION 0
# No daemon to symbolise: the shim gives the symbol where it knows it
# (pmallocd(8): "where known"), and the frames as module+offset.
fs=$(printf '%s\n' "$e" | jfield PMALLOC_FAULT_SYMBOL)
[ -z "$fs" ] || [ "$fs" = "$fsym" ] || fail "PMALLOC_FAULT_SYMBOL: $fs, want $fsym (or none)"
bt=$(printf '%s\n' "$e" | jfield PMALLOC_BACKTRACE)
case $bt in
"pmalloc-demo+0x${R_LOC##*+0x} < pmalloc-demo+0x"*" < libc.so.6+0x"*) ;;
*) fail "PMALLOC_BACKTRACE: $bt" ;;
esac
expect_field "$e" MESSAGE "pmalloc: PID $pid ($DEMO) wrote to protected pool \\\"config\\\" of policy \\\"demo\\\" at $R_ADDR (offset 0 in 16-byte object allocated at $R_SITE), ip $R_IP${fs:+ in $fs}; process killed (enforce)"
e=$(jsel 1 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$pid) || fail "no pool-protected entry for PID $pid"
expect_field "$e" SYSLOG_IDENTIFIER pmalloc
expect_field "$e" _PID "$pid"
expect_field "$e" PRIORITY 7
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_POOL config
expect_field "$e" PMALLOC_TRIGGER on-call:listen
expect_field "$e" PMALLOC_OBJECTS 4
[ -z "$(jnow MESSAGE_ID=$MID_HANDED OBJECT_PID=$pid)" ] || fail "a hand-out was logged for PID $pid"
"$B/pmallocctl" violations --since "$E2E_SINCE" --pid "$pid" >"$T/ctl" || fail "pmallocctl violations: exit $?"
row=$(tail -n 1 "$T/ctl" | tr -s ' ' | cut -d ' ' -f 3-)
# Written by the shim itself (BY self); without pmallocd's symbol pmallocctl
# names the faulting function from the module file.  The program died of
# its write right after sending the entry: when journald read /proc too late
# to attest _EXE, the cell says so (pmallocctl(8)), and that is right too.
exe_cell=$DEMO
[ -n "$(printf '%s\n' "$ve" | jfield _EXE)" ] || exe_cell="$DEMO (claimed; not attested)"
case $row in
"$pid self $exe_cell demo config enforce $R_ADDR 0/16 $R_SITE ${fs:-corrupt+0x}"*) ;;
*) fail "pmallocctl row: $row" ;;
esac
pass "the shim logged its violation and its protect itself (SYSLOG_IDENTIFIER=pmalloc, OBJECT_PID=$pid); pmallocctl shows it"

# A daemon started again replaces the stale socket and serves.
start_daemon
hardened "$T/out" "$T/err" "$HOLD" </dev/null || fail "after restart: exit $?: $(cat "$T/err")"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$HPID) || fail "the restarted daemon handed nothing to PID $HPID"
expect_field "$e" _PID "$DPID"
pass "a restarted pmallocd serves again"

stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
