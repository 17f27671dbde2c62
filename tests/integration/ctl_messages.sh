#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ctl_messages.sh - every message of pmallocctl starts "pmallocctl: ": a few
# failing commands per command (usage errors, a daemon that is not there,
# a journal that cannot be read, a refusal pmallocd answers with its own
# "error: ..."), each message's first line on stderr checked.  check's
# diagnostics about the file keep the form "FILE:LINE: message" that
# pmallocd --check shares (an editor jumps to the line), and are checked
# as such.
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
mkdir -p "$T/jdir" "$T/root"
n=0
# says CODE ARGS...: pmallocctl ARGS fails with exit status CODE and its
# stderr's first line starts with "pmallocctl: ".
says() {
	local want=$1 rc
	shift
	timeout 10 "$ctl" "$@" </dev/null >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = "$want" ] || fail "pmallocctl $*: exit $rc, not $want: $(cat "$T/out" "$T/err")"
	[ -s "$T/err" ] || fail "pmallocctl $*: nothing on stderr"
	head -n 1 "$T/err" | grep -q '^pmallocctl: [^ ]' || fail "pmallocctl $*: $(head -n 1 "$T/err")"
	n=$((n + 1))
}

says 2
says 2 nosuchcommand
says 2 --nosuchoption
says 2 check --nosuchoption
says 2 check a b
says 2 status --pid nope --socket "$T/nosock"
says 3 status --socket "$T/nosock"
says 2 violations --since "the day after"
says 2 violations -x
says 1 violations --no-pager --directory "$T/nosuchdir"
says 1 violations --no-pager --directory "$T/jdir" --cursor nocursor
says 2 learn
says 2 learn --output
says 1 learn --exe "$T/nosuchprogram"
says 2 propose
says 2 propose --exe /bin/true --run nothex
says 1 propose --exe /bin/true --directory "$T/jdir"
says 1 propose --exe "$T/nosuchprogram"
for cmd in learn-flush sites protect; do
	says 2 $cmd
	says 2 $cmd 0 --socket "$T/nosock"
	if [ $cmd = protect ]; then says 3 $cmd 1 pool --socket "$T/nosock"; else says 3 $cmd 1 --socket "$T/nosock"; fi
done
says 2 preload
says 2 preload enable bad/unit --root "$T/root"
says 2 preload sideways nginx --root "$T/root"
says 2 preload enable nginx --library relative.so --root "$T/root"
say_root=$T/root-link
ln -s "$T/root" "$say_root"
says 1 preload enable nginx --root "$say_root"

# pmallocd's refusals ("error: PID 1 is not connected ...") said as ours.
write_conf "$CONF" <<'EOF'
version = 1;
policies = ( );
EOF
start_daemon
for cmd in learn-flush sites; do
	says 1 $cmd 1 --socket "$SOCK"
	grep -q '^error:' "$T/err" && fail "$cmd: pmallocd's 'error:' shown: $(cat "$T/err")"
done
says 1 protect 1 config --socket "$SOCK"
stop_daemon || fail "pmallocd exit status $?"
pass "$n failing commands: each message starts 'pmallocctl: '"

# check: about the file, FILE:LINE: message; about the command line, ours.
printf 'version = 1;\npolicies = ( { name = "x" } );\n' >"$T/bad.conf"
"$ctl" check "$T/bad.conf" >"$T/out" 2>"$T/err" && fail "check accepted $T/bad.conf"
grep -q "^$T/bad.conf:[0-9]*: " "$T/err" || fail "check: $(cat "$T/err")"
"$ctl" check "$T/nosuchfile" >"$T/out" 2>"$T/err" && fail "check of no file"
grep -q "^$T/nosuchfile: " "$T/err" || fail "check: $(cat "$T/err")"
pass "check's diagnostics about the file: FILE:LINE: message"
