#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_person.sh - budgets are per person, not per kernel uid: the
# processes of a user namespace mapped onto a user's subordinate range
# (pmallocd --subuid, /etc/subuid's format) share that user's quarter of
# the connections and its journal budget; a setuid-root program started by
# a user counts as that user (its real uid), not as root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
OWNER=61021 OTHER=61022 BASE=300000
BURST=5 INTERVAL=30                       # a person's budget: 40 entries per 30 s
std_conf "$CONF" $BURST $INTERVAL
printf '# test ranges\n%s:%s:65536\nroot:500000:65536\nbad line\n' $OWNER $BASE >"$T/subuid"
start_daemon --subuid "$T/subuid"
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$WIRE" --socket "$SOCK" "$@"; }
connected() { client --status | grep -q "^clients: $1 connected"; }

# in_userns CMD...: CMD as uid 5 of a new user namespace whose uids
# 0-65535 are $BASE.. (as newuidmap maps a subordinate range).
in_userns() {
	python3 - "$BASE" "$@" <<'PY'
import ctypes, os, sys
base, cmd = int(sys.argv[1]), sys.argv[2:]
r, w = os.pipe()
r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w); os.close(r2)
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:   # CLONE_NEWUSER
        os._exit(90)
    os.write(w2, b"x"); os.close(w2)
    os.read(r, 1)
    os.setresgid(5, 5, 5); os.setresuid(5, 5, 5)
    os.execvp(cmd[0], cmd)
os.close(r); os.close(w2)
os.read(r2, 1)
for f, v in (("uid_map", f"0 {base} 65536"), ("setgroups", "deny"), ("gid_map", f"0 {base} 65536")):
    with open(f"/proc/{pid}/{f}", "w") as fh:
        fh.write(v)
os.write(w, b"x")
_, st = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(st))
PY
}

out=$(in_userns sh -c 'cat /proc/self/uid_map; id -u')
printf '%s\n' "$out" | grep -qE "^ *0 +$BASE +65536$" || fail "no user namespace over $BASE: $out"

# 1. Connections: the owner holds 600, its namespace asks for 600 more:
# together they get one user's quarter of the 4096 slots, 1024.
as $OWNER --many 600 --hold 4000 >"$T/owner" &
op=$!
wait_until 200 grep -q '^answered=' "$T/owner" || fail "owner: $(cat "$T/owner")"
in_userns "$WIRE" --socket "$SOCK" --many 600 --hold 500 >"$T/ns"
grep -qx 'answered=600 refused=0' "$T/owner" || fail "owner: $(cat "$T/owner")"
grep -qx 'answered=424 refused=176' "$T/ns" || fail "namespace: $(cat "$T/ns"), want 424 answered (1024 less the owner's 600)"
# Another user is not affected.
as $OTHER --many 1100 --hold 200 >"$T/other"
grep -qx 'answered=1024 refused=76' "$T/other" || fail "other user: $(cat "$T/other")"
wait $op
wait_until 200 connected 1 || fail "connections not released"
pass "a user namespace over a subordinate range and its owner: 1024 connections together, like one user"

# 2. Journal budget: 20 reports from the namespace, then 20 from the owner
# (5 connections x 4 reports each, under the per-process limit of 5), then
# 3 more from the owner: 40 entries in all (one person's budget); the 3
# are counted in the owner's summary (written at the window's end, or as
# pmallocd stops).
nspid=$(in_userns "$WIRE" --socket "$SOCK" --many 5 --report 4 --policy "" --pool api | sed -n 's/^pid=//p')
jwait 20 MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$nspid" >/dev/null || fail "namespace: not 20 entries"
nsuid=$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$nspid" | jfield PMALLOC_UID | sort -u)
[ "$nsuid" = $((BASE + 5)) ] || fail "namespace entries name uid $nsuid, want $((BASE + 5))"
opid=$(as $OWNER --many 5 --report 4 --policy "" --pool api | sed -n 's/^pid=//p')
jwait 20 MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$opid" >/dev/null || fail "owner: not 20 entries"
lpid=$(as $OWNER --report 3 --policy "" --pool api | sed -n 's/^pid=//p')
# 4. A setuid-root program started by a user (real uid the user's,
# effective uid root) counts as that user: it gets no more than the
# user's quarter, not root's slots.
setpriv --ruid=$OTHER "$WIRE" --socket "$SOCK" --many 1100 --hold 200 >"$T/suid"
grep -qx 'answered=1024 refused=76' "$T/suid" || fail "setuid-like: $(cat "$T/suid"), want the user's 1024"
out=$(client) || fail "root not served: $out"
pass "a user's setuid-root processes: 1024 connections, the user's share; root still served"

JPID=$DPID
stop_daemon || fail "pmallocd exit status $?"
[ -z "$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$lpid")" ] || fail "the owner wrote past the shared budget"
s=$(jwait 1 MESSAGE_ID=$MID_DROPPED PMALLOC_DROPPED_KIND=budget PMALLOC_UID=$OWNER) || fail "no budget summary for $OWNER"
expect_field "$s" PMALLOC_DROPPED 3
[ -z "$(jentries MESSAGE_ID=$MID_DROPPED PMALLOC_DROPPED_KIND=budget PMALLOC_UID=$((BASE + 5)))" ] ||
	fail "the namespace's uid has a budget of its own"
pass "the namespace's 20 entries and the owner's 20 fill one budget of 40; the owner's 3 more are counted in its summary"
