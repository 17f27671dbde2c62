#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_nojournal.sh - no systemd-journald: reports still reach stderr and
# nothing hangs, with the daemon (which cannot log) and without it (the
# shim cannot log either).  The journal is hidden in a private mount
# namespace (a tmpfs over /run/systemd/journal), so the machine's journald,
# if any, runs on untouched.  Every program is bounded by `timeout`.
E2E_PRIVATE_NS_WHY='to hide the journal in'
. "$(dirname "$0")/e2e_lib.sh"

private_journal_dir
DEMO=$(readlink -f "$DEMO")
E2E_TIMEOUT=5
now_ms() { echo $(($(date +%s%N) / 1000000)); }
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
write_conf "$T/file.conf" <"$SRC/conf/pmalloc.conf"

# timed WHAT WANT_RC ARGS...: the demo, bounded, within 2 s, with WANT_RC.
timed() {
	local what=$1 want=$2 t0 rc
	shift 2
	t0=$(now_ms)
	hardened "$T/out" "$T/err" "$DEMO" "$@"
	rc=$?
	elapsed=$(($(now_ms) - t0))
	[ $rc = "$want" ] || fail "$what: exit $rc, want $want (124/137: it hung): $(cat "$T/out" "$T/err")"
	[ $elapsed -lt 2000 ] || fail "$what: took $elapsed ms"
}
# attack WHAT POLICY_SOURCE: the attack is reported on stderr, exactly.
attack() {
	timed "$1" 139 attack
	[ "$(wc -l <"$T/err")" = 1 ] || fail "$1: want one stderr line: $(cat "$T/err")"
	line=$(cat "$T/err")
	parse_report "$line" || fail "$1: not a report line: $line"
	[ "$R_PID" = "$HPID" ] && [ "$R_POLICY" = demo ] && [ "$R_POOL" = config ] &&
		[ "$R_OFF" = 0 ] && [ "$R_SIZE" = 16 ] && [ "$R_TAIL" = "enforce: killed by SIGSEGV" ] ||
		fail "$1: $line"
	expect_site "$DEMO" "$R_SITE" xstrdup
	fault_symbol "$DEMO" "$R_LOC" corrupt >/dev/null
}

start_daemon
timed "daemon, no journald: normal run" 0
[ ! -s "$T/err" ] || fail "normal run: stderr: $(cat "$T/err")"
grep -qx 'pmalloc-demo: admin is now "alice"; exiting normally' "$T/out" || fail "normal run: $(cat "$T/out")"
pass "pmallocd, no journald: a normal run ends normally in $elapsed ms"

attack "daemon, no journald: attack"
pid=$HPID
pass "pmallocd, no journald: the attack is killed in $elapsed ms, the report line on stderr"

# The daemon cannot log, but it has not hung and it counted the report.
status=$(timeout 5 "$B/pmallocctl" status --socket "$SOCK") || fail "pmallocd does not answer: $status"
printf '%s\n' "$status" | grep -A4 "^  PID $pid  $DEMO" | grep -q '^    violations: 1 reported' ||
	fail "status lacks the violation of PID $pid: $status"
pass "pmallocd still answers and counts the violation of PID $pid"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"

# No daemon and no journald: the policy file, stderr only.
E2E_CONF=$T/file.conf
timed "no daemon, no journald: normal run" 0
[ ! -s "$T/err" ] || fail "no daemon: normal run: stderr: $(cat "$T/err")"
attack "no daemon, no journald: attack"
pass "no daemon, no journald: the policy file applies, the attack is killed in $elapsed ms, report on stderr"
exit 0
