# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_hostile.sh - clients that get the protocol wrong, say nothing,
# vanish, flood, or come by the thousand never take pmallocd down or make
# it stop answering others; every drop is counted in status and the
# journal is not flooded with them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
std_conf "$CONF"
start_daemon

alive() {
	kill -0 "$DPID" 2>/dev/null || fail "pmallocd died: $(tail -n 20 "$T/daemon.log")"
	client | grep -qx "POLICY generation=1" || fail "pmallocd stopped answering after $1"
}

for bad in garbage truncated oversized bad-length report-first fds; do
	out=$(client --$bad) || fail "--$bad: $out"
	printf '%s\n' "$out" | grep -qx closed || fail "--$bad: connection not closed: $out"
	alive "--$bad"
done
pass "garbage, truncated, oversized, wrong length, report before HELLO, passed fds: each dropped"

# Reports naming hostile module files: a FIFO (opening it would block), a
# device, a relative path, a non-ELF file.  Logged raw, nothing hangs.
mkfifo "$T/fifo"
echo "not an ELF file" >"$T/text"
for path in "$T/fifo" /dev/zero lib/relative.so "$T/text"; do
	out=$(client --report 1 --module-path "$path")
	cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
	alive "a report naming $path"
	bt=$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid | jfield PMALLOC_BACKTRACE)
	case $bt in "$path+0x"*) ;; *) fail "report naming $path: $bt" ;; esac
	case $bt in "$path+0x"*" (wire_fault_site"*) fail "symbols from $path?: $bt" ;; esac
done
pass "reports naming a FIFO, a device, a relative path, a text file: logged raw, nothing opened or hung"

# A report whose cause is out of range: dropped as malformed, not logged.
out=$(client --report 1 --cause 7)
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
alive "a report with cause 7"
good=$(client --report 1 | sed -n 's/^pid=//p')     # a good one after it, to wait for
jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$good >/dev/null || fail "the report after it was not logged"
[ -z "$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid)" ] || fail "a report with cause 7 was logged"
pass "a report with an out-of-range cause: refused"

for i in 1 2 3 4 5; do client --vanish >/dev/null || fail "--vanish"; done
alive "clients vanishing after HELLO"
pass "clients vanishing mid-exchange"

out=$(client --silent) || fail "silent client not dropped: $out"
ms=$(printf '%s\n' "$out" | sed -n 's/^closed after \([0-9]*\) ms$/\1/p')
[ -n "$ms" ] && [ "$ms" -ge 900 ] && [ "$ms" -le 3000 ] || fail "silent client dropped after '$ms' ms, want about 1000 (10 x handshake_timeout_ms): $out"
pass "a silent client is dropped after $ms ms"

# A client flooding messages does not hold up others.
client --flood 20000 >/dev/null &
fpid=$!
t0=$(date +%s%N)
for i in 1 2 3 4 5; do alive "a flood"; done
t1=$(date +%s%N)
wait "$fpid" || fail "flooding client failed"
[ $(((t1 - t0) / 1000000)) -lt 5000 ] || fail "answers took $(((t1 - t0) / 1000000)) ms during a flood"
pass "20000 messages from one client: others still answered ($(((t1 - t0) / 1000000)) ms for 5)"

client --many 1500 --hold 3000 >"$T/many.out" &
mpid=$!
wait_until 200 grep -q '^answered=' "$T/many.out" || fail "1500 concurrent clients: no answers"
grep -qx "answered=1500 refused=0" "$T/many.out" || fail "1500 concurrent clients: $(cat "$T/many.out")"
alive "1500 concurrent clients"
status=$(client --status)
# Whole, however many processes (status travels as data in a memfd).
printf '%s\n' "$status" | grep -q '^exited processes (' && ! printf '%s\n' "$status" | grep -q truncated ||
	fail "status text of ${#status} bytes is not whole"
printf '%s\n' "$status" | grep -q '^served processes (1500 connected):' || fail "status: $(printf '%s\n' "$status" | head -n 20)"
listed=$(printf '%s\n' "$status" | sed -n '/^served processes/,/^exited processes/p' | grep -c '^  PID ')
[ "$listed" = 1500 ] || fail "status lists $listed of the 1500 served"
wait "$mpid" || fail "1500 concurrent clients: $(cat "$T/many.out")"
pass "1500 concurrent clients all answered; status while they are connected lists every one (whole, no 64 KiB cut)"

# Past the cap (4096 connections) clients are refused with a reason.
wait_until 100 sh -c "'$WIRE' --socket '$SOCK' --status | grep -q '^clients: 1 connected'" || fail "connections not released"
out=$(client --many 4200) || fail "4200 concurrent clients: $out"
printf '%s\n' "$out" | grep -qx "answered=4096 refused=104" || fail "4200 concurrent clients: $out"
# Their hang-ups reach the daemon asynchronously: wait for the slots to free.
wait_until 200 sh -c "'$WIRE' --socket '$SOCK' --status | grep -q '^clients: 1 connected'" || fail "connections not released"
alive "4200 concurrent clients"
pass "4200 concurrent clients: 4096 answered, 104 refused"

status=$(client --status)
line=$(printf '%s\n' "$status" | grep '^dropped:')
for want in "4 malformed" "1 oversized" "1 out of order" "1 passing fds" "1 silent" "104 over the client limit"; do
	case $line in *"$want"*) ;; *) fail "status lacks '$want': $line" ;; esac
done
pass "status counts every drop: $line"

# The drops were logged, but not one line each (limited to 10 per 10 s).
n=$(journal_sync; journalctl -o json _PID="$DPID" 2>/dev/null | grep -c '"MESSAGE":"pmallocd: client PID')
[ "$n" -le 20 ] || fail "$n log lines about dropped clients: flooding"
pass "drops logged without flooding ($n lines)"

rss=$(awk '/^VmRSS/ { print $2 }' /proc/$DPID/status)
[ "$rss" -lt 200000 ] || fail "pmallocd uses $rss kB"
stop_daemon || fail "exit status $?"
pass "clean exit after all that (RSS was $rss kB)"

# With few descriptors the cap shrinks (RLIMIT_NOFILE less a reserve of
# 128): refusals, not a stalled accept.
prlimit --nofile=200:200 "$PMALLOCD" --config "$CONF" --socket "$SOCK" >>"$T/daemon.log" 2>&1 &
DPID=$!
wait_until 200 "$WIRE" --socket "$SOCK" --status || fail "pmallocd did not come up"
out=$(client --many 100) || fail "100 clients, 200 descriptors: $out"
printf '%s\n' "$out" | grep -qx "answered=72 refused=28" || fail "100 clients, 200 descriptors: $out"
wait_until 200 sh -c "'$WIRE' --socket '$SOCK' --status | grep -q '^clients: 1 connected (at most 72)'" || fail "status: $(client --status)"
stop_daemon || fail "exit status $?"
pass "RLIMIT_NOFILE 200: at most 72 clients, the rest refused"
exit 0
