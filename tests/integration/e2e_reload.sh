#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_reload.sh - SIGHUP with a changed policy file, end to end: before it,
# e2e_hold matches no policy (the daemon says so; it runs unprotected and
# does not read a file); after a reload that adds a policy for it, a newly
# started e2e_hold gets that policy, generation 2 in its hand-out entry, is
# protected, and its violation entry carries generation 2.  A broken file
# sent afterwards is refused and generation 2 stays in force.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
DEMO=$(readlink -f "$DEMO")
HOLD=$(readlink -f "$HOLD")
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
# The policy file the programs could fall back to has a policy for
# e2e_hold: not reading it shows the daemon's answer was taken.
write_conf "$T/file.conf" <<EOF
version = 1;
policies = ( { name = "from-file"; match = { exe = [ "*/e2e_hold" ]; };
  pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); } );
EOF
export E2E_CONF=$T/file.conf
start_daemon

printf 'write\nexit\n' >"$T/cmds"
E2E_DEBUG=1 hardened "$T/out" "$T/err" "$HOLD" <"$T/cmds" || fail "generation 1: e2e_hold: exit $?: $(cat "$T/err")"
grep -qx 'wrote: name "mlice"' "$T/out" || fail "generation 1: $(cat "$T/out")"
grep -qx "pmalloc\[$HPID\]: pmallocd has no policy for this process" "$T/err" || fail "generation 1: $(cat "$T/err")"
[ -z "$(jnow MESSAGE_ID=$MID_HANDED OBJECT_PID=$HPID)" ] || fail "generation 1: a policy was handed to e2e_hold"
pass "generation 1: e2e_hold matches no policy, the daemon says so, it runs unprotected (the file is not read)"

sed 's|^);$|  ,\n  {\n    name = "held";\n    match = { exe = [ "*/e2e_hold" ]; };\n    pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } );\n  }\n);|' \
	"$SRC/conf/pmalloc.conf" | write_conf "$CONF"
"$B/pmallocd" --check --config "$CONF" >"$T/check" 2>&1 || fail "new config refused: $(cat "$T/check")"
kill -HUP "$DPID"
e=$(jsel 2 MESSAGE_ID=$MID_POLICY _PID=$DPID) || fail "no reload entry after SIGHUP: $(cat "$T/daemon.log")"
last=$(printf '%s\n' "$e" | tail -n 1)
expect_field "$last" PRIORITY 5
expect_field "$last" PMALLOC_GENERATION 2
expect_field "$last" MESSAGE "pmalloc: policy file $CONF reloaded: generation 2, 2 policies"
pass "SIGHUP: the file is reloaded as generation 2 (PRIORITY=5 entry)"

hardened "$T/out" "$T/err" "$HOLD" <"$T/cmds"
rc=$?
pid=$HPID
[ $rc = 139 ] || fail "generation 2: e2e_hold: exit $rc, want 139: $(cat "$T/out" "$T/err")"
[ "$(cat "$T/out")" = listening ] || fail "generation 2: the write went through: $(cat "$T/out")"
line=$(cat "$T/err")
parse_report "$line" && [ "$R_PID" = "$pid" ] && [ "$R_POLICY" = held ] && [ "$R_POOL" = config ] ||
	fail "generation 2: $line"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$pid) || fail "generation 2: no hand-out entry for PID $pid"
count_is 1 "$e" || fail "hand-out entries: $e"
expect_field "$e" _PID "$DPID"
expect_field "$e" PMALLOC_POLICY held
expect_field "$e" PMALLOC_GENERATION 2
expect_field "$e" PMALLOC_EXE "$HOLD"
expect_field "$e" MESSAGE "pmalloc: policy \\\"held\\\" (generation 2, enforce) handed to PID $pid ($HOLD)"
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) || fail "generation 2: no violation entry for PID $pid"
expect_field "$e" PMALLOC_POLICY held
expect_field "$e" PMALLOC_GENERATION 2
expect_field "$e" PMALLOC_ADDRESS "$R_ADDR"
pass "generation 2: a new e2e_hold gets policy \"held\" (hand-out and violation entries: generation 2) and is protected"

hardened "$T/out" "$T/err" "$DEMO" || fail "generation 2: pmalloc-demo: exit $?"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$HPID) || fail "generation 2: nothing handed to pmalloc-demo"
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_GENERATION 2
pass "generation 2: pmalloc-demo still gets \"demo\", now generation 2"

printf 'version = 1;\npolicies = ( { name = "held" match = { exe = [ "*" ]; }; } );\n' | write_conf "$CONF"
kill -HUP "$DPID"
e=$(jsel 3 MESSAGE_ID=$MID_POLICY _PID=$DPID) || fail "no entry for the broken reload"
last=$(printf '%s\n' "$e" | tail -n 1)
expect_field "$last" PRIORITY 3
expect_field "$last" PMALLOC_GENERATION 2
hardened "$T/out" "$T/err" "$HOLD" <"$T/cmds"
rc=$?
[ $rc = 139 ] || fail "after a broken reload: e2e_hold: exit $rc, want 139: $(cat "$T/out" "$T/err")"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$HPID) || fail "after a broken reload: nothing handed out"
expect_field "$e" PMALLOC_POLICY held
expect_field "$e" PMALLOC_GENERATION 2
pass "a broken file is refused (PRIORITY=3); generation 2 stays in force and protects"

stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
