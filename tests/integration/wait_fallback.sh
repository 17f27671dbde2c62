#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# wait_fallback.sh - on-wait's fallback, with and without a thread of the
# shim's.  wait_reader's main thread never waits: it reads its commands
# with read(2).  Its policy's pool (site setup, protect = on-wait) is
# protected 30 s after start all the same, with the trigger
# "on-wait:fallback":
#   - single-threaded, the shim starts no thread in it (a first thread
#     would make glibc take its multi-threaded paths for the process's
#     whole life): the process keeps one task, and the deadline is looked
#     at as its reads return; the first read past it protects, before the
#     program sees the command read, whose write is then killed;
#   - with a thread of the program's (THREADED=1), the shim's timer thread
#     (pmalloc-timer) waits for the deadline and protects on its own, with
#     no call of the program's.
# Beside them, routing's quiet: a third one (protect = after:1s, take =
# "until-trigger", as proposals are) whose
# every pool is closed; 30 s later, at a wait, its allocations go to the
# heap unrouted (malloc as cheap as the idle shim's); a reload's signal
# puts routing back as the wait it interrupted returns.
# All run side by side: the test takes the 30 s once.
. "$(dirname "$0")/lib.sh"

P=$(readlink -f "$B/progs/wait_reader")
cat >"$T/p.conf" <<EOF2
version = 1;
policies = ( { name = "reader"; match = { exe = [ "$P" ]; }; mode = "enforce";
  pools = ( { name = "cfg"; sites = [ "setup" ]; protect = [ "on-wait" ]; } ); } );
EOF2
sed 's/protect = \[ "on-wait" \]/protect = [ "after:1s" ]; take = "until-trigger"/' "$T/p.conf" >"$T/q.conf"
chmod 0644 "$T/p.conf" "$T/q.conf"
PIDS=()
stop_all() { local p; for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null; done; }
at_exit stop_all

# start NAME [ENV...]: wait_reader with its commands from the fifo
# $T/NAME.in (held open by fd 3+), its output in $T/NAME.out and .err.
start() {
	local name=$1; shift
	mkfifo "$T/$name.in"
	env PMALLOC_CONF="$T/p.conf" PMALLOC_DEBUG=1 LD_PRELOAD="$B/libpmalloc_shim.so" "$@" "$P" \
		<"$T/$name.in" >"$T/$name.out" 2>"$T/$name.err" &
	PIDS+=($!)
	eval "exec {fd_$name}>\"\$T/$name.in\""
	wait_until 200 grep -qx ready "$T/$name.out" || fail "$name did not start: $(cat "$T/$name.out" "$T/$name.err")"
}
send() { local fd="fd_$1"; printf '%s\n' "$2" >&"${!fd}"; }
lines() { grep -c "$2" "$T/$1.out"; }
# has NAME PATTERN N: NAME's output has N lines matching PATTERN, counted at
# each of wait_until's tries (a $(lines ...) in its arguments is counted
# once, before the first: it raced the reader on a loaded machine).
has() { [ "$(lines "$1" "$2")" = "$3" ]; }

start single
single=${PIDS[0]}
start threaded THREADED=1
threaded=${PIDS[1]}
start quiet PMALLOC_CONF="$T/q.conf"
quiet=${PIDS[2]}
t0=$(date +%s)
send quiet poll
wait_until 100 grep -qx polled "$T/quiet.out" || fail "quiet: no answer: $(cat "$T/quiet.out" "$T/quiet.err")"
grep -q unrouted "$T/quiet.err" && fail "quiet: routing quiet at once: $(cat "$T/quiet.err")"

send single threads
wait_until 100 grep -q '^threads' "$T/single.out" || fail "single: no answer: $(cat "$T/single.out" "$T/single.err")"
grep -qx 'threads 1' "$T/single.out" || fail "single-threaded, the shim started a thread: $(cat "$T/single.out"; cat /proc/"$single"/task/*/comm)"
send single write
wait_until 100 grep -qx wrote "$T/single.out" || fail "single: its write before the deadline: $(cat "$T/single.out" "$T/single.err")"
grep -q 'made read-only' "$T/single.err" && fail "single: protected before its deadline: $(cat "$T/single.err")"
comms=$(cat /proc/"$threaded"/task/*/comm)
grep -qx pmalloc-timer <<<"$comms" || fail "threaded: no timer thread of the shim's: $comms"
pass "before the deadline: one task in the single-threaded process, the timer thread in the other; writes go through"

# Past the deadline: the threaded one is protected with no call of its own.
while [ $(($(date +%s) - t0)) -lt 31 ]; do sleep 1; done
wait_until 100 grep -q 'made read-only (on-wait:fallback)' "$T/threaded.err" ||
	fail "threaded: not protected by its timer thread at its deadline: $(cat "$T/threaded.err")"
grep -q 'made read-only' "$T/single.err" &&
	fail "single: protected with no call of its own (a thread of the shim's?): $(cat "$T/single.err")"
pass "the timer thread protected the threaded process at its deadline"

# The single-threaded one: its next read returns past the deadline.
send single threads
wait_until 100 has single '^threads' 2 || fail "single: no answer: $(cat "$T/single.out" "$T/single.err")"
grep -q 'made read-only (on-wait:fallback)' "$T/single.err" ||
	fail "single: its read past the deadline did not protect: $(cat "$T/single.err")"
[ "$(sed -n '$p' "$T/single.out")" = 'threads 1' ] || fail "single: a thread appeared: $(cat "$T/single.out")"
for name in single threaded; do
	send "$name" write
	pid=$single; [ "$name" = threaded ] && pid=$threaded
	wait "$pid"; rc=$?
	[ "$rc" = $((128 + 11)) ] || fail "$name: the write after the fallback: exit $rc, want SIGSEGV: $(cat "$T/$name.out" "$T/$name.err")"
	grep -q 'enforce: killed by SIGSEGV' "$T/$name.err" || fail "$name: no report line: $(cat "$T/$name.err")"
done
pass "past the deadline both are protected (on-wait:fallback), the single-threaded one as its read returned; each write killed"

# Routing quiet 30 s after every pool closed (at 1 s), at a wait.
while [ $(($(date +%s) - t0)) -lt 33 ]; do sleep 1; done
grep -q 'made read-only (after:1000ms)' "$T/quiet.err" || fail "quiet: not protected at after:1s: $(cat "$T/quiet.err")"
send quiet poll
wait_until 100 grep -q 'allocations go to the heap unrouted' "$T/quiet.err" ||
	fail "quiet: routing not quiet at a wait 30 s after the pools closed: $(cat "$T/quiet.err")"
send quiet alloc
wait_until 100 grep -qx allocated "$T/quiet.out" || fail "quiet: an allocation: $(cat "$T/quiet.out" "$T/quiet.err")"
kill -HUP "$quiet"
sleep 0.2
send quiet poll
wait_until 100 grep -q 'allocations routed again (a reload)' "$T/quiet.err" ||
	fail "quiet: a reload's signal did not put routing back: $(cat "$T/quiet.err")"
send quiet alloc
wait_until 100 has quiet '^allocated' 2 || fail "quiet: an allocation in the reload: $(cat "$T/quiet.out" "$T/quiet.err")"
send quiet poll
wait_until 100 grep -q 'reload 1 done' "$T/quiet.err" || fail "quiet: the reload window did not end: $(cat "$T/quiet.err")"
send quiet write-last
wait "$quiet"; rc=$?
[ "$rc" = $((128 + 11)) ] ||
	fail "quiet: the reload's allocation not in the pool's new generation (exit $rc): $(cat "$T/quiet.out" "$T/quiet.err")"
pass "routing quiet 30 s after every pool closed, at a wait; a reload's signal put it back: its allocation protected at the window's end"
