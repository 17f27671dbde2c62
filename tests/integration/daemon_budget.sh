#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_budget.sh - two unprivileged users with hundreds of connections
# each, and root: every one of root's reports reaches the journal and root
# gets its policy however many connections the users hold; each user's
# journal entries stay within its budget (8 x report_burst per
# report_interval_s) with one summary saying how many were not written;
# every entry names the sender the kernel reported; the daemon's memory
# comes back after thousands of forked children reported and left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
U1=61001 U2=61002
BURST=5 INTERVAL=10                       # a user's budget: 40 entries per 10 s
# (the flood below takes about 2 s; the summaries come when the window ends)
std_conf "$CONF" $BURST $INTERVAL
start_daemon
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$WIRE" --socket "$SOCK" "$@"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$DPID/status"; }
connected() { client --status | grep -q "^clients: $1 connected"; }

# 1. Each user: 200 connections, 3 reports on each (under the per-process
# limit of 5, so only the per-user budget holds them back).  Root: 50
# processes with one report each, meanwhile.
bg=()
for u in $U1 $U2; do
	as $u --many 200 --report 3 --policy "" --pool api --hold 800 >"$T/flood.$u" &
	bg+=($!)
done
wait_until 200 grep -q '^reports=' "$T/flood.$U1" || fail "user $U1: $(cat "$T/flood.$U1")"
wait_until 200 grep -q '^reports=' "$T/flood.$U2" || fail "user $U2: $(cat "$T/flood.$U2")"
roots=()
for i in $(seq 50); do
	out=$(client --report 1) || fail "root client $i: $out"
	roots+=("$(printf '%s\n' "$out" | sed -n 's/^pid=//p')")
done
wait "${bg[@]}"
for u in $U1 $U2; do
	grep -qx 'answered=200 refused=0' "$T/flood.$u" && grep -qx 'reports=600' "$T/flood.$u" ||
		fail "user $u: $(cat "$T/flood.$u")"
done
wait_until 200 connected 1 || fail "connections not released: $(client --status | head -n 5)"
# 50 processes of one program at one site in a row look like a crash loop
# (repeat.h): the first 10 are written, the others counted in a summary
# (checked once pmallocd has stopped and written it).
logged=$(jwait 10 MESSAGE_ID=$MID_VIOLATION PMALLOC_UID=0 | jfield OBJECT_PID | sort)
[ "$(printf '%s\n' "$logged" | grep -c .)" = 10 ] || fail "root: $(printf '%s\n' "$logged" | grep -c .) entries, want 10"
for p in "${roots[@]:0:10}"; do
	printf '%s\n' "$logged" | grep -qx "$p" || fail "root's report from PID $p (one of the first 10) not in the journal"
done
pass "root: its first 10 reports logged while two users sent 600 each"

for u in $U1 $U2; do
	upid=$(sed -n 's/^pid=//p' "$T/flood.$u")
	s=$(jwait 1 MESSAGE_ID=$MID_DROPPED PMALLOC_DROPPED_KIND=budget PMALLOC_UID=$u) ||
		fail "user $u: no budget summary"
	all=$(jentries MESSAGE_ID=$MID_VIOLATION PMALLOC_UID=$u)
	n=$(printf '%s\n' "$all" | grep -c .)
	[ "$n" = 40 ] || fail "user $u: $n violation entries, want 40 (its budget)"
	[ "$(printf '%s\n' "$all" | jfield OBJECT_PID | sort -u)" = "$upid" ] || fail "user $u: entries name other PIDs"
	[ "$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$upid" | grep -c .)" = 40 ] || fail "user $u: PID $upid has entries of another uid"
	[ "$(printf '%s\n' "$s" | grep -c .)" = 1 ] || fail "user $u: want one summary: $s"
	expect_field "$s" PMALLOC_DROPPED 560
	expect_field "$s" MESSAGE "pmalloc: 560 more journal entries about processes of uid $u not logged (per-user budget: 40 per $INTERVAL s)"
done
pass "each user: 40 entries (its budget), all naming its own PID and uid; one summary for the 560 others"

# 2. Both users open as many connections as they can: neither gets more
# than a quarter of the 4096 slots, and root is still served.
bg=()
for u in $U1 $U2; do as $u --many 2100 --hold 1000 >"$T/many.$u" & bg+=($!); done
wait_until 200 grep -q '^answered=' "$T/many.$U1" || fail "user $U1: $(cat "$T/many.$U1")"
wait_until 200 grep -q '^answered=' "$T/many.$U2" || fail "user $U2: $(cat "$T/many.$U2")"
out=$(client) || fail "root refused while two users hold their connections: $out"
printf '%s\n' "$out" | grep -qx 'POLICY generation=1' || fail "root: $out"
for u in $U1 $U2; do
	grep -qx 'answered=1024 refused=1076' "$T/many.$u" || fail "user $u: $(cat "$T/many.$u")"
done
wait "${bg[@]}"
wait_until 200 connected 1 || fail "connections not released"
pass "two users with 2100 connections each: 1024 each, root still served"

# 3. Memory: one user's 200 connections with 16 forked children each
# reporting once (2400 processes known to pmallocd at once); once they are
# gone, the daemon's resident memory comes back.
rss0=$(rss)
as $U1 --many 150 --children 16 --policy "" --pool api --hold 500 >"$T/kids" || fail "children: $(cat "$T/kids")"
grep -qx 'reports=2400' "$T/kids" || fail "children: $(cat "$T/kids")"
wait_until 200 connected 1 || fail "connections not released"
back() { [ "$(rss)" -le $((rss0 + 4096)) ]; }
if ldd "$PMALLOCD" 2>/dev/null | grep -q libasan; then
	# AddressSanitizer keeps freed memory in quarantine: RSS says nothing.
	pass "2400 forked children reported and left (RSS not measured: an ASan build)"
else
	wait_until 100 back || fail "RSS $(rss) kB after 2400 children left, was $rss0 kB before"
	pass "2400 forked children reported and left: RSS back to $(rss) kB (was $rss0 kB)"
fi

status=$(client --status)
printf '%s\n' "$status" | grep -q '^over budget: 2152 connections refused' || fail "status: $(printf '%s\n' "$status" | grep -A1 '^per-user')"
JPID=$DPID
stop_daemon || fail "exit status $?"
n=$(jentries MESSAGE_ID=$MID_DROPPED PMALLOC_DROPPED_KIND=repeat PMALLOC_UID=0 PMALLOC_REPEAT_OF=violation |
	jfield PMALLOC_DROPPED | awk '{ s += $1 } END { print s + 0 }')
[ "$n" = 40 ] || fail "root: $n reports counted in repeat summaries, want the 40 not written"
pass "root: the other 40 reports counted in its summary"
exit 0
