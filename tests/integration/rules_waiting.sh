#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# rules_waiting.sh - a rule whose object glob fits no object loaded in the
# process (a library dlopen'ed later, or one only another process of the
# program loads, as a worker may) is not a rule that "matches nothing": no
# unmatched-rule entry in the journal at start-up, and pmallocctl status
# shows it as waiting for its object, outside the "N of M rules match
# nothing" count.  A mistyped rule beside it still is unmatched, said in
# the journal and counted; a rule for a library the program dlopen's is
# resolved once it loads.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
CTL=$B/pmallocctl
[ -x "$B/progs/ip_dlopen" ] || fail "ip_dlopen not built"
journald_ensure
unset PMALLOC_DEBUG
write_conf "$CONF" <<EOC
version = 1;
policies = (
  { name = "waiting"; match = { exe = [ "*/ip_dlopen" ]; };
    pools = ( { name = "plug"; protect = [ "on-call:listen" ];
      sites = [ "libip_plugin.so:plugin_init", "libnever-loaded.so*:never_fn", "parse_confg" ]; } ); } );
EOC
start_daemon
since=@$(date +%s.%6N)
PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$T/nonexistent LD_PRELOAD=$SHIM "$B/progs/ip_dlopen" "$B/progs/libip_plugin.so" \
	>"$T/dl.out" 2>"$T/dl.err" &
dpid=$!
wait "$dpid" || fail "ip_dlopen exited $?: $(cat "$T/dl.out" "$T/dl.err")"
grep -q '^plugin_init: struct 1' "$T/dl.out" || fail "plugin_init's objects not protected: $(cat "$T/dl.out")"

shown() { "$CTL" status "$dpid" --socket "$SOCK" >"$T/status" 2>&1 &&
	grep -qx '      resolved: site libip_plugin.so:plugin_init' "$T/status"; }
wait_until 200 shown || fail "plugin_init not resolved after the dlopen: $(cat "$T/status")"
grep -qx '      rules: 2 resolved, 1 unresolved, 1 waiting for their object' "$T/status" ||
	fail "the rules' count: $(grep 'rules:' "$T/status")"
grep -q "^      waiting: site libnever-loaded.so\*:never_fn (no object its glob fits is loaded in this process yet" "$T/status" ||
	fail "the waiting rule is not shown as waiting: $(cat "$T/status")"
grep -qx '      unresolved: site parse_confg (no function of that name in any loaded object)' "$T/status" ||
	fail "the mistyped rule is not shown unresolved: $(cat "$T/status")"
"$CTL" status --socket "$SOCK" >"$T/all" 2>&1
grep -q '^    warning: 1 of [0-9]* rules match nothing' "$T/all" || fail "the warning's count: $(grep warning "$T/all")"
pass "status: $(grep -c '' "$T/status") lines; the site and the trigger resolved, the typo unresolved, 1 rule waiting for its object"

journal_sync
journalctl --no-pager -o cat --since "$since" MESSAGE_ID=$MID_UNMATCHED OBJECT_PID=$dpid >"$T/unmatched" 2>/dev/null
grep -q 'parse_confg' "$T/unmatched" || fail "the typo is not in the journal: $(cat "$T/unmatched")"
grep -q 'never_fn\|plugin_init' "$T/unmatched" && fail "a rule waiting for its object was journaled as matching nothing: $(cat "$T/unmatched")"
stop_daemon || fail "pmallocd exit status $?"
pass "journal: the typo said as matching nothing; the rules waiting for their objects not"
exit 0
