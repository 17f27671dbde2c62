#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_attribution.sh - a violation entry names only what the kernel says
# about its sender and what was handed to it.  A process keeps its pmallocd
# connection across an exec of another program (a setuid one: passwd; or
# sleep), and a child it forked before the exec sends the HELLO or a report
# on it: pmallocd must never log that child's report under the other
# program's exe or policy.  Each refusal is counted in status ("forged").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

SLEEP=$(readlink -f "$(command -v sleep)")
PASSWD=/usr/bin/passwd
journald_ensure
std_conf "$CONF"
sed -i 's|^);$|  , { name = "sleeper"; match = { exe = [ "*/sleep" ]; }; pools = ( { name = "p"; sites = [ "x" ]; } ); }\n  , { name = "pw"; match = { exe = [ "*/passwd", "*/ssh-agent" ]; }; pools = ( { name = "p"; sites = [ "x" ]; } ); }\n);|' "$CONF"
start_daemon

forged() { client --status | sed -n 's/^dropped: .* \([0-9]*\) forged, .*/\1/p'; }
# No violation entry of this daemon may name exe $1.
never_logged_as() {
	local e
	e=$(jentries MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$1")
	[ -z "$e" ] || fail "$2: a violation was logged under $1: $e"
}

# 1. The HELLO comes from the child, after its parent exec'd sleep: the
# parent's /proc entry now says sleep, but sleep never said hello.
out=$(client --exec "$SLEEP" --exec-arg 1 --hello-from-child --policy sleeper --pool p)
child=$(printf '%s\n' "$out" | sed -n 's/^child=//p')
printf '%s\n' "$out" | grep -q '^POLICY' && fail "HELLO from a child after its parent's exec got a policy: $out"
printf '%s\n' "$out" | grep -qx closed || fail "HELLO from a child: connection not closed: $out"
[ -z "$child" ] || fail "the child could report: $out"
[ "$(forged)" = 1 ] || fail "forged count: $(client --status | grep '^dropped:')"
pass "a HELLO sent by another process than the one that connected is refused and counted"

# 2. The parent got its own policy, then exec'd sleep; the child reports,
# naming sleep's policy, and exits at once (its /proc entry is gone).
out=$(client --exec "$SLEEP" --exec-arg 1 --policy sleeper --pool p)
child=$(printf '%s\n' "$out" | sed -n 's/^child=//p')
[ -n "$child" ] || fail "no child: $out"
# The same child trick with the policy the parent was handed, to know when
# pmallocd has read the first one.
out=$(client --exec "$SLEEP" --exec-arg 1)
child2=$(printf '%s\n' "$out" | sed -n 's/^child=//p')
ppid2=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
e=$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$child2") || fail "no entry for the second child"
expect_field "$e" PMALLOC_EXE "$WIRE"
expect_field "$e" PMALLOC_EXE_SOURCE kernel
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_VIA_PID "$ppid2"
[ -z "$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$child")" ] ||
	fail "a report naming a policy not handed out was logged: $(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$child")"
[ -z "$(jentries MESSAGE_ID=$MID_VIOLATION PMALLOC_POLICY=sleeper)" ] || fail "policy sleeper logged"
never_logged_as "$SLEEP" "report after exec"
[ "$(forged)" = 2 ] || fail "forged count: $(client --status | grep '^dropped:')"
pass "a child's report after its parent's exec: named the exe handed out ($WIRE), a foreign policy refused"

# 3. The passwd trick, as an unprivileged user: HELLO, then at once an exec
# that keeps the connection, of setuid passwd or of setgid ssh-agent;
# pmallocd reads the HELLO only after the exec (it is stopped meanwhile),
# when /proc names the privileged program.
n_forged=2
exec_trick() {
	local prog=$1 arg=$2 bg ok=
	rm -f "$T/pw.in"
	mkfifo "$T/pw.in"
	kill -STOP "$DPID"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$WIRE" --socket "$SOCK" --exec "$prog" \
		${arg:+--exec-arg "$arg"} --hello-then-exec --policy pw --pool p <"$T/pw.in" >"$T/pw.out" 2>&1 &
	bg=$!
	exec 7>"$T/pw.in"
	for _ in $(seq 100); do
		[ "$(readlink "/proc/$bg/exe" 2>/dev/null)" = "$prog" ] && { ok=1; break; }
		sleep 0.05
	done
	kill -CONT "$DPID"
	[ -n "$ok" ] || fail "$prog did not start: $(cat "$T/pw.out")"
	# The child's output shares a terminal-less stdout with the program's.
	wait_until 200 grep -q 'child=\|closed$\|timeout$' "$T/pw.out"
	exec 7>&-
	kill "$bg" 2>/dev/null
	wait "$bg" 2>/dev/null
	grep -q '^POLICY' "$T/pw.out" && fail "$prog's policy handed to the hostile process: $(cat "$T/pw.out")"
	grep -q 'closed$' "$T/pw.out" || fail "$prog: the HELLO was not refused: $(cat "$T/pw.out")"
	never_logged_as "$prog" "$prog trick"
	n_forged=$((n_forged + 1))
	[ "$(forged)" = $n_forged ] || fail "forged count: $(client --status | grep '^dropped:')"
}
exec_trick /usr/bin/passwd ""
pass "HELLO, then exec of setuid passwd before pmallocd reads it: refused (uid changed), counted"
if [ -g /usr/bin/ssh-agent ]; then
	exec_trick /usr/bin/ssh-agent -D
	pass "HELLO, then exec of setgid ssh-agent: refused (gid changed), counted"
fi

stop_daemon || fail "exit status $?"
exit 0
