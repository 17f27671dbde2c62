#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pmallocctl violations against a real journald: entries written here with
# the violation MESSAGE_ID (tests/progs/journal_inject.c), read back as a
# table and as JSON lines, filtered by --pid and --since, and hostile field
# values (escape sequences, NUL, newlines, bidi overrides, bytes that are not
# UTF-8) shown escaped, never raw.
. "$(dirname "$0")/lib.sh"

unset COLUMNS                # the table whole: not a terminal
[ -x "$ctl" ] || skip "pmallocctl not built"
command -v gcc >/dev/null || skip "gcc not installed (builds journal_inject)"
journald_ensure
gcc -std=gnu11 -O1 -Wall -Wextra -Werror -o "$T/inject" "$SRC/tests/progs/journal_inject.c" -ldl ||
	fail "cannot build journal_inject"

ID=$MID_VIOLATION
# OBJECT_PIDs above the kernel's pid_max limit (2^22): no real process, and
# new for each run, so entries of earlier runs and real ones never count.
p1=$((5000000 + RANDOM * 100)) p2=$((p1 + 1)) p3=$((p1 + 2)) none=$((p1 + 3))
start=$(date +%s.%N); start=${start%???}          # µs: @SECONDS.FRACTION

"$T/inject" MESSAGE_ID=$ID PRIORITY=2 OBJECT_PID=$p1 MESSAGE="test violation one" \
	PMALLOC_POLICY=demo PMALLOC_POOL=config PMALLOC_MODE=enforce \
	PMALLOC_ADDRESS=0x7f0000001010 PMALLOC_OFFSET=16 PMALLOC_OBJECT_SIZE=64 \
	PMALLOC_OBJECT_SITE=parse_config+0x1c PMALLOC_FAULT_IP=0x555500001234 \
	PMALLOC_FAULT_SYMBOL=main+0x42 PMALLOC_EXE=/usr/bin/pmalloc-demo \
	$'PMALLOC_BACKTRACE=#0 main+0x42\n#1 __libc_start_call_main+0x7a' || fail "inject 1"
# audit, no fault symbol (the table shows the address), no object.
"$T/inject" MESSAGE_ID=$ID PRIORITY=4 OBJECT_PID=$p2 MESSAGE="test violation two" \
	PMALLOC_POLICY=demo PMALLOC_POOL=config PMALLOC_MODE=audit \
	PMALLOC_ADDRESS=0x7f0000002000 PMALLOC_FAULT_IP=0x555500005678 \
	PMALLOC_EXE=/usr/bin/pmalloc-demo || fail "inject 2"
# An entry of a message ID next to ours, which must not show.
"$T/inject" MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$p2 \
	PMALLOC_POLICY=demo PMALLOC_POOL=config || fail "inject other"

# The third entry comes in a later second than the first two (--since DATE).
mid=$(date +%s)
next_second() { [ "$(date +%s)" -gt "$mid" ]; }
wait_until 40 next_second || fail "clock did not move"
# Hostile: ESC sequence, bidi override, NUL/0xff/newline, CR and C1 CSI, backslash, tab.
"$T/inject" MESSAGE_ID=$ID OBJECT_PID=$p3 $'MESSAGE=evil\nfake line' \
	$'PMALLOC_POLICY=ev\e[31mil' $'PMALLOC_EXE=/tmp/a\u202eexe.txt' \
	hex:PMALLOC_POOL=41004243ff0a PMALLOC_MODE=enforce \
	$'PMALLOC_OBJECT_SITE=a\\b\tc' hex:PMALLOC_FAULT_SYMBOL=660d67c29b32 \
	'PMALLOC_ADDRESS=0x1"}{"x' || fail "inject 3"
journal_sync

# Our rows only (the journal may hold other violations in the same time span).
ours() { grep -E "^[0-9-]+ [0-9:]+  +($p1|$p2|$p3) " "$T/out"; }

# The table.
run violations --since "@$start"
[ "$(rc)" = 0 ] || fail "violations: exit $(rc): $(cat "$T/err")"
head -n 1 "$T/out" | tr -s ' ' | grep -qx 'TIME PID BY EXE POLICY POOL MODE ADDRESS OFFSET/SIZE SITE FAULT SYMBOL' ||
	fail "table header: $(head -n 1 "$T/out")"
[ "$(ours | wc -l)" = 3 ] || fail "expected 3 rows, got: $(cat "$T/out")"
row() { ours | grep -E "^[0-9-]+ [0-9:]+  +$1 " | cut -c 22- | tr -s ' '; }
[ "$(row $p1)" = "$p1 FORGED /usr/bin/pmalloc-demo demo config enforce 0x7f0000001010 16/64 parse_config+0x1c main+0x42" ] ||
	fail "row 1: $(row $p1)"
[ "$(row $p2)" = "$p2 FORGED /usr/bin/pmalloc-demo demo config audit 0x7f0000002000 -/- - 0x555500005678" ] ||
	fail "row 2: $(row $p2)"
expect3="$p3 FORGED /tmp/a\\u202eexe.txt ev\\x1b[31mil A\\x00BC\\xff\\n enforce 0x1\"}{\"x -/- a\\\\b\\tc f\\rg\\u009b2"
[ "$(row $p3)" = "$expect3" ] || fail "row 3: $(row $p3)"
ours | head -n 1 | grep -qE "^$(date +%Y-)[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}  " ||
	fail "time column: $(ours | head -n 1)"
# Columns line up: every value starts under its header (escapes are ASCII).
hdr=$(head -n 1 "$T/out")
line=$(ours | grep -E "^[0-9-]+ [0-9:]+  +$p3 ")
for pair in 'POLICY|ev\x1b[31mil' 'MODE|enforce' 'SITE|a\\b\tc' 'FAULT SYMBOL|f\rg\u009b2'; do
	h=${pair%%|*} v=${pair#*|}
	before_h=${hdr%%"$h"*} before_v=${line%%"$v"*}
	[ ${#before_h} = ${#before_v} ] ||
		fail "column $h: value at ${#before_v}, header at ${#before_h}: $hdr / $line"
done
# Nothing raw gets through: no ESC, CR, NUL, C1, bidi override, stray line.
if LC_ALL=C grep -qaP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xff' "$T/out"; then
	fail "raw control bytes in the table: $(od -c "$T/out" | head -n 20)"
fi
grep -q 'fake line' "$T/out" && fail "MESSAGE leaked into the table"
pass "table: rows, columns, hostile values escaped"

# JSON lines.
run violations --since "@$start" --json
[ "$(rc)" = 0 ] || fail "violations --json: exit $(rc): $(cat "$T/err")"
grep -q '^TIME' "$T/out" && fail "--json printed the table header"
[ "$(grep -cE "\"OBJECT_PID\":\"($p1|$p2|$p3)\"" "$T/out")" = 3 ] || fail "json lines: $(cat "$T/out")"
j1=$(grep "\"OBJECT_PID\":\"$p1\"" "$T/out")
for kv in '"MESSAGE":"test violation one"' '"PMALLOC_POLICY":"demo"' '"PMALLOC_POOL":"config"' \
	'"PMALLOC_MODE":"enforce"' '"PMALLOC_ADDRESS":"0x7f0000001010"' '"PMALLOC_OFFSET":"16"' \
	'"PMALLOC_OBJECT_SIZE":"64"' '"PMALLOC_OBJECT_SITE":"parse_config+0x1c"' \
	'"PMALLOC_FAULT_IP":"0x555500001234"' '"PMALLOC_FAULT_SYMBOL":"main+0x42"' \
	'"PMALLOC_EXE":"/usr/bin/pmalloc-demo"' '"PRIORITY":"2"' \
	'"PMALLOC_BACKTRACE":"#0 main+0x42\n#1 __libc_start_call_main+0x7a"'; do
	grep -qF "$kv" <<<"$j1" || fail "json entry 1 lacks $kv: $j1"
done
grep -qE '"__REALTIME_TIMESTAMP":"[0-9]{16}","TIMESTAMP":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z",' <<<"$j1" ||
	fail "json timestamps: $j1"
j3=$(grep "\"OBJECT_PID\":\"$p3\"" "$T/out")
for kv in '"PMALLOC_POLICY":"ev\u001b[31mil"' '"PMALLOC_EXE":"/tmp/a\u202eexe.txt"' \
	'"PMALLOC_POOL":[65,0,66,67,255,10]' '"PMALLOC_OBJECT_SITE":"a\\b\tc"' \
	'"PMALLOC_FAULT_SYMBOL":"f\rg\u009b2"' '"MESSAGE":"evil\nfake line"' \
	'"PMALLOC_ADDRESS":"0x1\"}{\"x"'; do
	grep -qF "$kv" <<<"$j3" || fail "json entry 3 lacks $kv: $j3"
done
if LC_ALL=C grep -qaP '[\x00-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xff' "$T/out"; then
	fail "raw control bytes in the JSON: $(od -c "$T/out" | head -n 20)"
fi
if command -v python3 >/dev/null; then
	python3 - "$T/out" "$p1" "$p3" <<'PY' || fail "json does not parse back: $(cat "$T/out")"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
objs = [json.loads(l) for l in lines]
e1 = [o for o in objs if o.get("OBJECT_PID") == sys.argv[2]][0]
e3 = [o for o in objs if o.get("OBJECT_PID") == sys.argv[3]][0]
assert e1["PMALLOC_BACKTRACE"] == "#0 main+0x42\n#1 __libc_start_call_main+0x7a"
assert e3["PMALLOC_POLICY"] == "ev\x1b[31mil", e3
assert e3["PMALLOC_EXE"] == "/tmp/a\u202eexe.txt", e3
assert bytes(e3["PMALLOC_POOL"]) == b"A\0BC\xff\n", e3
assert e3["PMALLOC_FAULT_SYMBOL"] == "f\rg\x9b2", e3
assert e3["PMALLOC_ADDRESS"] == '0x1"}{"x', e3
PY
fi
pass "json: every field, escaped, parses back"

# The same fields and values as journalctl -o json reads (plain entries).
if command -v python3 >/dev/null; then
	for p in $p1 $p2; do
		# This run only: the journal keeps other runs' entries, pids included.
		"$ctl" violations --pid $p --since "@$start" --json >"$T/ours.json"
		journalctl -o json --no-pager --since "@$start" MESSAGE_ID=$ID OBJECT_PID=$p >"$T/theirs.json"
		python3 - "$T/ours.json" "$T/theirs.json" <<'PY' || fail "pid $p differs from journalctl -o json"
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
theirs = [json.loads(l) for l in open(sys.argv[2])]
assert len(ours) == len(theirs) == 1, (ours, theirs)
o, t = ours[0], theirs[0]
want = {k: v for k, v in t.items()
        if k.startswith("PMALLOC_") or k in ("OBJECT_PID", "MESSAGE", "PRIORITY", "_PID", "_UID", "_GID", "_COMM", "_EXE",
                 "__REALTIME_TIMESTAMP", "__CURSOR", "SYSLOG_IDENTIFIER",
                 "_HOSTNAME", "_MACHINE_ID", "_BOOT_ID", "_SYSTEMD_UNIT")
        or k.startswith("OBJECT_SYSTEMD_")}
got = {k: v for k, v in o.items() if k != "TIMESTAMP" and not k.startswith("PMALLOCCTL_")}
assert o["PMALLOCCTL_WRITER"] == "FORGED", o
assert got == want, (got, want)
PY
	done
	pass "json agrees with journalctl -o json"
fi

# --pid, within this run (an earlier run may have used the same pids).
run violations --pid $p2 --since "@$start"
[ "$(rc)" = 0 ] || fail "--pid: exit $(rc)"
[ "$(wc -l <"$T/out")" = 2 ] && [ "$(ours | wc -l)" = 1 ] && ours | grep -q " $p2 " ||
	fail "--pid $p2: $(cat "$T/out")"
run violations --pid $p2 --since "@$start" --json
[ "$(wc -l <"$T/out")" = 1 ] && grep -q "\"OBJECT_PID\":\"$p2\"" "$T/out" || fail "--pid --json: $(cat "$T/out")"
run violations --pid $none --since "@$start"
[ "$(rc)" = 0 ] && [ "$(cat "$T/out")" = "No violations." ] || fail "--pid with none: $(cat "$T/out")"
run violations --pid $none --since "@$start" --json
[ "$(rc)" = 0 ] && [ ! -s "$T/out" ] || fail "--json with none printed: $(cat "$T/out")"
pass "--pid"

# --since in each form.  The forms reach back before this run, into earlier
# runs' entries, whose pids may be ours: count only the JSON lines of our
# pids written since this run's start.
ours_now() {
	grep -E "\"OBJECT_PID\":\"($p1|$p2|$p3)\"" "$T/out" |
		sed -nE 's/.*"__REALTIME_TIMESTAMP":"([0-9]+)".*"OBJECT_PID":"([0-9]+)".*/\1 \2/p' |
		awk -v s="${start/./}" '$1 >= s { print $2 }'
}
run violations --since "$(date -d "@$((mid + 1))" '+%Y-%m-%d %H:%M:%S')" --json
[ "$(rc)" = 0 ] && [ "$(ours_now)" = "$p3" ] ||
	fail "--since DATE TIME: $(cat "$T/out") $(cat "$T/err")"
run violations --since "@${start%.*}" --json
[ "$(rc)" = 0 ] && [ "$(ours_now | sort | tr '\n' ' ')" = "$p1 $p2 $p3 " ] ||
	fail "--since @${start%.*}: exit $(rc): $(ours_now) $(cat "$T/err")"
# The forms that reach back hours or a day: a kept journal holds every
# earlier run's violations there (100,000 entries take seconds to list), so
# each of our pids is asked for with --pid (a journal match: milliseconds).
forms="yesterday -10min -2h -1d"
# "today" and today's date only when no midnight passed since the entries were written.
[ "$(date -d "@${start%.*}" +%F)" = "$(date +%F)" ] && forms="$forms today $(date +%F)"
for since in $forms; do
	for p in $p1 $p2 $p3; do
		run violations --since "$since" --pid $p --json
		[ "$(rc)" = 0 ] && [ "$(ours_now)" = "$p" ] ||
			fail "--since $since --pid $p: exit $(rc): $(ours_now) $(cat "$T/err")"
	done
done
run violations --since "@$(($(date +%s) + 86400))"
[ "$(rc)" = 0 ] && [ "$(cat "$T/out")" = "No violations." ] || fail "--since tomorrow: $(cat "$T/out")"
run violations --pid $p3 --since "@$((mid + 1))" --json
[ "$(wc -l <"$T/out")" = 1 ] || fail "--pid and --since together: $(cat "$T/out")"
pass "--since"

# Bad arguments: exit 2, a message on stderr naming the word, nothing on stdout.
for args in "--since 2024-13-01" "--since 2024-02-31x" "--since -5x" "--since yesteryear" \
	"--since @12abc" "--since 10min" "--pid 0" "--pid -3" "--pid 12x" "--pid 99999999999" \
	"--bogus" "extra"; do
	# shellcheck disable=SC2086
	run violations $args
	[ "$(rc)" = 2 ] || fail "violations $args: exit $(rc), expected 2"
	[ ! -s "$T/out" ] || fail "violations $args printed on stdout: $(cat "$T/out")"
	grep -q "^pmallocctl: .*'${args##* }'" "$T/err" || fail "violations $args: stderr: $(cat "$T/err")"
done
run violations --since $'\e[2J'
grep -q $'\e' "$T/err" && fail "an argument's escape sequence was echoed raw"
pass "bad arguments refused"

# End to end, once the rest is built: a real violation, written by pmallocd,
# read back by pmallocctl.
if [ -x "$B/pmallocd" ] && [ -f "$B/libpmalloc_shim.so" ] && [ -x "$B/progs/pmalloc-demo" ]; then
	export PMALLOC_SOCKET=$T/pmallocd.sock PMALLOC_CONF=$T/no-such.conf
	"$B/pmallocd" --config "$SRC/conf/pmalloc.conf" --socket "$PMALLOC_SOCKET" >"$T/pmallocd.log" 2>&1 &
	dpid=$!
	stop_daemon() { kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; true; }
	at_exit stop_daemon
	if wait_until 100 test -S "$PMALLOC_SOCKET"; then
		# PIDs are reused and the journal remembers: only this run's entries.
		since="@$(date +%s.%6N)"
		env LD_PRELOAD="$B/libpmalloc_shim.so" "$B/progs/pmalloc-demo" attack >/dev/null 2>&1 &
		victim=$!
		wait $victim 2>/dev/null
		journal_sync
		has_entry() { journal_sync; [ -n "$(journalctl -q -o cat --since "@$start" MESSAGE_ID=$ID OBJECT_PID=$victim)" ]; }
		wait_until 40 has_entry ||
			fail "end to end: no violation entry for the demo (pid $victim); pmallocd log: $(cat "$T/pmallocd.log")"
		# This run only: pids are reused, and the journal is shared with other runs.
		run violations --pid $victim --since "@$start"
		[ "$(rc)" = 0 ] && [ "$(wc -l <"$T/out")" = 2 ] || fail "end to end: $(cat "$T/out" "$T/err")"
		tail -n 1 "$T/out" | tr -s ' ' | grep -qE "^[0-9-]+ [0-9:]+ $victim pmallocd [^ ]*/pmalloc-demo demo config enforce 0x[0-9a-f]+ [0-9]+/[0-9]+ parse_config\+0x[0-9a-f]+ [^ -]" ||
			fail "end to end row: $(tail -n 1 "$T/out")"
		pass "end to end: pmallocd's entry for a killed demo"
	else
		echo "note: pmallocd did not come up: end-to-end part left out ($(tail -n 3 "$T/pmallocd.log"))"
	fi
else
	echo "note: pmallocd, the shim or pmalloc-demo not built: end-to-end part left out"
fi
