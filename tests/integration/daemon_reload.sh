# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_reload.sh - SIGHUP re-reads the policy file (inside the sandbox):
# a good file becomes the next generation; a broken or unsafe one is
# refused, logged with FILE:LINE, and the old policy is still handed out.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

NOTIFY=$B/progs/wire_notify
[ -x "$NOTIFY" ] || fail "$NOTIFY not built"
journald_ensure
std_conf "$CONF"
"$NOTIFY" "$T/notify.sock" 60 >"$T/notify.log" &
wait_until 100 test -S "$T/notify.sock" || fail "notify socket did not appear"
NOTIFY_SOCKET=$T/notify.sock start_daemon

client | grep -qx "POLICY generation=1" || fail "generation 1 not handed out"

# reload N: SIGHUP, then wait for the N-th policy-file entry after start.
reload() {
	kill -HUP "$DPID"
	wait_until 100 sh -c "journalctl --sync; [ \$(journalctl -o json _PID=$DPID MESSAGE_ID=$MID_POLICY | wc -l) -ge $1 ]" ||
		fail "no policy-file entry after SIGHUP ($1)"
	last=$(jentries MESSAGE_ID=$MID_POLICY | tail -n 1)
}

std_conf "$CONF" 7 10
reload 2
expect_field "$last" PRIORITY 5
expect_field "$last" PMALLOC_GENERATION 2
expect_field "$last" MESSAGE "pmalloc: policy file $CONF reloaded: generation 2, 1 policy"
out=$(client)
printf '%s\n' "$out" | grep -qx "POLICY generation=2" || fail "generation 2 not handed out: $out"
printf '%s\n' "$out" | grep -q " report_burst=7 " || fail "new policy not handed out: $out"
grep -qE '^RELOADING=1\|MONOTONIC_USEC=[0-9]+\|' "$T/notify.log" || fail "no RELOADING=1 with MONOTONIC_USEC: $(cat "$T/notify.log")"
[ "$(grep -c READY=1 "$T/notify.log")" -ge 2 ] || fail "no READY=1 after the reload: $(cat "$T/notify.log")"
pass "good reload: priority 5 entry, generation 2 handed out, RELOADING=1 MONOTONIC_USEC then READY=1"

cat >"$CONF" <<'EOF2'
version = 1;
policies = (
  { name = "demo" match = { exe = [ "*" ]; }; }
);
EOF2
reload 3
expect_field "$last" PRIORITY 3
expect_field "$last" PMALLOC_GENERATION 2
msg=$(printf '%s\n' "$last" | jfield MESSAGE)
case $msg in "pmalloc: policy file refused, keeping generation 2: $CONF:3: "?*) ;; *) fail "refused MESSAGE: $msg" ;; esac
out=$(client)
printf '%s\n' "$out" | grep -qx "POLICY generation=2" || fail "after a bad reload: $out"
printf '%s\n' "$out" | grep -q " report_burst=7 " || fail "old policy not kept: $out"
pass "broken file refused (priority 3, $CONF:3:), old policy still handed out"

std_conf "$CONF" 9 10
chmod 0666 "$CONF"
reload 4
expect_field "$last" PRIORITY 3
expect_field "$last" PMALLOC_ERROR "$CONF: refused: writable by group or others (mode 0666)"
client | grep -qx "POLICY generation=2" || fail "a world-writable file was taken"
pass "world-writable file refused, naming the file"

chmod 0644 "$CONF"
reload 5
expect_field "$last" PRIORITY 5
expect_field "$last" PMALLOC_GENERATION 3
client | grep -q " report_burst=9 " || fail "generation 3 not handed out"
client --status | grep -q "generation 3 (1 policy), loaded .* ago; 2 reloads refused" || fail "status: $(client --status)"
pass "the next good file is generation 3 (refusals do not count)"

# Reports after a reload carry the generation the process was handed.
out=$(client --report 1)
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
expect_field "$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid)" PMALLOC_GENERATION 3
pass "violation entries carry the generation: 3"

stop_daemon || fail "exit status $?"
exit 0
