# SPDX-License-Identifier: GPL-2.0-or-later
# unmatched_rule.sh - a site rule that matches nothing (a typo) is said in
# the journal once per process, without PMALLOC_DEBUG, naming the policy,
# the pool and the rule; a rule that matches says nothing.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/learn_prog
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock PMALLOC_CONF=$T/pmalloc.conf
cat >"$PMALLOC_CONF" <<EOF
version = 1;
policies = ( { name = "typo"; match = { exe = [ "*/learn_prog" ]; };
  pools = ( { name = "cfg"; sites = [ "load_confg", "load_config" ]; protect = [ "on-call:listen" ]; } ); } );
EOF
LD_PRELOAD=$SHIM "$PROG" >"$T/out" 2>"$T/err" &
pid=$!
wait $pid || fail "learn_prog failed: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "stderr: $(cat "$T/err")"
got() {
	journal_sync
	# This process's entries only: another run of this test (another
	# tree's, at the same second) writes the same policy's.
	journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_UNMATCHED PMALLOC_POLICY=typo \
		OBJECT_PID=$pid >"$T/j"
	[ -s "$T/j" ]
}
wait_until 100 got || fail "no journal entry for the mistyped site"
[ "$(grep -c . "$T/j")" = 1 ] || fail "expected one entry: $(cat "$T/j")"
grep -q '"PMALLOC_RULE":"load_confg"' "$T/j" && grep -q '"PMALLOC_POOL":"cfg"' "$T/j" &&
	grep -q '"PMALLOC_RULE_KIND":"site"' "$T/j" || fail "entry: $(cat "$T/j")"
pass "a mistyped site (load_confg) is in the journal once, with policy, pool and rule; the right one is not"
