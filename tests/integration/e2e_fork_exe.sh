#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_fork_exe.sh - a forked child's violation entry names its executable
# as the kernel knows it (PMALLOC_EXE_SOURCE=kernel), not as the child's
# report claims it.  An enforced child dies right after its report is sent,
# so pmallocd must not depend on reading the child's /proc/PID/exe after
# the report arrives (a dead or zombie process has none); the child, which
# shares its parent's connection, has the parent's executable (the
# connection is close-on-exec).  Ten forked children, every entry checked,
# and each child's line in pmallocctl status.
. "$(dirname "$0")/e2e_lib.sh"

FORK=$(readlink -f "$B/progs/e2e_fork")
journald_ensure
victim_conf "$CONF" forked e2e_fork settings on-call:listen
start_daemon

children=()
for i in 1 2 3 4 5 6 7 8 9 10; do
	hardened "$T/out" "$T/err" "$FORK" || fail "run $i: exit $?: $(cat "$T/err")"
	grep -qx 'child: signal 11' "$T/out" || fail "run $i: $(cat "$T/out")"
	children+=("$(sed -n 's/^parent=[0-9]* child=\([0-9]*\)$/\1/p' "$T/out")")
done
bad=()
for c in "${children[@]}"; do
	e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$c) || fail "no violation entry for the child $c"
	expect_field "$e" PMALLOC_EXE "$FORK"
	src=$(printf '%s\n' "$e" | jfield PMALLOC_EXE_SOURCE)
	[ "$src" = kernel ] || bad+=("$c:$src")
done
status=$("$B/pmallocctl" status --socket "$SOCK") || fail "pmallocctl status: $status"
for c in "${children[@]}"; do
	printf '%s\n' "$status" | grep -q "^  PID $c  $FORK  uid 0  forked child of PID " || bad+=("$c:status")
done
[ ${#bad[@]} = 0 ] ||
	fail "forked children whose exe pmallocd did not get from the kernel (PID:report = PMALLOC_EXE_SOURCE=report, the MESSAGE says \"as reported\"; PID:status = pmallocctl status shows \"(exe unknown)\"): ${bad[*]}"
pass "10 forked children: every entry's exe came from the kernel, and status names it"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
