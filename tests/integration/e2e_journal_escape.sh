#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_journal_escape.sh - names from users' files reach the journal escaped,
# never raw: a program whose path holds a newline (and a fake sshd line
# after it), ESC, U+202E (right-to-left override) and a byte that is not
# UTF-8, and a symbol name holding the same, give journal entries that are
# one line each in `journalctl -o cat`, with "\x0a", "\x1b", "\u202e",
# "\xff" where those were: through pmallocd (violation and hand-out), and
# through the shim itself when no daemon runs.
. "$(dirname "$0")/e2e_lib.sh"
command -v perl >/dev/null || skip "perl not installed"

journald_ensure
export LC_ALL=C
EVIL=$'d\nsshd[1]: Accepted password for root from 10.0.0.1 port 22\e[2K\xe2\x80\xae\xff'
SHOWN='d\x0asshd[1]: Accepted password for root from 10.0.0.1 port 22\x1b[2K\u202e\xff'
# 15 bytes, as long as "wire_fault_site", so the string table keeps its shape.
EVIL_SYM=$'w\n\e[1m\xe2\x80\xae\xffevil!'
SHOWN_SYM='w\x0a\x1b[1m\u202e\xffevil!'
[ ${#EVIL_SYM} -gt 0 ] || fail "bad symbol"

mkdir "$T/$EVIL"
BIN=$T/$EVIL/wire_client
cp "$WIRE" "$BIN"
perl -0777 -pi -e 's/\0wire_fault_site\0/\0'"$EVIL_SYM"'\0/g' "$BIN"
nm "$BIN" | grep -q 'wire_fault_site' && fail "symbol not renamed"
chmod 0755 "$T/$EVIL"

# Lines of raw danger in text on stdin: a control byte, U+202E, invalid UTF-8.
raw_danger() { grep -c $'[\x01-\x08\x0b-\x1f\x7f]\|\xe2\x80\xae\|\xff'; }

std_conf "$CONF"
start_daemon
out=$("$BIN" --socket "$SOCK" --report 1) || fail "wire_client: $out"
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$cpid" >/dev/null || fail "no violation entry"
cat_out=$(journalctl --no-pager -o cat --since "$TEST_SINCE" _PID="$DPID" MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$cpid")
[ "$(printf '%s\n' "$cat_out" | wc -l)" = 1 ] || fail "journalctl -o cat: not one line: $cat_out"
[ "$(printf '%s\n' "$cat_out" | raw_danger)" = 0 ] || fail "raw control bytes in: $(printf '%s' "$cat_out" | od -c | head)"
case $cat_out in
"pmalloc: PID $cpid ($T/$SHOWN/wire_client) wrote to protected pool \"config\" of policy \"demo\""*" in $SHOWN_SYM+0x4; process killed (enforce)") ;;
*) fail "MESSAGE: $cat_out" ;;
esac
field() { journalctl --no-pager -o cat --output-fields="$1" --since "$TEST_SINCE" _PID="$DPID" MESSAGE_ID="$2" OBJECT_PID="$cpid"; }
[ "$(field PMALLOC_EXE $MID_VIOLATION)" = "$T/$SHOWN/wire_client" ] || fail "PMALLOC_EXE: $(field PMALLOC_EXE $MID_VIOLATION)"
[ "$(field PMALLOC_FAULT_SYMBOL $MID_VIOLATION)" = "$SHOWN_SYM+0x4" ] ||
	fail "PMALLOC_FAULT_SYMBOL: $(field PMALLOC_FAULT_SYMBOL $MID_VIOLATION)"
bt=$(field PMALLOC_BACKTRACE $MID_VIOLATION)
case $bt in "$T/$SHOWN/wire_client+0x"*" ($SHOWN_SYM+0x4) ["*) ;; *) fail "PMALLOC_BACKTRACE: $bt" ;; esac
# Text, not binary: journalctl -o json shows a field that is not UTF-8 as an array of numbers.
jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$cpid" | grep -q '"PMALLOC_EXE":"' || fail "PMALLOC_EXE is not text"
hand=$(journalctl --no-pager -o cat --since "$TEST_SINCE" _PID="$DPID" MESSAGE_ID=$MID_HANDED OBJECT_PID="$cpid")
[ "$(printf '%s\n' "$hand" | wc -l)" = 1 ] && [ "$(printf '%s\n' "$hand" | raw_danger)" = 0 ] ||
	fail "hand-out entry: $hand"
status=$(client --status)
[ "$(printf '%s\n' "$status" | raw_danger)" = 0 ] || fail "raw bytes in status"
printf '%s\n' "$status" | grep -qF "  PID $cpid  $T/$SHOWN/wire_client  uid 0" || fail "status: $status"
pass "pmallocd: exe path and symbol name escaped in MESSAGE, PMALLOC_EXE, PMALLOC_FAULT_SYMBOL, PMALLOC_BACKTRACE, the hand-out and status"
stop_daemon || fail "pmallocd exit status $?"

# No daemon: the shim writes the journal itself.
DEMO_EVIL=$T/$EVIL/pmalloc-demo$'\e[31m\xff'
cp "$DEMO" "$DEMO_EVIL"
sed 's|"\*/pmalloc-demo"|"*/pmalloc-demo*"|' "$SRC/conf/pmalloc.conf" | write_conf "$T/file.conf"
grep -q 'pmalloc-demo\*' "$T/file.conf" || fail "shipped policy does not name pmalloc-demo"
E2E_CONF=$T/file.conf hardened "$T/out" "$T/err" "$DEMO_EVIL" attack
rc=$?
pid=$HPID
[ $rc = 139 ] || fail "demo: exit $rc, want 139: $(cat "$T/out" "$T/err")"
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$pid") || fail "no violation entry from the shim"
expect_field "$e" SYSLOG_IDENTIFIER pmalloc
cat_out=$(journalctl --no-pager -o cat --since "$E2E_SINCE" MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$pid")
[ "$(printf '%s\n' "$cat_out" | wc -l)" = 1 ] || fail "shim: journalctl -o cat: not one line: $cat_out"
[ "$(printf '%s\n' "$cat_out" | raw_danger)" = 0 ] || fail "shim: raw control bytes: $cat_out"
case $cat_out in "pmalloc: PID $pid ($T/$SHOWN/pmalloc-demo\\x1b[31m\\xff) wrote to protected pool"*) ;;
*) fail "shim MESSAGE: $cat_out" ;; esac
exe=$(journalctl --no-pager -o cat --output-fields=PMALLOC_EXE --since "$E2E_SINCE" MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$pid")
[ "$exe" = "$T/$SHOWN/pmalloc-demo\\x1b[31m\\xff" ] || fail "shim PMALLOC_EXE: $exe"
bt=$(journalctl --no-pager -o cat --output-fields=PMALLOC_BACKTRACE --since "$E2E_SINCE" MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$pid")
case $bt in 'pmalloc-demo\x1b[31m\xff+0x'*) ;; *) fail "shim PMALLOC_BACKTRACE: $bt" ;; esac
pass "the shim on its own: the exe escaped the same way in MESSAGE, PMALLOC_EXE and PMALLOC_BACKTRACE"

# The report line on stderr (a service's stderr is the journal too): one
# line, the module's name escaped the same way.
line=$(grep 'write to protected pool' "$T/err")
[ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || fail "stderr: not one report line: $(cat "$T/err")"
[ "$(printf '%s\n' "$line" | raw_danger)" = 0 ] || fail "stderr: raw control bytes: $line"
case $line in *'(pmalloc-demo\x1b[31m\xff+0x'*) ;; *) fail "stderr: module name not escaped: $line" ;; esac
pass "stderr: the report line names the module escaped"
exit 0
