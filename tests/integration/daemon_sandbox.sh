# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_sandbox.sh - after init pmallocd runs under a seccomp allow-list:
# --test-sandbox starts it up, enters the sandbox and makes a forbidden
# call, and the kernel must kill it with SIGSYS.  (Every other daemon test
# runs the real daemon inside the same sandbox.)  Every thread of the
# running daemon is under the filter.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
std_conf "$CONF"
"$PMALLOCD" --help | grep -q -- "--test-sandbox" || fail "--test-sandbox not in --help"

"$PMALLOCD" --config "$CONF" --socket "$SOCK" --test-sandbox >"$T/sb.log" 2>&1 &
JPID=$!
wait "$JPID"
rc=$?
[ $rc = $((128 + 31)) ] || fail "--test-sandbox: exit status $rc, want $((128 + 31)) (SIGSYS): $(cat "$T/sb.log")"
pass "--test-sandbox: killed by SIGSYS"

# It got that far only after a full start: the policy was loaded first.
e=$(jentries MESSAGE_ID=$MID_POLICY)
expect_field "$e" PRIORITY 5
pass "the start-up before the sandbox completed (policy loaded, journal written)"

# A running daemon is confined: no_new_privs set, a seccomp filter on.
start_daemon
grep -q "^NoNewPrivs:[[:space:]]*1" /proc/$DPID/status || fail "no_new_privs not set"
grep -q "^Seccomp:[[:space:]]*2" /proc/$DPID/status || fail "no seccomp filter"
client | grep -qx "POLICY generation=1" || fail "sandboxed daemon does not answer"
# Every thread: the loop and the worker that identifies clients (started
# before the filter, which must reach it too).
tasks=0
for st in /proc/$DPID/task/*/status; do
	tasks=$((tasks + 1))
	grep -q "^Seccomp:[[:space:]]*2" "$st" || fail "thread $(basename "$(dirname "$st")") ($(sed -n 's/^Name:[[:space:]]*//p' "$st")) has no seccomp filter"
	grep -q "^NoNewPrivs:[[:space:]]*1" "$st" || fail "thread $(basename "$(dirname "$st")"): no_new_privs not set"
done
[ $tasks -ge 2 ] || fail "pmallocd runs $tasks thread(s), want the loop and the identification worker"
pass "all $tasks threads of pmallocd: NoNewPrivs 1, Seccomp 2"
kill -HUP "$DPID"
wait_until 100 sh -c "'$WIRE' --socket '$SOCK' | grep -qx 'POLICY generation=2'" || fail "reload inside the sandbox failed"
stop_daemon || fail "exit status $?"
pass "the running daemon: NoNewPrivs 1, Seccomp 2 (filter); serves, reloads, exits 0"
exit 0
