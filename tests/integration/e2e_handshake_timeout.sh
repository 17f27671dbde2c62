#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_handshake_timeout.sh - daemon.handshake_timeout_ms is "how long a
# starting process waits for its policy before it falls back to reading
# this file itself" (pmalloc.conf(5), conf/pmalloc.conf).  With pmallocd hung
# (SIGSTOP) and the file readable by the program, set to 1000 ms: the
# program waits about that long for the daemon, then takes the file's
# policy.  (The default, 100 ms, is covered by e2e_daemon_hung.sh.)
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
DEMO=$(readlink -f "$DEMO")
sed 's/^  handshake_timeout_ms = 100;/  handshake_timeout_ms = 1000;/' "$SRC/conf/pmalloc.conf" | write_conf "$CONF"
grep -q '^  handshake_timeout_ms = 1000;' "$CONF" || fail "cannot set handshake_timeout_ms"
"$B/pmallocd" --check --config "$CONF" >"$T/check" 2>&1 || fail "config refused: $(cat "$T/check")"
start_daemon
cont() { [ -n "$DPID" ] && kill -CONT "$DPID" 2>/dev/null; true; }
at_exit_first cont
kill -STOP "$DPID"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
E2E_CONF=$CONF E2E_DEBUG=1 hardened "$T/out" "$T/err" "$DEMO" attack
rc=$?
elapsed=$(($(now_ms) - t0))
[ $rc = 139 ] || fail "exit $rc, want 139 (protected by the file's policy): $(cat "$T/err")"
grep -qx "pmalloc\[$HPID\]: no answer from pmallocd at $SOCK: Connection timed out; reading the policy file" "$T/err" ||
	fail "not a handshake timeout: $(grep -v site "$T/err")"
[ $elapsed -ge 900 ] && [ $elapsed -lt 3000 ] ||
	fail "the program gave up on the hung daemon after $elapsed ms; handshake_timeout_ms = 1000 in $CONF, which it read"
pass "handshake_timeout_ms = 1000: the program waited $elapsed ms for the hung daemon, then used the file"
kill -CONT "$DPID"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
