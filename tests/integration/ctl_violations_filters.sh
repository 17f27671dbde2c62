#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pmallocctl violations, the day-two options against a real journald:
# --policy, --until, -n, journalctl's TIME forms (spans, "ago", HH:MM, a
# trailing " UTC"), and --follow seeing an entry written after it started.
. "$(dirname "$0")/lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
command -v gcc >/dev/null || skip "gcc not installed (builds journal_inject)"
journald_ensure
gcc -std=gnu11 -O1 -Wall -Wextra -Werror -o "$T/inject" "$SRC/tests/progs/journal_inject.c" -ldl ||
	fail "cannot build journal_inject"

ID=$MID_VIOLATION
# Policy names new for each run: entries of earlier runs never count.
pol=filt$$_$RANDOM other=filt$$_${RANDOM}x
p1=$((5000000 + RANDOM * 100)) p2=$((p1 + 1)) p3=$((p1 + 2)) p4=$((p1 + 3))
inject() { "$T/inject" MESSAGE_ID=$ID PRIORITY=2 OBJECT_PID=$1 PMALLOC_POLICY=$2 \
	PMALLOC_POOL=config PMALLOC_MODE=enforce PMALLOC_EXE=/usr/bin/x MESSAGE="test $1" || fail "inject $1"; }
now() { local t; t=$(date +%s.%N); echo "${t%???}"; }

inject $p1 "$pol"
journal_sync
mark=$(now)              # after the first entry was stored, before the others
inject $p2 "$pol"
inject $p3 "$other"
journal_sync

run() { "$ctl" violations "$@" >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; }
pids() { grep -oE "\"OBJECT_PID\":\"[0-9]+\"" "$T/out" | grep -oE '[0-9]+' | tr '\n' ' '; }
expect() { # expect "PIDS" ARGS...: exit 0 and exactly those entries, in order
	local want=$1; shift
	run --json "$@"
	[ "$(cat "$T/rc")" = 0 ] || fail "violations $*: exit $(cat "$T/rc"): $(cat "$T/err")"
	[ "$(pids)" = "$want" ] || fail "violations $*: got '$(pids)', expected '$want'"
}

expect "$p1 $p2 " --policy "$pol"
expect "$p3 " --policy "$other"
pass "--policy"
expect "$p1 " --policy "$pol" --until "@$mark"
expect "$p2 " --policy "$pol" --since "@$mark"
pass "--until, --since"
expect "$p2 " --policy "$pol" -n 1
expect "$p1 $p2 " --policy "$pol" --lines 5
expect "$p1 " --policy "$pol" -n 1 --until "@$mark"
expect "" --policy "$pol" -n 2 --until "@$(( ${mark%.*} - 3600 ))"
pass "-n: the last N, within --until"

for since in "5 min ago" "-1h30min" "-1h 30min" "10 minutes ago" "yesterday" "-2d"; do
	expect "$p1 $p2 " --policy "$pol" --since "$since"
done
for since in "+10min" "tomorrow"; do
	expect "" --policy "$pol" --since "$since"
done
# " UTC": the date and time are UTC whatever the local zone.  In UTC+14 a
# local reading would put --until 14 hours earlier, before the entries.
until_utc=$(date -u -d "@$(( ${mark%.*} + 120 ))" '+%Y-%m-%d %H:%M:%S')
TZ=Etc/GMT-14 expect "$p1 $p2 " --policy "$pol" --until "$until_utc UTC"
TZ=Etc/GMT-14 expect "" --policy "$pol" --until "$until_utc"
hhmm=$(date -u -d "@$(( ${mark%.*} - 7200 ))" '+%H:%M')
run --policy "$pol" --since "$hhmm UTC"
[ "$(cat "$T/rc")" = 0 ] || fail "--since '$hhmm UTC': exit $(cat "$T/rc")"
for bad in "25:00" "5 parsecs ago" "-" "+" "@1 UTC" "-1h UTC" "1h30min" "09:" "today  UTC"; do
	run --since "$bad"
	[ "$(cat "$T/rc")" = 2 ] || fail "--since '$bad': exit $(cat "$T/rc"), expected 2"
done
for bad in "-n 0" "-n x" "--policy=" "--directory /x --file /y"; do
	# shellcheck disable=SC2086
	run $bad
	[ "$(cat "$T/rc")" = 2 ] || fail "'$bad': exit $(cat "$T/rc"), expected 2"
done
run --since "@$mark" --until "@$(( ${mark%.*} - 10 ))"
[ "$(cat "$T/rc")" = 2 ] || fail "--since after --until: exit $(cat "$T/rc")"
pass "TIME: spans, 'ago', HH:MM, ' UTC'; bad forms exit 2"

# --follow: the past first, then what comes.
"$ctl" violations --follow --json --policy "$pol" >"$T/follow" 2>"$T/follow.err" &
fpid=$!
stop_follow() { kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null; }
at_exit stop_follow
lines() { [ "$(wc -l <"$T/follow")" -ge "$1" ]; }
wait_until 200 lines 2 || fail "--follow did not list the past: $(cat "$T/follow" "$T/follow.err")"
inject $p4 "$pol"
wait_until 200 lines 3 || fail "--follow did not show the new entry: $(cat "$T/follow" "$T/follow.err")"
kill -0 "$fpid" 2>/dev/null || fail "--follow exited: $(cat "$T/follow.err")"
cp "$T/follow" "$T/out"
[ "$(pids)" = "$p1 $p2 $p4 " ] || fail "--follow: got '$(pids)'"
kill -INT "$fpid"
gone() { ! kill -0 "$fpid" 2>/dev/null; }
wait_until 200 gone || fail "--follow did not stop at SIGINT"
wait "$fpid"; rc=$?
[ $rc = 0 ] || fail "--follow after SIGINT: exit $rc: $(cat "$T/follow.err")"
[ ! -s "$T/follow.err" ] || fail "--follow after SIGINT: $(cat "$T/follow.err")"
pass "--follow shows an entry written after it started; SIGINT ends it with exit 0"

# The table form of --follow: header once, then rows as they come.
"$ctl" violations --follow --policy "$pol" --since "@$mark" >"$T/follow" 2>&1 &
fpid=$!
wait_until 200 lines 3 || fail "--follow (table) did not list the past: $(cat "$T/follow")"
inject $((p4 + 1)) "$pol"
wait_until 200 lines 4 || fail "--follow (table) did not show the new entry: $(cat "$T/follow")"
stop_follow
head -n 1 "$T/follow" | grep -q '^TIME  *PID ' || fail "--follow table header: $(head -n 1 "$T/follow")"
grep -c "^[0-9-]* [0-9:]*  *$((p4 + 1)) " "$T/follow" | grep -qx 1 || fail "--follow table rows: $(cat "$T/follow")"
pass "--follow as a table"

run --directory "$T/nonexistent"
[ "$(cat "$T/rc")" = 1 ] || fail "--directory of nothing: exit $(cat "$T/rc")"
exit 0
