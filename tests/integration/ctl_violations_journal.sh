#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pmallocctl violations with journalctl's options, against a real journald:
# --no-pager, -r, -n, -u/--unit, --cursor, --after-cursor, --show-cursor,
# -o short|json|json-pretty|cat, a table that fits $COLUMNS and --full, the
# pager on a terminal; who wrote each entry (pmallocd, the process itself,
# anybody else: FORGED) in every mode; the fault's function named by
# pmallocctl from the module file when the shim wrote the entry itself.
. "$(dirname "$0")/lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
command -v gcc >/dev/null || skip "gcc not installed (builds journal_inject)"
command -v python3 >/dev/null || skip "python3 not installed"
journald_ensure
unset COLUMNS
gcc -std=gnu11 -O1 -Wall -Wextra -Werror -o "$T/inject" "$SRC/tests/progs/journal_inject.c" -ldl ||
	fail "cannot build journal_inject"

ID=$MID_VIOLATION
pol=jctl$$_$RANDOM
base=$((5000000 + RANDOM * 100))
# Six forged entries (the injector writes about another pid), two of them
# about processes of nginx.service, one of redis-server.service.
for k in 0 1 2 3 4 5; do
	unit=
	case $k in 1 | 3) unit=nginx.service ;; 4) unit=redis-server.service ;; esac
	"$T/inject" MESSAGE_ID=$ID PRIORITY=2 OBJECT_PID=$((base + k)) PMALLOC_POLICY=$pol \
		PMALLOC_POOL=config PMALLOC_MODE=enforce PMALLOC_EXE=/usr/sbin/nginx \
		${unit:+OBJECT_SYSTEMD_UNIT=$unit} MESSAGE="entry $k" \
		PMALLOC_FAULT_MODULE="$T/inject" PMALLOC_FAULT_OFFSET=0x10 || fail "inject $k"
done
journal_sync

run() { "$ctl" violations --policy "$pol" "$@" >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; }
rc() { cat "$T/rc"; }
# The MESSAGE of each JSON line, in order (the values here hold no quote).
msgs() { grep -o '"MESSAGE":"[^"]*"' "$T/out" | sed 's/^"MESSAGE":"//; s/"$//' | tr '\n' ','; }

# The line the issue names, and journalctl's own answer to the same question.
run --no-pager -r -o json -n 5
[ "$(rc)" = 0 ] || fail "--no-pager -r -o json -n 5: exit $(rc): $(cat "$T/err")"
[ "$(msgs)" = "entry 5,entry 4,entry 3,entry 2,entry 1," ] || fail "-r -n 5: $(msgs)"
journalctl --no-pager -r -o json -n 5 MESSAGE_ID=$ID PMALLOC_POLICY=$pol >"$T/theirs"
python3 - "$T/out" "$T/theirs" <<'PY' || fail "-r -o json -n 5 differs from journalctl's"
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
theirs = [json.loads(l) for l in open(sys.argv[2])]
assert [o["__CURSOR"] for o in ours] == [t["__CURSOR"] for t in theirs], (ours, theirs)
for o, t in zip(ours, theirs):
    for k, v in o.items():
        if not k.startswith("PMALLOCCTL_") and k != "TIMESTAMP":
            assert t[k] == v, (k, v, t.get(k))
    assert o["PMALLOCCTL_WRITER"] == "FORGED", o
PY
run -n 2
[ "$(grep -c ' entry\|FORGED' "$T/out")" = 2 ] || fail "-n 2 table: $(cat "$T/out")"
run -o json -r
[ "$(msgs)" = "entry 5,entry 4,entry 3,entry 2,entry 1,entry 0," ] || fail "-r: $(msgs)"
run -o json -r --since "@0" --until "@$(($(date +%s) + 60))" -n 2
[ "$(msgs)" = "entry 5,entry 4," ] || fail "-r --since --until -n 2: $(msgs)"
pass "--no-pager -r -o json -n 5: newest first, as journalctl -r -n 5 -o json"

for u in nginx nginx.service 'ngin*' 'nginx.*'; do
	run -o json --unit "$u"
	[ "$(msgs)" = "entry 1,entry 3," ] || fail "--unit $u: $(msgs)"
done
run -o json -u nginx -u redis-server
[ "$(msgs)" = "entry 1,entry 3,entry 4," ] || fail "-u nginx -u redis-server: $(msgs)"
run -o json -u nginx -n 1
[ "$(msgs)" = "entry 3," ] || fail "-u nginx -n 1: $(msgs)"
run -u apache2
[ "$(rc)" = 0 ] && [ "$(cat "$T/out")" = "No violations." ] || fail "-u apache2: $(cat "$T/out")"
run -u ''
[ "$(rc)" = 2 ] || fail "-u '': exit $(rc)"
pass "-u/--unit: by name, with or without .service, globs, several"

# Cursors: --show-cursor ends with journalctl's line; --after-cursor
# continues from it, --cursor starts on it.
run -o cat -n 3 --show-cursor
cur=$(sed -n 's/^-- cursor: //p' "$T/out")
[ -n "$cur" ] && [ "$(tail -n 1 "$T/out")" = "-- cursor: $cur" ] || fail "--show-cursor: $(cat "$T/out")"
# journalctl's cursors of the six entries, one a line.
journalctl -q -o json MESSAGE_ID=$ID PMALLOC_POLICY=$pol |
	python3 -c 'import json, sys; [print(json.loads(l)["__CURSOR"]) for l in sys.stdin]' >"$T/cursors"
[ "$(sed -n 6p "$T/cursors")" = "$cur" ] || fail "the cursor shown is not entry 5's: $cur"
c2=$(sed -n 3p "$T/cursors")
run -o json --cursor "$c2"
[ "$(msgs)" = "entry 2,entry 3,entry 4,entry 5," ] || fail "--cursor: $(msgs)"
run -o json --after-cursor "$c2"
[ "$(msgs)" = "entry 3,entry 4,entry 5," ] || fail "--after-cursor: $(msgs)"
run -o json --after-cursor "$c2" -n 1
[ "$(msgs)" = "entry 3," ] || fail "--after-cursor -n 1: $(msgs)"
run -o json --cursor "$c2" -r
[ "$(msgs)" = "entry 2,entry 1,entry 0," ] || fail "--cursor -r: $(msgs)"
run -o json --after-cursor "$(sed -n 's/^-- cursor: //p' <<<"-- cursor: $cur")"
[ ! -s "$T/out" ] || fail "--after-cursor of the last: $(cat "$T/out")"
run --cursor 'no such cursor'
[ "$(rc)" = 1 ] || fail "--cursor garbage: exit $(rc)"
grep -qx "pmallocctl: --cursor no such cursor is not a journal cursor (one that --show-cursor or journalctl --show-cursor printed)" "$T/err" ||
	fail "--cursor garbage said: $(cat "$T/err")"
pass "--cursor, --after-cursor, --show-cursor"

# Output modes, each saying who wrote the entry.
run -o json-pretty -n 2
python3 - "$T/out" <<'PY' || fail "json-pretty: $(cat "$T/out")"
import json, sys
text = open(sys.argv[1]).read()
dec, i, objs = json.JSONDecoder(), 0, []
while i < len(text):
    o, i = dec.raw_decode(text, i)
    objs.append(o)
    while i < len(text) and text[i].isspace():
        i += 1
assert [o["MESSAGE"] for o in objs] == ["entry 4", "entry 5"], objs
assert text.startswith('{\n\t"__CURSOR" : "'), text[:40]
assert all(o["PMALLOCCTL_WRITER"] == "FORGED" for o in objs)
PY
run -o cat -n 2
[ "$(cat "$T/out")" = "[FORGED] entry 4
[FORGED] entry 5" ] || fail "-o cat: $(cat "$T/out")"
run -o verbose
[ "$(rc)" = 2 ] || fail "-o verbose: exit $(rc)"
run -n 1
grep -qE "^[0-9-]+ [0-9:]+  +$((base + 5))  +FORGED  +/usr/sbin/nginx " "$T/out" || fail "short: $(cat "$T/out")"
pass "-o short|json|json-pretty|cat, forged entries marked in each"

# The table fits $COLUMNS (long cells cut with "...", then columns left
# out); --full shows every cell whole.
long=/opt/$(printf 'very-long-directory-name-%.0s' 1 2 3 4)/bin/server
"$T/inject" MESSAGE_ID=$ID PRIORITY=2 OBJECT_PID=$((base + 9)) PMALLOC_POLICY=$pol PMALLOC_POOL=config \
	PMALLOC_MODE=enforce "PMALLOC_EXE=$long" PMALLOC_OBJECT_SITE=parse_configuration_file_with_a_long_name+0x1c \
	PMALLOC_ADDRESS=0x7f0000001010 PMALLOC_FAULT_IP=0x555500001234 MESSAGE="entry 9" || fail "inject long"
journal_sync
for cols in 60 80 120; do
	COLUMNS=$cols "$ctl" violations --policy "$pol" -n 3 >"$T/out" || fail "COLUMNS=$cols: exit $?"
	awk -v c=$cols 'length($0) > c { bad = 1 } END { exit bad }' "$T/out" ||
		fail "COLUMNS=$cols: a line is wider: $(cat "$T/out")"
	head -n 1 "$T/out" | grep -q '^TIME  *PID  *BY  *EXE' || fail "COLUMNS=$cols header: $(head -n 1 "$T/out")"
	grep -q '\.\.\.[^ ]*server' "$T/out" || fail "COLUMNS=$cols: the exe's end is not kept: $(cat "$T/out")"
done
COLUMNS=80 "$ctl" violations --policy "$pol" -n 3 --full >"$T/out"
grep -qF "$long" "$T/out" && grep -q 'parse_configuration_file_with_a_long_name+0x1c' "$T/out" &&
	head -n 1 "$T/out" | grep -q 'ADDRESS' || fail "--full: $(cat "$T/out")"
COLUMNS=80 "$ctl" violations --policy "$pol" -n 3 -l | cmp -s - "$T/out" || fail "-l is not --full"
"$ctl" violations --policy "$pol" -n 3 --no-full | awk 'length($0) > 80 { bad = 1 } END { exit bad }' ||
	fail "--no-full, not a terminal: wider than 80"
pass "the table fits COLUMNS=60/80/120; --full and -l show everything"

# On a terminal: through $PAGER, sized by the terminal; --no-pager writes
# straight to it.
if command -v script >/dev/null; then
	pager="cat >$T/paged"
	PAGER=$pager script -qec "stty cols 70; $ctl violations --policy $pol -n 3" /dev/null >"$T/tty" 2>&1 ||
		fail "on a terminal: exit $?: $(cat "$T/tty")"
	grep -q 'entry\|FORGED' "$T/paged" || fail "the pager got nothing: $(cat "$T/tty")"
	awk 'length($0) > 70 { bad = 1 } END { exit bad }' "$T/paged" || fail "not fitted to the terminal: $(cat "$T/paged")"
	rm -f "$T/paged"
	PAGER=$pager script -qec "$ctl violations --policy $pol -n 3 --no-pager" /dev/null >"$T/tty" 2>&1
	[ ! -e "$T/paged" ] && grep -q FORGED "$T/tty" || fail "--no-pager paged"
	pass "a pager on a terminal, none with --no-pager"
fi

# Written by the process itself (the shim, no daemon): BY self; the fault's
# function named from the module file, unless its build-id is another's.
self() { bash -c 'exec "$0" OBJECT_PID=$$ "$@"' "$T/inject" MESSAGE_ID=$ID PRIORITY=2 \
	PMALLOC_POLICY=$pol PMALLOC_POOL=config PMALLOC_MODE=enforce PMALLOC_EXE="$T/inject" "$@"; }
main_off=$(nm "$T/inject" | awk '$3 == "main" { print $1 }')
[ -n "$main_off" ] || fail "no main in $T/inject"
off=$(printf '0x%x' $((0x$main_off + 4)))
bid=$(readelf -n "$T/inject" | sed -n 's/.*Build ID: //p')
self MESSAGE="self 1" PMALLOC_FAULT_IP=0x55550000abcd PMALLOC_FAULT_MODULE="$T/inject" \
	PMALLOC_FAULT_OFFSET="$off" ${bid:+PMALLOC_FAULT_BUILD_ID=$bid} || fail "inject self 1"
self MESSAGE="self 2" PMALLOC_FAULT_IP=0x55550000abce PMALLOC_FAULT_MODULE="$T/inject" \
	PMALLOC_FAULT_OFFSET="$off" PMALLOC_FAULT_BUILD_ID=00112233445566778899aabbccddeeff00112233 ||
	fail "inject self 2"
journal_sync
run -n 2
grep -qE " self  +[^ ]*/inject .* main\+0x4\$" "$T/out" || fail "self 1 not named main+0x4: $(cat "$T/out")"
grep -qE " self  +[^ ]*/inject .* 0x55550000abce\$" "$T/out" || fail "self 2 (another build): $(cat "$T/out")"
run -n 2 -o json
grep -qE '"MESSAGE":"self 1".*"PMALLOCCTL_WRITER":"self","PMALLOCCTL_FAULT_SYMBOL":"main\+0x4"[,}]' "$T/out" ||
	fail "json self 1: $(cat "$T/out")"
grep '"MESSAGE":"self 2"' "$T/out" | grep -q PMALLOCCTL_FAULT_SYMBOL && fail "json self 2 named"
# A forged entry naming the same module and offset is not looked up.
run -o json -n 1 --pid $((base + 0))
grep -q '"PMALLOCCTL_WRITER":"FORGED"}' "$T/out" || fail "forged entry looked up: $(cat "$T/out")"
pass "BY self; the fault's function from the module file (build-id checked), never for a forged entry"

# A process's own entry that names another executable: the table shows the
# exe journald attests, with the claim beside it; JSON adds PMALLOCCTL_EXE.
# (journald reads the sender's exe from /proc when the datagram arrives: a
# sender that has exited by then leaves no _EXE, and pmallocctl rightly says
# "not attested".  That is journald's race, not the one under test: the
# sender stays 0.5 s after sending, and the entry is sent again, up to 3
# times, until journald attested it.)
for try in 1 2 3; do
	since="@$(date +%s.%6N)"
	JOURNAL_INJECT_LINGER_MS=500 bash -c 'exec "$0" OBJECT_PID=$$ "$@"' "$T/inject" MESSAGE_ID=$ID PRIORITY=2 PMALLOC_POLICY=$pol \
		PMALLOC_POOL=config PMALLOC_MODE=enforce PMALLOC_EXE=/usr/sbin/sshd MESSAGE="self claims" \
		PMALLOC_FAULT_IP=0x55550000abcf || fail "inject claims"
	journal_sync
	[ -n "$(journalctl -q -o cat --since "$since" MESSAGE_ID=$ID _EXE="$T/inject" MESSAGE="self claims")" ] && break
done
run -n 1 --since "$since" --full
grep -qE " self  +[^ ]*/inject \(claims /usr/sbin/sshd\) " "$T/out" || fail "claimed exe shown as attested: $(cat "$T/out")"
run -n 1 --since "$since" -o json
grep -qE '"PMALLOCCTL_EXE":"[^"]*/inject"' "$T/out" || fail "json: no attested exe: $(cat "$T/out")"
pass "a process's own entry shows the exe journald attests beside the one it claims"

# The shim's real entry (the demo killed with no daemon), and pmallocd's.
if [ -f "$B/libpmalloc_shim.so" ] && [ -x "$B/progs/pmalloc-demo" ]; then
	since="@$(date +%s.%6N)"
	PMALLOC_SOCKET=$T/none.sock PMALLOC_CONF=$SRC/conf/pmalloc.conf LD_PRELOAD=$B/libpmalloc_shim.so \
		"$B/progs/pmalloc-demo" attack >/dev/null 2>&1 &
	victim=$!
	wait $victim 2>/dev/null
	has_entry() { journal_sync; [ -n "$(journalctl -q -o cat --since "$since" MESSAGE_ID=$ID OBJECT_PID=$victim)" ]; }
	wait_until 40 has_entry || fail "no entry from the shim for the demo (pid $victim)"
	"$ctl" violations --pid $victim --since "$since" >"$T/out"
	tail -n 1 "$T/out" | grep -qE " $victim  +self  +[^ ]*/pmalloc-demo .* corrupt\+0x[0-9a-f]+\$" ||
		fail "the shim's entry: $(cat "$T/out")"
	pass "the shim's own entry: BY self, its function named by pmallocctl"
fi
