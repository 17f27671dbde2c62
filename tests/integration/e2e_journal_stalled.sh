#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_journal_stalled.sh - a systemd-journald that is there but stops
# reading (stopped, or busy: once its socket's queue is full, a blocking
# send to it waits until it reads again).  Played by e2e_sink in a private
# mount namespace, so the machine's journald is untouched.  Nothing may hang:
#   - pmallocd, up before the journal stalls, keeps handing out policies
#     (the programs have no policy file: a hand-out missed is a program left
#     unprotected), answers pmallocctl, and stops on SIGTERM;
#   - without a daemon, the shim's own journal entries (pool protected at
#     listen(), the violation from the SIGSEGV handler) do not block the
#     program: it runs to the end, or dies by SIGSEGV with its report line;
#   - pmallocd started while the journal is stalled comes up.
# Every case runs, bounded by `timeout`; the failures are listed at the end.
E2E_PRIVATE_NS_WHY='to fake the journal in'
. "$(dirname "$0")/e2e_lib.sh"

private_journal_dir
DEMO=$(readlink -f "$DEMO")
E2E_TIMEOUT=3
now_ms() { echo $(($(date +%s%N) / 1000000)); }
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
sed -i 's|^);$|  , { name = "held"; match = { exe = [ "*/e2e_hold" ]; };\n      pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); }\n);|' "$CONF"
write_conf "$T/file.conf" <"$SRC/conf/pmalloc.conf"

failures=()
check() { "$@" && return 0; failures+=("$what"); return 1; }
bad() { printf 'FAIL: %s\n' "$*"; return 1; }

coproc SINK { exec "$B/progs/e2e_sink" "$JOURNAL_DIR/socket"; }
sink_stop() { [ -n "${SINK_PID:-}" ] && kill "$SINK_PID" 2>/dev/null; true; }
at_exit sink_stop
read -r -t 10 line <&"${SINK[0]}" && [ "$line" = ready ] || fail "e2e_sink did not start: $line"

# pmallocd is started here, not by start_daemon: that one's clean-up waits
# for a SIGTERM that a blocked daemon never acts on.
SPID=
daemon_up() {
	"$PMALLOCD" --config "$CONF" --socket "$SOCK" >>"$T/daemon.log" 2>&1 &
	SPID=$!
}
daemon_kill() { [ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null; SPID=; true; }
at_exit daemon_kill
wchan() { cat /proc/"$SPID"/wchan 2>/dev/null; }

daemon_up
wait_until 100 timeout 1 "$WIRE" --socket "$SOCK" --status || fail "pmallocd did not come up: $(cat "$T/daemon.log")"
E2E_DEBUG=1 hardened "$T/out" "$T/err" "$DEMO" || fail "before the stall: exit $?"
grep -q '^pmalloc\[[0-9]*\]: policy "demo" .* from pmallocd$' "$T/err" || fail "before the stall: no policy: $(cat "$T/err")"
pass "pmallocd up, the journal read: a program gets its policy"

# e2e_hold, served now, driven through a fifo on fd 7 later.
hold_served

echo stall >&"${SINK[1]}"
read -r -t 10 line <&"${SINK[0]}" || fail "e2e_sink did not stall"
case $line in "full "[0-9]*) ;; *) fail "e2e_sink: $line" ;; esac
pass "the journal stalls: $JOURNAL_DIR/socket has a full queue ($line datagrams) and is not read"

# 1. The running daemon.
served() {
	local i t0
	for i in 1 2 3; do
		t0=$(now_ms)
		E2E_DEBUG=1 hardened "$T/out" "$T/err" "$DEMO" || { bad "$what: run $i: exit $?"; return 1; }
		grep -q '^pmalloc\[[0-9]*\]: policy "demo" .* from pmallocd$' "$T/err" && continue
		bad "$what: run $i (took $(($(now_ms) - t0)) ms) got no policy, pmallocd is in $(wchan): $(grep -v site "$T/err")"
		return 1
	done
}
what="pmallocd, journal stalled: three programs in a row get their policy"
check served && pass "$what"

answers() {
	local t0 rc
	t0=$(now_ms)
	(timeout -s KILL 3 "$B/pmallocctl" status --socket "$SOCK" >"$T/status" 2>&1
	exit $?) 2>/dev/null
	rc=$?
	[ $rc = 0 ] || bad "$what: exit $rc after $(($(now_ms) - t0)) ms (137: no answer in 3 s), pmallocd is in $(wchan)"
}
what="pmallocd, journal stalled: pmallocctl status answers"
check answers && pass "$what"

stops() {
	local i
	kill -TERM "$SPID"
	for i in $(seq 40); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$SPID" 2>/dev/null && { bad "$what: still running 2 s after SIGTERM, in $(wchan)"; return 1; }
	wait "$SPID"
	SPID=
}
what="pmallocd, journal stalled: SIGTERM stops it"
check stops && pass "$what"
daemon_kill

# 2. No daemon: the shim logs by itself.  e2e_hold, served before, faults
# now: its report cannot reach the dead daemon, so the SIGSEGV handler
# writes the journal entry itself.
handler() {
	local t0 rc
	t0=$(now_ms)
	echo write >&7
	wait_until 100 sh -c "! kill -0 $hpid" || kill -KILL "$hpid"
	wait "$hold_bg"
	rc=$?
	hold_bg=
	elapsed=$(($(now_ms) - t0))
	[ $rc = 139 ] || { bad "$what: exit $rc after $elapsed ms (137: hung, killed by timeout); stderr: '$(cat "$T/hold.err")'"; return 1; }
	parse_report "$(cat "$T/hold.err")" && [ "$R_PID" = "$hpid" ] || bad "$what: stderr: $(cat "$T/hold.err")"
}
what="daemon gone, journal stalled: a served program's write kills it (the handler's journal entry must not block)"
check handler && pass "$what: $elapsed ms"

# The policy file, for programs started now.
E2E_CONF=$T/file.conf
normal_run() {
	local t0 rc
	t0=$(now_ms)
	hardened "$T/out" "$T/err" "$DEMO"
	rc=$?
	elapsed=$(($(now_ms) - t0))
	[ $rc = 0 ] || bad "$what: exit $rc after $elapsed ms (137: hung, killed by timeout); stdout: '$(cat "$T/out")'"
}
what="no daemon, journal stalled: a normal run ends (the shim's pool-protected entry at listen() must not block)"
check normal_run && pass "$what: $elapsed ms"

attack_run() {
	local t0 rc
	t0=$(now_ms)
	hardened "$T/out" "$T/err" "$DEMO" attack
	rc=$?
	elapsed=$(($(now_ms) - t0))
	[ $rc = 139 ] || { bad "$what: exit $rc after $elapsed ms (137: hung, killed by timeout); stdout: '$(cat "$T/out")'; stderr: '$(cat "$T/err")'"; return 1; }
	parse_report "$(cat "$T/err")" && [ "$R_PID" = "$HPID" ] || bad "$what: stderr: $(cat "$T/err")"
}
what="no daemon, journal stalled: the attack dies by SIGSEGV with its report line"
check attack_run && pass "$what: $elapsed ms"
unset E2E_CONF

# 3. A daemon started while the journal is stalled.
comes_up() {
	wait_until 60 timeout 1 "$WIRE" --socket "$SOCK" --status ||
		bad "$what: no answer 3 s after start, pmallocd is in $(wchan) (socket $(test -S "$SOCK" && echo bound || echo absent))"
}
rm -f "$SOCK"
daemon_up
what="pmallocd started while the journal is stalled: it comes up and answers"
check comes_up && pass "$what"
daemon_kill

if [ ${#failures[@]} -gt 0 ]; then
	printf 'FAILED: %s\n' "${failures[@]}"
	exit 1
fi
exit 0
