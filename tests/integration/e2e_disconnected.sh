# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_disconnected.sh - a process that closes its connection to pmallocd
# while it runs (a daemon closing every descriptor) is "running,
# disconnected" in pmallocctl status (text and JSON), never "exited"; once
# it has really exited, it is "exited".
. "$(dirname "$0")/e2e_lib.sh"

PROG=$B/progs/learn_deliver
[ -x "$PROG" ] || fail "$PROG not built"
command -v jq >/dev/null || skip "jq not installed"
CONF=$T/pmalloc.conf
SOCK=$T/pmallocd.sock
write_conf "$CONF" <<EOC
version = 1;
policies = ( { name = "disc"; match = { exe = [ "*/learn_deliver" ]; }; mode = "enforce";
  pools = ( { name = "config"; sites = [ "make_config" ]; protect = [ "on-call:listen" ]; } ); } );
EOC
start_daemon

mkfifo "$T/in"
PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$NOFILE LD_PRELOAD=$SHIM "$PROG" <"$T/in" >"$T/out" 2>"$T/err" &
PID=$!
exec 3>"$T/in"
wait_until 100 grep -q '^ready' "$T/out" || fail "no ready: $(cat "$T/out" "$T/err")"
state() { "$B/pmallocctl" status --socket "$SOCK" --json | jq -r --argjson p "$PID" '[.served[], .exited[]] | map(select(.pid == $p)) | .[0].state'; }
state_is() { [ "$(state)" = "$1" ]; }
[ "$(state)" = alive ] || fail "not alive before: $(state)"
echo closefds >&3
wait_until 100 grep -q '^ok$' "$T/out" || fail "closefds: $(cat "$T/out" "$T/err")"
wait_until 100 state_is running-disconnected || fail "after closing its descriptors: $(state)"
"$B/pmallocctl" status --socket "$SOCK" >"$T/status" 2>&1 || fail "status: $(cat "$T/status")"
grep -q "PID $PID .*running, disconnected from pmallocd" "$T/status" || fail "status text: $(cat "$T/status")"
grep "PID $PID " "$T/status" | grep -q ' exited ' && fail "called exited while it runs: $(cat "$T/status")"
pass "a process that closed its connection is running, disconnected (text and JSON), not exited"
exec 3>&-
wait $PID
wait_until 100 state_is exited || fail "after its exit: $(state)"
pass "and exited once it has"
