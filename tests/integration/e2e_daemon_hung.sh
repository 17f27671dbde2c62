#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_daemon_hung.sh - a hung daemon never hangs a program.  With pmallocd
# stopped (SIGSTOP: connections wait in its backlog), and with a socket that
# accepts and never answers (e2e_mute), a preloaded program still starts
# within the handshake timeout (100 ms; asserted < 1 s wall), falls back to
# the policy file and is protected.  Ten starting at once do not queue
# behind each other.  A program served before the daemon hung reports a
# violation without blocking; the daemon logs it once it runs again, and it
# survives the HELLOs of clients that gave up meanwhile.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
DEMO=$(readlink -f "$DEMO")
HOLD=$(readlink -f "$HOLD")
MUTE=$B/progs/e2e_mute
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
sed -i 's|^);$|  , { name = "held"; match = { exe = [ "*/e2e_hold" ]; };\n      pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); }\n);|' "$CONF"
write_conf "$T/file.conf" <"$SRC/conf/pmalloc.conf"
export E2E_CONF=$T/file.conf

now_ms() { echo $(($(date +%s%N) / 1000000)); }
stopped=
cont_daemon() { [ -n "$stopped" ] && [ -n "$DPID" ] && kill -CONT "$DPID" 2>/dev/null; true; }
at_exit_first cont_daemon

# hung_start WHAT: the demo under a hung daemon, timed; falls back to the file.
hung_start() {
	local what=$1 t0 t1 rc
	t0=$(now_ms)
	E2E_DEBUG=1 hardened "$T/out" "$T/err" "$DEMO" attack
	rc=$?
	t1=$(now_ms)
	elapsed=$((t1 - t0))
	[ $rc = 139 ] || fail "$what: exit $rc, want 139: $(cat "$T/out" "$T/err")"
	[ $elapsed -lt 1000 ] || fail "$what: the program took $elapsed ms (want < 1 s)"
	grep -qx "pmalloc\[$HPID\]: no answer from pmallocd at $SOCK: Connection timed out; reading the policy file" "$T/err" ||
		fail "$what: not a handshake timeout: $(cat "$T/err")"
	parse_report "$(grep 'write to protected pool' "$T/err")" || fail "$what: no report line: $(cat "$T/err")"
	[ "$R_PID" = "$HPID" ] && [ "$R_POLICY" = demo ] && [ "$R_TAIL" = "enforce: killed by SIGSEGV" ] ||
		fail "$what: $(cat "$T/err")"
	e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$HPID) || fail "$what: no violation entry for PID $HPID"
	expect_field "$e" SYSLOG_IDENTIFIER pmalloc
	expect_field "$e" PMALLOC_ADDRESS "$R_ADDR"
	expect_field "$e" PMALLOC_GENERATION 0
}

# tens WHAT: ten preloaded /bin/true at once, all done within 1 s.
tens() {
	local what=$1 t0 t1 i pids=()
	t0=$(now_ms)
	for i in 1 2 3 4 5 6 7 8 9 10; do
		timeout -s KILL 10 env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$E2E_CONF" /bin/true &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "$what: a /bin/true failed ($?)"; done
	t1=$(now_ms)
	[ $((t1 - t0)) -lt 1000 ] || fail "$what: ten programs at once took $((t1 - t0)) ms (want < 1 s)"
	tens_ms=$((t1 - t0))
}

start_daemon

# A program served before the daemon hangs.
hold_served
jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$hpid >/dev/null || fail "e2e_hold got no policy"

kill -STOP "$DPID"
stopped=1
hung_start "pmallocd stopped"
pass "pmallocd stopped (SIGSTOP): the program started in $elapsed ms, fell back to the file, was protected, logged itself"
tens "pmallocd stopped"
pass "pmallocd stopped: ten preloaded /bin/true at once finished in $tens_ms ms"

echo write >&7
wait "$hold_bg"
rc=$?
hold_bg=
[ $rc = 139 ] || fail "e2e_hold under a stopped daemon: exit $rc, want 139: $(cat "$T/hold.err")"
line=$(cat "$T/hold.err")
parse_report "$line" && [ "$R_PID" = "$hpid" ] && [ "$R_POLICY" = held ] || fail "e2e_hold: $line"
pass "e2e_hold (served before the hang) died by SIGSEGV with its report line; the report did not block"

kill -CONT "$DPID"
stopped=
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$hpid) || fail "the queued report of PID $hpid was never logged"
count_is 1 "$e" || fail "violation entries for PID $hpid: $e"
expect_field "$e" _PID "$DPID"
expect_field "$e" PMALLOC_POLICY held
expect_field "$e" PMALLOC_ADDRESS "$R_ADDR"
expect_field "$e" PMALLOC_FAULT_IP "$R_IP"
kill -0 "$DPID" || fail "pmallocd died after SIGCONT: $(cat "$T/daemon.log")"
hardened "$T/out" "$T/err" "$DEMO" || fail "after SIGCONT: exit $?"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$HPID) || fail "after SIGCONT: no policy handed to PID $HPID"
expect_field "$e" _PID "$DPID"
pass "SIGCONT: pmallocd logs the report queued while it was stopped (OBJECT_PID=$hpid, dead by then) and serves again"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"

# A socket that accepts and never answers.
coproc MUTEP { exec "$MUTE" "$SOCK"; }
mute_stop() { [ -n "${MUTEP_PID:-}" ] && kill "$MUTEP_PID" 2>/dev/null; true; }
at_exit mute_stop
read -r -t 10 line <&"${MUTEP[0]}" && [ "$line" = listening ] || fail "e2e_mute did not start"
hung_start "a socket that never answers"
read -r -t 10 line <&"${MUTEP[0]}" && [ "$line" = "accepted 1" ] || fail "e2e_mute did not accept the program: $line"
pass "a socket that accepts and never answers: the program started in $elapsed ms, fell back to the file, was protected"
tens "a socket that never answers"
pass "a socket that never answers: ten preloaded /bin/true at once finished in $tens_ms ms"
exit 0
