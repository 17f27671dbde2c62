#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pmallocctl protect PID POOL: pmallocd passes PMW_PROTECT on to a served
# process whose policy has the pool with a "manual" trigger, answers "ok:"
# (exit 0) or "pmallocctl: REASON" (exit 1), and refuses a requester who is
# neither root nor the process's user; no daemon is exit 3.  The process
# here is wire_client (it prints the PMW_PROTECT it receives); the shim's
# side is e2e_manual.sh's.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"

[ -x "$ctl" ] || skip "pmallocctl not built"

# No daemon yet.
run protect 1 config --socket "$SOCK"
[ "$(rc)" = 3 ] || fail "no daemon: exit $(rc), want 3: $(answer)"
grep -qx "pmallocctl: pmallocd is not running ($SOCK): No such file or directory" "$T/err" ||
	fail "no daemon: $(answer)"
PMALLOC_SOCKET=$T/env.sock run protect 1 config
[ "$(rc)" = 3 ] && grep -qF "($T/env.sock)" "$T/err" || fail "PMALLOC_SOCKET not used: $(answer)"
pass "no daemon: exit 3, the socket named (--socket, PMALLOC_SOCKET)"

# Usage errors: exit 2, nothing sent.
for args in "" "1" "1 config extra" "0 config" "-5 config" "12x config" "1 a/b" \
	"1 $(printf 'p%.0s' {1..64})"; do
	# shellcheck disable=SC2086
	run protect $args --socket "$SOCK"
	[ "$(rc)" = 2 ] || fail "protect $args: exit $(rc), want 2: $(answer)"
done
pass "usage errors (missing or extra arguments, bad PID, bad pool name): exit 2"

journald_ensure
write_conf "$CONF" <<EOF
version = 1;
daemon = { handshake_timeout_ms = 100; };
policies = (
  {
    name = "demo";
    match = { exe = [ "*/wire_client" ]; uid = [ 0 ]; };
    mode = "enforce";
    pools = (
      { name = "config"; sites = [ "wire_alloc_site" ]; protect = [ "on-call:listen", "manual" ]; },
      { name = "cache"; sites = [ "wire_cache_site" ]; protect = [ "on-call:listen" ]; }
    );
  }
);
EOF
start_daemon

# A served process that stays connected and prints each PMW_PROTECT.
client --wait-protect 15000 >"$T/held.out" &
hpid=$!
wait_until 100 grep -q '^POLICY generation=1' "$T/held.out" || fail "held client got no policy: $(cat "$T/held.out")"
cpid=$(sed -n 's/^pid=//p' "$T/held.out")

run protect "$cpid" config --socket "$SOCK"
[ "$(rc)" = 0 ] || fail "protect: exit $(rc), want 0: $(answer)"
want="ok: protect request for pool \"config\" sent to PID $cpid ($WIRE); the process applies it on receipt"
[ "$(cat "$T/out")" = "$want" ] || fail "protect: stdout: $(answer)"
[ ! -s "$T/err" ] || fail "protect: stderr: $(cat "$T/err")"
wait_until 100 grep -qx 'PROTECT generation=1 pool=config' "$T/held.out" ||
	fail "the process got no PMW_PROTECT: $(cat "$T/held.out")"
# PMW_PROTECTs received so far is N (counted anew at each try of wait_until).
received() { [ "$(grep -c '^PROTECT generation=1 pool=config$' "$T/held.out")" = "$1" ]; }
PMALLOC_SOCKET=$SOCK run protect "$cpid" config
[ "$(rc)" = 0 ] || fail "protect through PMALLOC_SOCKET: exit $(rc): $(answer)"
wait_until 100 received 2 ||
	fail "second PMW_PROTECT missing: $(cat "$T/held.out")"
pass "root: ok: (exit 0), and the process receives PMW_PROTECT for \"config\", generation 1"

# expect_error ARGS... -- MESSAGE: exit 1, the answer on stderr.
expect_error() {
	local args=() msg
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	msg=$2
	run protect "${args[@]}" --socket "$SOCK"
	[ "$(rc)" = 1 ] || fail "protect ${args[*]}: exit $(rc), want 1: $(answer)"
	[ ! -s "$T/out" ] || fail "protect ${args[*]}: stdout: $(cat "$T/out")"
	[ "$(cat "$T/err")" = "$msg" ] || fail "protect ${args[*]}: want '$msg', got: $(cat "$T/err")"
}

# An unknown pid: a process that does not run (pid_max is far below this).
expect_error 2000000000 config -- \
	"pmallocctl: PID 2000000000 is not connected to pmallocd (not running, not preloaded with pmalloc, or its connection closed)"
# A running process that never connected.
expect_error $$ config -- \
	"pmallocctl: PID $$ is not connected to pmallocd (not running, not preloaded with pmalloc, or its connection closed)"
expect_error "$cpid" nosuch -- \
	"pmallocctl: pool \"nosuch\" is not in the policy \"demo\" of PID $cpid ($WIRE) (generation 1)"
expect_error "$cpid" cache -- \
	"pmallocctl: pool \"cache\" of policy \"demo\" has no manual trigger (protect = [ \"manual\" ] in pmalloc.conf(5))"
pass "unknown PID, pool not in the policy, pool without a manual trigger: exit 1 with the reason"

# Not root and not the process's user: refused, nothing sent.
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$ctl" protect "$cpid" config --socket "$SOCK" 2>&1)
r=$?
[ $r = 1 ] || fail "as nobody: exit $r, want 1: $out"
[ "$out" = "pmallocctl: permission denied: PID $cpid is not yours (only root or its own user may protect its pools)" ] ||
	fail "as nobody: $out"

# A process of uid 65534 (the policy matches uid 0 only: no policy for it).
setpriv --reuid=65534 --regid=65534 --clear-groups "$WIRE" --socket "$SOCK" --wait-protect 15000 >"$T/nobody.out" &
npid_bg=$!
wait_until 100 grep -q '^NO_POLICY' "$T/nobody.out" || fail "nobody's client: $(cat "$T/nobody.out")"
npid=$(sed -n 's/^pid=//p' "$T/nobody.out")
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$ctl" protect "$npid" config --socket "$SOCK" 2>&1)
r=$?
[ $r = 1 ] && [ "$out" = "pmallocctl: PID $npid ($WIRE) was not served a policy" ] ||
	fail "nobody on its own process: exit $r: $out"
expect_error "$npid" config -- "pmallocctl: PID $npid ($WIRE) was not served a policy"
pass "uid 65534: permission denied on root's process; its own (and root on it): not served a policy"

# The process keeps the policy it got: a reload that drops the manual
# trigger changes nothing for it.
sed -i 's/protect = \[ "on-call:listen", "manual" \]/protect = [ "on-call:listen" ]/' "$CONF"
kill -HUP "$DPID"
wait_until 100 sh -c "'$WIRE' --socket '$SOCK' --status | grep -q 'generation 2'" || fail "no reload"
run protect "$cpid" config --socket "$SOCK"
[ "$(rc)" = 0 ] || fail "after reload: exit $(rc): $(answer)"
wait_until 100 received 3 ||
	fail "third PMW_PROTECT missing: $(cat "$T/held.out")"
out=$(client --wait-protect 100) || true
printf '%s\n' "$out" | grep -qx 'POLICY generation=2' || fail "no generation 2: $out"
pass "after a reload, a process is held to the policy it was handed (generation 1)"

# Counted in status; logged.
status=$(client --status) || fail "status: $status"
printf '%s\n' "$status" | grep -qx "protect requests: 10 (pmallocctl protect), 3 sent to the process" ||
	fail "status counters: $(printf '%s\n' "$status" | grep -i protect)"
grep -q "PID [0-9]* (uid 0) asked to protect pool \"config\" of PID $cpid: sent" "$T/daemon.log" ||
	fail "no log line: $(cat "$T/daemon.log")"
grep -q "PID [0-9]* (uid 65534) asked to protect pool \"config\" of PID $cpid: permission denied" "$T/daemon.log" ||
	fail "no log line for the refusal: $(cat "$T/daemon.log")"
pass "status counts the requests and the PMW_PROTECTs sent; each request logged"

kill "$hpid" "$npid_bg" 2>/dev/null
wait "$hpid" "$npid_bg" 2>/dev/null
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
grep -q "SIGSYS\|seccomp" "$T/daemon.log" && fail "sandbox: $(cat "$T/daemon.log")"
pass "pmallocd stops cleanly (the sandbox allowed all of it)"
