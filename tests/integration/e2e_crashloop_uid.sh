#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_crashloop_uid.sh - crash-loop summaries are kept per person: another
# user's crash loop of a world-executable program (nobody, e2e_respawn
# in exec mode: every worker a new process with its own hand-out, killed
# by its own write) must not fold root's violation of the same program,
# at the same site, into a summary under her uid.  Root's run just after
# hers gets its own entries (PMALLOC_UID=0), and every summary names one
# uid.
. "$(dirname "$0")/e2e_lib.sh"

RESPAWN=$(readlink -f "$B/progs/e2e_respawn")
[ -x "$RESPAWN" ] || fail "$RESPAWN not built"
[ "$(id -u)" = 0 ] || skip "needs root (runs a program as nobody)"
command -v setpriv >/dev/null || skip "setpriv not installed"
setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$RESPAWN" ||
	skip "nobody cannot run $RESPAWN (a build tree it cannot reach)"
journald_ensure
write_conf "$CONF" <<EOF2
version = 1;
daemon = { report_burst = 20; report_interval_s = 5; };
policies = (
  {
    name = "loop";
    match = { exe = [ "*/e2e_respawn" ]; };
    mode = "enforce";
    pools = ( { name = "settings"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } );
  }
);
EOF2
start_daemon
chmod 0666 "$SOCK" 2>/dev/null || true

since="@$(date +%s.%6N)"
# Hers: well past the 10 processes whose entries are written in full (in
# runs of 1.5 s, one after the other, until then: a loaded machine forks
# fewer workers a second).
k=0
for round in 1 2 3 4 5 6 7 8; do
	setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$B/libpmalloc_shim.so" \
		PMALLOC_CONF="$NOFILE" PMALLOC_SOCKET="$SOCK" timeout 20 "$RESPAWN" 1.5 exec >"$T/out.nobody" 2>/dev/null ||
		fail "nobody's run: exit $?"
	r=$(sed -n 's/^workers=[0-9]* killed=\([0-9]*\)$/\1/p' "$T/out.nobody")
	[ -n "$r" ] || fail "nobody's run: $(cat "$T/out.nobody")"
	k=$((k + r))
	[ "$k" -gt 12 ] && break
done
[ "$k" -gt 12 ] || fail "nobody's runs killed too few workers: $k in $round rounds"
# Root's, in the same interval.
E2E_TIMEOUT=20 hardened "$T/out.root" "$T/err.root" "$RESPAWN" 0.3 exec || fail "root's run: exit $?"
kr=$(sed -n 's/^workers=[0-9]* killed=\([0-9]*\)$/\1/p' "$T/out.root")
[ -n "$kr" ] && [ "$kr" -ge 1 ] || fail "root's run killed no worker: $(cat "$T/out.root")"

journal_sync
v=$(journalctl --no-pager -o json --since "$since" _PID="$DPID" MESSAGE_ID=$MID_VIOLATION \
	PMALLOC_EXE="$RESPAWN" PMALLOC_UID=0 2>/dev/null | grep -c . || true)
[ "$v" -ge 1 ] || fail "root's violation hidden: no violation entry with PMALLOC_UID=0 ($kr killed) after nobody's $k"
n=$(journalctl --no-pager -o json --since "$since" _PID="$DPID" MESSAGE_ID=$MID_VIOLATION \
	PMALLOC_EXE="$RESPAWN" PMALLOC_UID=65534 2>/dev/null | grep -c . || true)
[ "$n" = 10 ] || fail "nobody's run: $n violation entries, want 10 (then summaries)"
pass "nobody's $k kills: 10 entries, the rest summarised under her uid; root's $kr kills: $v entries of its own"
