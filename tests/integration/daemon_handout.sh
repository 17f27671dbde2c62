# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_handout.sh - HELLO gets the matching policy (or none, or a
# refusal), logged as "policy handed to a process"; PMW_PROTECTED is logged
# and totalled; PMW_STATUS lists served, exited and never-checked-in
# processes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
std_conf "$CONF"
start_daemon

out=$(client) || fail "wire_client: $out"
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
printf '%s\n' "$out" | grep -qx "POLICY generation=1" || fail "no policy: $out"
printf '%s\n' "$out" | grep -qx 'policy "demo" mode=enforce protection=mprotect report_burst=20 report_interval_s=10' ||
	fail "policy image lacks the policy or the daemon settings: $out"
printf '%s\n' "$out" | grep -qx 'pool "config" max_bytes=0' || fail "policy image lacks the pool: $out"
printf '%s\n' "$out" | grep -qx '  site wire_alloc_site' || fail "policy image lacks the site: $out"
printf '%s\n' "$out" | grep -qx '  trigger manual call=0 after_ns=0' || fail "policy image lacks the trigger: $out"
pass "HELLO answered with PMW_POLICY, generation 1, the policy's image (valid, as compiled)"

e=$(jwait 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$cpid)
[ "$(printf '%s\n' "$e" | wc -l)" = 1 ] || fail "want one hand-out entry for PID $cpid, got: $e"
expect_field "$e" PRIORITY 6
expect_field "$e" OBJECT_PID "$cpid"
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_EXE "$WIRE"
expect_field "$e" PMALLOC_GENERATION 1
expect_field "$e" MESSAGE "pmalloc: policy \\\"demo\\\" (generation 1, enforce) handed to PID $cpid ($WIRE)"
pass "journal: policy handed to PID $cpid, with OBJECT_PID, PMALLOC_POLICY, PMALLOC_EXE, PMALLOC_GENERATION"

# comm as the kernel has it, spaces and parentheses included (read with the
# start time from /proc/PID/stat): a symlink's name is the process's comm.
ln -s "$WIRE" "$T/w) (x y"
out=$("$T/w) (x y" --socket "$SOCK") || fail "as 'w) (x y': $out"
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
e=$(jwait 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$cpid)
expect_field "$e" PMALLOC_COMM "w) (x y"
pass "journal: PMALLOC_COMM of a comm with spaces and parentheses"

# The policy matches uid 0 only: another user gets none, through the 0666 socket.
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$WIRE" --socket "$SOCK") || fail "as nobody: $out"
printf '%s\n' "$out" | grep -qx "NO_POLICY generation=1 reason=no policy matches $WIRE" || fail "as nobody: $out"
pass "uid 65534 connects (socket 0666) and gets PMW_NO_POLICY: the uid came from the kernel"

out=$(client --version 7)
printf '%s\n' "$out" | grep -qx "REFUSED reason=protocol version 7 not supported: pmallocd speaks version 2" ||
	fail "wrong version: $out"
pass "HELLO of protocol version 7 refused with a reason"

# PMW_PROTECTED: a debug entry, and the totals in status.
client --protect config --hold 3000 >"$T/held.out" &
hpid=$!
wait_until 100 grep -q '^POLICY' "$T/held.out" || fail "held client got no policy"
cpid=$(sed -n 's/^pid=//p' "$T/held.out")
e=$(jwait 1 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$cpid) || fail "no pool-protected entry"
expect_field "$e" PRIORITY 7
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_POOL config
expect_field "$e" PMALLOC_TRIGGER on-call:listen
expect_field "$e" PMALLOC_PROTECTED_BYTES 8192
expect_field "$e" PMALLOC_NEW_BYTES 4096
pass "journal: pool protected (priority 7, PMALLOC_POOL, PMALLOC_TRIGGER, PMALLOC_PROTECTED_BYTES)"

status=$(client --status) || fail "status: $status"
printf '%s\n' "$status" | grep -q "^policy file: $CONF, generation 1 (1 policy)" || fail "status header: $status"
printf '%s\n' "$status" | grep -q "^  PID $cpid  $WIRE  uid 0  policy \"demo\" (enforce, generation 1)  alive" ||
	fail "status lacks the served process $cpid: $status"
printf '%s\n' "$status" | grep -q '^    pool "config": 8192 bytes protected in 3 objects, 1 protects (last: on-call:listen)' ||
	fail "status lacks the pool totals: $status"
pass "status: served process alive, with its pool's protected bytes"
wait "$hpid"

status=$(client --status)
printf '%s\n' "$status" | grep -A3 '^exited processes' | grep -q "^  PID $cpid  $WIRE .* exited" ||
	fail "status lacks the exited process $cpid: $status"
pass "status: exited process kept in the history"

# Never checked in: a process whose exe matches runs without talking to us
# (a copy of sleep named wire_client; the status scan is reused for 1 s).
mkdir "$T/bin"
cp /bin/sleep "$T/bin/wire_client"
"$T/bin/wire_client" 30 &
upid=$!
sleep 1.2
status=$(client --status)
kill "$upid" 2>/dev/null
wait "$upid" 2>/dev/null
printf '%s\n' "$status" | grep -A5 '^running but never checked in' |
	grep -q "^  PID $upid  $T/bin/wire_client  uid 0  comm wire_client  policy \"demo\"" ||
	fail "status lacks the never-checked-in process $upid: $status"
pass "status: a running process the policy names that never checked in"

stop_daemon || fail "exit status $?"
exit 0
