# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_hello_comm.sh - a process's name (comm) comes in its HELLO, as the
# shim read /proc/self/comm at start, and pmallocd does not read it again:
#   - a HELLO naming a comm is matched by it (match.comm) and logged with
#     it (PMALLOC_COMM), whatever /proc/PID/comm says;
#   - a HELLO without one (no flag, or the short HELLO of older shims) is
#     matched and logged by /proc/PID/comm, as before;
#   - a comm that is not NUL-terminated, or the flag on a HELLO too short
#     to hold a comm, is dropped as malformed, and the daemon goes on;
#   - a real program under the shim is matched by its comm through pmallocd.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

TRUE=$(readlink -f /bin/true)
journald_ensure
write_conf "$CONF" <<EOF
version = 1;
daemon = { handshake_timeout_ms = 2000; };
policies = (
  { name = "claimed"; match = { exe = [ "*/wire_client" ]; comm = [ "claimed-name" ]; };
    pools = ( { name = "config"; sites = [ "wire_alloc_site" ]; protect = [ "manual" ]; } ); },
  { name = "demo"; match = { exe = [ "*/wire_client" ]; comm = [ "wire_client" ]; };
    pools = ( { name = "config"; sites = [ "wire_alloc_site" ]; protect = [ "manual" ]; } ); },
  { name = "true"; match = { exe = [ "$TRUE" ]; comm = [ "true" ]; };
    pools = ( { name = "locale"; sites = [ "libc.so.6:setlocale" ]; protect = [ "on-call:listen" ]; } ); }
);
EOF
start_daemon

# handed OUT POLICY COMM: the client got POLICY's image, and its hand-out
# entry names POLICY and COMM.
handed() {
	local out=$1 policy=$2 comm=$3 pid e
	grep -q '^POLICY generation=' "$out" || fail "$policy: no policy: $(cat "$out")"
	grep -q "^policy \"$policy\"" "$out" || fail "want policy $policy: $(cat "$out")"
	pid=$(sed -n 's/^pid=//p' "$out")
	e=$(jwait 1 MESSAGE_ID=$MID_HANDED OBJECT_PID="$pid") || fail "no hand-out entry for PID $pid"
	expect_field "$e" PMALLOC_POLICY "$policy"
	expect_field "$e" PMALLOC_COMM "$comm"
}

client --comm claimed-name >"$T/claimed" 2>&1 || fail "claimed: $(cat "$T/claimed")"
handed "$T/claimed" claimed claimed-name
pass "a HELLO naming its comm is matched and logged by it (/proc says wire_client)"

client >"$T/plain" 2>&1 || fail "plain: $(cat "$T/plain")"
handed "$T/plain" demo wire_client
client --hello-short >"$T/short" 2>&1 || fail "short: $(cat "$T/short")"
handed "$T/short" demo wire_client
pass "a HELLO without a comm, whole or short, is matched and logged by /proc/PID/comm"

malformed() { client --status | sed -n 's/^dropped: \([0-9]*\) malformed,.*/\1/p'; }
m0=$(malformed)
for bad in comm-unterminated comm-short; do
	out=$(client --$bad) || fail "$bad: $out"
	printf '%s\n' "$out" | grep -qx closed || fail "$bad: not closed: $out"
done
[ "$(malformed)" = $((m0 + 2)) ] || fail "malformed count $m0 -> $(malformed), want +2"
kill -0 "$DPID" 2>/dev/null || fail "pmallocd died"
pass "an unterminated comm, and the comm flag on a short HELLO, are dropped as malformed"

LD_PRELOAD=$B/libpmalloc_shim.so PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$CONF "$TRUE" &
tpid=$!
wait $tpid || fail "true under the shim failed"
e=$(jwait 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$tpid) || fail "no hand-out entry for true (PID $tpid)"
expect_field "$e" PMALLOC_POLICY true
expect_field "$e" PMALLOC_COMM true
pass "the shim tells its comm: $TRUE matched by comm \"true\" through pmallocd"
