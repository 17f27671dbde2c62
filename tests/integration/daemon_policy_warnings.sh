# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_policy_warnings.sh - a valid policy file that cannot mean what it
# says is served, and each such thing is said once per load in the journal
# (MESSAGE_ID of the policy file, priority 4, CONFIG_FILE, CONFIG_LINE,
# PMALLOC_WARNING), not only by pmallocctl check: an exe glob no real path
# fits, or one that names a symbolic link.  A reload says them again (the
# check runs inside the sandbox then); a clean file says nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
ln -s /bin/true "$T/link-to-true"
warn_conf() {
	write_conf "$CONF" <<EOC
version = 1;
policies = (
  { name = "bare"; match = { exe = [ "nginx" ]; };
    pools = ( { name = "a"; sites = [ "f" ]; protect = [ "manual" ]; } ); },
  { name = "link"; match = { exe = [ "$T/link-to-true" ]; };
    pools = ( { name = "a"; sites = [ "f" ]; protect = [ "manual" ]; } ); }
);
EOC
}
warnings() { jentries MESSAGE_ID=$MID_POLICY PRIORITY=4 | grep -c '"PMALLOC_WARNING"'; }

warn_conf
start_daemon
wait_until 100 sh -c "[ \$(journalctl --no-pager -o json --since '$TEST_SINCE' _PID=$DPID MESSAGE_ID=$MID_POLICY PRIORITY=4 | grep -c .) -ge 2 ]" ||
	fail "no warning entries: $(jentries MESSAGE_ID=$MID_POLICY)"
e=$(jentries MESSAGE_ID=$MID_POLICY PRIORITY=4)
printf '%s\n' "$e" | grep -q "\"MESSAGE\":\"pmalloc: policy file $CONF:3: warning: policy \\\\\"bare\\\\\": exe \\\\\"nginx\\\\\" can never match" ||
	fail "the bare exe glob is not said: $e"
printf '%s\n' "$e" | grep -q '"CONFIG_LINE":"5"' || fail "the symbolic link is not said: $e"
[ "$(warnings)" = 2 ] || fail "want 2 warnings, got $(warnings): $e"
pass "start: one journal warning each for a bare exe glob and a symbolic link"

kill -HUP "$DPID"
wait_until 100 sh -c "[ \$(journalctl --no-pager -o json --since '$TEST_SINCE' _PID=$DPID MESSAGE_ID=$MID_POLICY PRIORITY=4 | grep -c .) -ge 4 ]" ||
	fail "reload: no warnings again: $(cat "$T/daemon.log")"
kill -0 "$DPID" || fail "pmallocd died on reload (sandbox?): $(cat "$T/daemon.log")"
pass "reload (inside the sandbox): the warnings again"

std_conf "$CONF"
kill -HUP "$DPID"
wait_until 100 sh -c "'$WIRE' --socket '$SOCK' | grep -qx 'POLICY generation=3'" || fail "clean reload"
journal_sync
[ "$(warnings)" = 4 ] || fail "a clean file drew warnings: $(jentries MESSAGE_ID=$MID_POLICY PRIORITY=4)"
stop_daemon || fail "exit status $?"
pass "a clean file: no warning"
