#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_demo.sh - the issue's "Done when", end to end: an unmodified program
# (pmalloc-demo) gets its policy from the real pmallocd running the shipped
# conf/pmalloc.conf, with no policy file it could read itself.  It runs to
# the end normally; with "attack" it dies by SIGSEGV with the report line on
# stderr; the real journal holds the violation entry with every pmallocd(8)
# field (symbols resolved), the "policy handed" and "pool protected" entries
# for that pid; pmallocctl violations --pid shows it, as a table and JSON.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
DEMO=$(readlink -f "$DEMO")
build_id=$(readelf -n "$DEMO" | sed -n 's/.*Build ID: //p')
[ -n "$build_id" ] || fail "pmalloc-demo has no build-id"

# Control: with no daemon the program has no policy at all, and the attack
# goes through.  So whatever protects it below came from pmallocd.
hardened "$T/out" "$T/err" "$DEMO" attack || fail "no daemon: exit $?: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "no daemon: stderr: $(cat "$T/err")"
grep -qx 'pmalloc-demo: admin is now "mlice"; exiting normally' "$T/out" || fail "no daemon: $(cat "$T/out")"
pass "control: no daemon, no readable policy file: unprotected, the attack goes through"

start_daemon

# 1. A normal run: the whole program, protected on the way, exit 0.
hardened "$T/out" "$T/err" "$DEMO" || fail "normal run: exit $?: $(cat "$T/err")"
pid=$HPID
[ ! -s "$T/err" ] || fail "normal run: stderr: $(cat "$T/err")"
[ "$(cat "$T/out")" = 'pmalloc-demo: serving as admin "alice" on 127.0.0.1, table[3]=21
pmalloc-demo: admin is now "alice"; exiting normally' ] || fail "normal run: stdout: $(cat "$T/out")"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$pid) || fail "normal run: no hand-out entry for PID $pid"
count_is 1 "$e" || fail "normal run: hand-out entries: $e"
e=$(jsel 1 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$pid) || fail "normal run: no pool-protected entry for PID $pid"
count_is 1 "$e" || fail "normal run: pool-protected entries: $e"
[ -z "$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid)" ] || fail "normal run: a violation was logged"
pass "normal run (PID $pid): exit 0, the program's own output only, policy handed and pool protected"

# 2. The attack.
hardened "$T/out" "$T/err" "$DEMO" attack
rc=$?
pid=$HPID
[ $rc = 139 ] || fail "attack: exit $rc, want 139 (SIGSEGV): $(cat "$T/out" "$T/err")"
[ "$(cat "$T/out")" = 'pmalloc-demo: serving as admin "alice" on 127.0.0.1, table[3]=21
pmalloc-demo: simulating a heap overflow into the admin name...' ] || fail "attack: stdout: $(cat "$T/out")"
[ "$(wc -l <"$T/err")" = 1 ] || fail "attack: want one stderr line: $(cat "$T/err")"
line=$(cat "$T/err")
parse_report "$line" || fail "attack: not a report line: $line"
[ "$R_PID" = "$pid" ] || fail "attack: report names PID $R_PID, the program is $pid"
[ "$R_POOL" = config ] && [ "$R_POLICY" = demo ] || fail "attack: pool/policy: $line"
[ "$R_TAIL" = "enforce: killed by SIGSEGV" ] || fail "attack: $line"
# The admin name: strdup("alice") through xstrdup(), at offset 0 (the first
# byte is overwritten); objects are rounded up to 16 bytes.
[ "$R_OFF" = 0 ] && [ "$R_SIZE" = 16 ] || fail "attack: offset/size: $line"
expect_site "$DEMO" "$R_SITE" xstrdup
case $R_SITE in parse_config+0x*) ;; *) fail "attack: site $R_SITE, want parse_config+0x..." ;; esac
fsym=$(fault_symbol "$DEMO" "$R_LOC" corrupt)
pass "attack (PID $pid): SIGSEGV, one report line: $R_ADDR in the 16-byte object from $R_SITE, ip in $fsym"

# The violation entry, logged by pmallocd, with every pmallocd(8) field.
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) || fail "no violation entry for PID $pid: $(cat "$T/daemon.log")"
count_is 1 "$e" || fail "want one violation entry for PID $pid, got: $e"
expect_field "$e" _PID "$DPID"
expect_field "$e" SYSLOG_IDENTIFIER pmallocd
expect_field "$e" OBJECT_PID "$pid"
expect_violation "$e" enforce demo "$DEMO"
expect_field "$e" PMALLOC_OBJECT_START "$R_OBJ"
expect_field "$e" PMALLOC_FAULT_SYMBOL "$fsym"
expect_field "$e" PMALLOC_EXE_SOURCE kernel
expect_field "$e" PMALLOC_GENERATION 1
expect_field "$e" PMALLOC_UID 0
expect_field "$e" PMALLOC_COMM pmalloc-demo
bt=$(printf '%s\n' "$e" | jfield PMALLOC_BACKTRACE)
main_re='\(main\+0x[0-9a-f]+\)'
case $bt in
"$DEMO+0x${R_LOC##*+0x} ($fsym) [$build_id] < $DEMO+0x"*" (main+0x"*") [$build_id] < "*"libc.so.6+0x"*" (__libc_start_call_main+0x"*) ;;
*) fail "PMALLOC_BACKTRACE: $bt" ;;
esac
[[ $bt =~ $main_re ]] || fail "PMALLOC_BACKTRACE without main: $bt"
expect_field "$e" MESSAGE "pmalloc: PID $pid ($DEMO) wrote to protected pool \\\"config\\\" of policy \\\"demo\\\" at $R_ADDR (offset 0 in 16-byte object allocated at $R_SITE), ip $R_IP in $fsym; process killed (enforce)"
pass "violation entry: PRIORITY=2, every pmallocd(8) field, equal to the stderr line, symbols resolved (FAULT_SYMBOL $fsym)"

e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$pid) || fail "no hand-out entry for PID $pid"
count_is 1 "$e" || fail "hand-out entries: $e"
expect_field "$e" _PID "$DPID"
expect_field "$e" PRIORITY 6
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_EXE "$DEMO"
expect_field "$e" PMALLOC_GENERATION 1
expect_field "$e" MESSAGE "pmalloc: policy \\\"demo\\\" (generation 1, enforce) handed to PID $pid ($DEMO)"
pass "policy handed entry for PID $pid (PRIORITY=6, generation 1)"

e=$(jsel 1 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$pid) || fail "no pool-protected entry for PID $pid"
count_is 1 "$e" || fail "pool-protected entries: $e"
expect_field "$e" _PID "$DPID"
expect_field "$e" PRIORITY 7
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_POOL config
expect_field "$e" PMALLOC_TRIGGER on-call:listen
# The config struct, the admin and listen names, the table: 4 objects, one page.
expect_field "$e" PMALLOC_OBJECTS 4
expect_field "$e" PMALLOC_NEW_BYTES 4096
expect_field "$e" PMALLOC_PROTECTED_BYTES 4096
expect_field "$e" PMALLOC_GENERATION 1
pass "pool protected entry for PID $pid (PRIORITY=7, on-call:listen, 4 objects, 4096 bytes)"

# pmallocctl reads it back.
"$B/pmallocctl" violations --since "$E2E_SINCE" --pid "$pid" >"$T/ctl" 2>"$T/ctl.err" || fail "pmallocctl violations: exit $?: $(cat "$T/ctl.err")"
[ "$(wc -l <"$T/ctl")" = 2 ] || fail "pmallocctl violations --pid $pid: want header + 1 row: $(cat "$T/ctl")"
head -n 1 "$T/ctl" | tr -s ' ' | grep -qx 'TIME PID BY EXE POLICY POOL MODE ADDRESS OFFSET/SIZE SITE FAULT SYMBOL' ||
	fail "table header: $(head -n 1 "$T/ctl")"
row=$(tail -n 1 "$T/ctl" | tr -s ' ' | cut -d ' ' -f 3-)
[ "$row" = "$pid pmallocd $DEMO demo config enforce $R_ADDR 0/16 $R_SITE $fsym" ] || fail "table row: $row"
"$B/pmallocctl" violations --since "$E2E_SINCE" --pid "$pid" --json >"$T/json" || fail "pmallocctl violations --json: exit $?"
[ "$(wc -l <"$T/json")" = 1 ] || fail "--json: want one line: $(cat "$T/json")"
j=$(cat "$T/json")
expect_field "$j" OBJECT_PID "$pid"
expect_field "$j" PRIORITY 2
expect_field "$j" PMALLOC_ADDRESS "$R_ADDR"
expect_field "$j" PMALLOC_OBJECT_SITE "$R_SITE"
expect_field "$j" PMALLOC_FAULT_SYMBOL "$fsym"
expect_field "$j" PMALLOC_FAULT_IP "$R_IP"
expect_field "$j" PMALLOC_EXE "$DEMO"
expect_field "$j" _PID "$DPID"
printf '%s\n' "$j" | jfield PMALLOC_BACKTRACE | grep -q "^$DEMO+0x" || fail "--json: no backtrace: $j"
pass "pmallocctl violations --pid $pid: the row and the JSON object match the entry"

stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
