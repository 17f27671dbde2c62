#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_fork.sh - a forked child reports as itself: e2e_fork (setup() with
# malloc, listen() protects, fork(), the CHILD writes what it inherited at
# its start-up: it lives, as the workers forked before the trigger did;
# then it listens itself, its own trigger, and writes) gets its policy from
# the real pmallocd; the child dies by SIGSEGV with its own report line
# (role child), and
# the journal entry's OBJECT_PID is the child's pid, which the daemon took
# from the kernel (SCM_CREDENTIALS) on the connection the child inherited.
# The parent, untouched, is not blamed.
. "$(dirname "$0")/e2e_lib.sh"

FORK=$(readlink -f "$B/progs/e2e_fork")
journald_ensure
write_conf "$CONF" <<EOF
version = 1;
policies = (
  {
    name = "forked";
    match = { exe = [ "*/e2e_fork" ]; };
    mode = "enforce";
    pools = ( { name = "settings"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } );
  }
);
EOF
start_daemon

hardened "$T/out" "$T/err" "$FORK" || fail "e2e_fork: exit $?: $(cat "$T/out" "$T/err")"
parent=$(sed -n 's/^parent=\([0-9]*\) child=[0-9]*$/\1/p' "$T/out")
child=$(sed -n 's/^parent=[0-9]* child=\([0-9]*\)$/\1/p' "$T/out")
[ "$parent" = "$HPID" ] && [ -n "$child" ] && [ "$child" != "$parent" ] || fail "pids: $(cat "$T/out") (program $HPID)"
grep -qx 'child: started, protected 0' "$T/out" ||
	fail "the child's start-up write into what its parent protected killed it: $(cat "$T/out" "$T/err")"
grep -qx 'child: protected 1' "$T/out" || fail "the child's own trigger did not protect: $(cat "$T/out")"
grep -qx 'child: signal 11' "$T/out" || fail "the child was not killed by SIGSEGV: $(cat "$T/out" "$T/err")"
grep -qx 'parent: name "alice"' "$T/out" || fail "parent: $(cat "$T/out")"
[ "$(wc -l <"$T/err")" = 1 ] || fail "want one stderr line: $(cat "$T/err")"
line=$(cat "$T/err")
parse_report "$line" || fail "not a report line: $line"
[ "$R_PID" = "$child" ] || fail "the report line names PID $R_PID, the child is $child"
[ "$R_POOL" = settings ] && [ "$R_POLICY" = forked ] && [ "$R_TAIL" = "enforce: killed by SIGSEGV" ] || fail "$line"
# struct config { char name[32]; int port; } is 36 bytes, 48 once rounded.
[ "$R_OFF" = 0 ] && [ "$R_SIZE" = 48 ] || fail "offset/size: $line"
expect_site "$FORK" "$R_SITE" malloc@plt
case $R_SITE in setup+0x*) ;; *) fail "site $R_SITE, want setup+0x..." ;; esac
fsym=$(fault_symbol "$FORK" "$R_LOC" corrupt)
pass "the child (PID $child of $parent) died by SIGSEGV with its own report line; the parent went on"

e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$child) ||
	fail "no violation entry with OBJECT_PID=$child (the child): $(jnow MESSAGE_ID=$MID_VIOLATION _PID=$DPID)"
count_is 1 "$e" || fail "violation entries for the child: $e"
expect_field "$e" _PID "$DPID"
expect_field "$e" PRIORITY 2
expect_field "$e" OBJECT_PID "$child"
expect_field "$e" PMALLOC_VIA_PID "$parent"
expect_field "$e" PMALLOC_POLICY forked
expect_field "$e" PMALLOC_POOL settings
expect_field "$e" PMALLOC_MODE enforce
expect_field "$e" PMALLOC_ADDRESS "$R_ADDR"
expect_field "$e" PMALLOC_OFFSET 0
expect_field "$e" PMALLOC_OBJECT_SIZE 48
expect_field "$e" PMALLOC_OBJECT_SITE "$R_SITE"
expect_field "$e" PMALLOC_FAULT_IP "$R_IP"
expect_field "$e" PMALLOC_FAULT_SYMBOL "$fsym"
expect_field "$e" PMALLOC_EXE "$FORK"
expect_field "$e" PMALLOC_ROLE child
# Where the exe came from (the kernel, or the report when the child is dead
# before pmallocd reads /proc) is e2e_fork_exe.sh's business.
src=$(printf '%s\n' "$e" | jfield PMALLOC_EXE_SOURCE)
case $src in kernel) as= ;; report) as=", as reported" ;; *) fail "PMALLOC_EXE_SOURCE: $src" ;; esac
expect_field "$e" MESSAGE "pmalloc: PID $child ($FORK$as) wrote to protected pool \\\"settings\\\" of policy \\\"forked\\\" at $R_ADDR (offset 0 in 48-byte object allocated at $R_SITE), ip $R_IP in $fsym; process killed (enforce)"
[ -z "$(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$parent)" ] || fail "the parent $parent was blamed"
pass "journal: OBJECT_PID=$child (the child), PMALLOC_VIA_PID=$parent, nothing for the parent"

status=$("$B/pmallocctl" status --socket "$SOCK") || fail "pmallocctl status: $status"
# (Its exe: "(exe unknown)" when pmallocd read /proc too late, see e2e_fork_exe.sh.)
printf '%s\n' "$status" | grep -Eq "^  PID $child  ($FORK|\(exe unknown\))  uid 0  forked child of PID $parent, role child " ||
	fail "status lacks the child: $status"
pass "pmallocctl status lists PID $child as a forked child of PID $parent, role child"

stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"

# Sealed pools cannot be made writable again: the child keeps them
# read-only, and its start-up write kills it (pmalloc.conf(5), "Forks after
# the trigger").  Where the kernel has no mseal(2), "seal" protects as
# mprotect does, and the child starts as above.
write_conf "$CONF" <<EOF
version = 1;
policies = (
  {
    name = "forked";
    match = { exe = [ "*/e2e_fork" ]; };
    mode = "enforce";
    protection = "seal";
    pools = ( { name = "settings"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } );
  }
);
EOF
start_daemon
hardened "$T/out" "$T/err" "$FORK" || fail "e2e_fork (seal): exit $?: $(cat "$T/out" "$T/err")"
child=$(sed -n 's/^parent=[0-9]* child=\([0-9]*\)$/\1/p' "$T/out")
grep -qx 'child: signal 11' "$T/out" || fail "seal: the child was not killed: $(cat "$T/out" "$T/err")"
if grep -q '^child: started' "$T/out"; then
	pass "seal: no mseal(2) here: the child started as with mprotect, and its later write was killed"
else
	parse_report "$(cat "$T/err")" || fail "seal: not a report line: $(cat "$T/err")"
	[ "$R_PID" = "$child" ] && [ "$R_OFF" = 32 ] || fail "seal: not the child's start-up write: $(cat "$T/err")"
	e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$child) || fail "seal: no violation entry for $child"
	expect_field "$e" PMALLOC_ROLE child
	pass "seal: the child's start-up write into sealed inherited memory killed it (role child)"
fi
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
