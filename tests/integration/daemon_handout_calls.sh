# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_handout_calls.sh - what a hand-out costs pmallocd in system calls
# (their count, not their time: `make bench` measures the rate).  Under
# strace, every thread of it (the event loop and the identification
# worker, one file each), for clients one at a time and then a burst at
# once:
#   - every client gets its policy and its hand-out entry in the journal;
#   - the ids come from the client's pidfd (PIDFD_GET_INFO, where the kernel
#     has it), not from a read of /proc/PID/status, and with no poll();
#   - a closed client leaves the epoll set with its descriptor (no
#     EPOLL_CTL_DEL), and the loop re-arms no timer per client;
#   - a served client costs at most HANDOUT_CALLS calls of work in all
#     threads together (accept to close, its journal entry and the
#     hand-over between the threads included), the waiting apart;
#   - clients one at a time are identified by the loop itself, the
#     worker idle (no call of its but its wait); of a burst, the worker
#     identifies some, and the loop reads no other /proc file than the
#     worker would;
#   - clients that tell their comm in the HELLO (as the shim does) have
#     none read, and the cgroup is read once per cgroup (v2 and hybrid
#     layouts), not once per client;
#   - status still tells a served process that runs (its start time read
#     when status asks).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

command -v strace >/dev/null || skip "strace not installed"
strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
# All calls together were 25 while one thread did it all, 18.8 with the
# identification worker, the comm told in the HELLO and the cgroup known by
# its id, and 22 to 23 on a loaded host: the waiting calls grow with the
# load (below).  The work alone: 14.2 a hand-out, loaded or not; 11.8 with
# a HELLO alone in its batch identified by the loop (no hand-over: the
# worker's wake-up, its eventfd write, the loop's read of it).
HANDOUT_CALLS=16
HANDOUT_WAITS=30
SEQ=20 BURST=24

journald_ensure
std_conf "$CONF"
start_daemon
ntasks=$(ls /proc/"$DPID"/task | wc -l)
[ "$ntasks" -ge 2 ] || fail "pmallocd runs $ntasks thread(s), want the loop and the worker"
# -ff: one file per thread, trace.TID (no interleaving of two threads' calls).
strace -qq -ff -o "$T/trace" -p "$DPID" &
SPID=$!
strace_stop() { kill -INT "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; true; }
at_exit strace_stop
# Traced once it makes a call seen in the trace (a status request), every thread attached.
wait_until 100 sh -c "\"$WIRE\" --socket \"$SOCK\" --status >/dev/null && grep -q . \"$T/trace.$DPID\" &&
	[ \$(ls \"$T\"/trace.* | wc -l) = $ntasks ]" ||
	fail "strace did not attach to $ntasks threads: $(ls "$T"/trace.*; cat "$T/trace.$DPID")"
# Lines traced before the clients, per thread.
for f in "$T"/trace.*; do echo "$f $(wc -l <"$f")"; done >"$T/start"

pids=()
for i in $(seq $SEQ); do
	out=$(client --comm wire_client) || fail "client $i: $out"
	printf '%s\n' "$out" | grep -qx "POLICY generation=1" || fail "client $i: no policy: $out"
	pids+=("$(printf '%s\n' "$out" | sed -n 's/^pid=//p')")
done
# Where each thread's trace stood when the burst began.
for f in "$T"/trace.*; do echo "$f $(wc -l <"$f")"; done >"$T/seq"
for i in $(seq $BURST); do client --comm wire_client >"$T/burst.$i" 2>&1 & done
wait_until 200 sh -c "[ \$(cat \"$T\"/burst.* | grep -c '^POLICY generation=1\$') = $BURST ]" ||
	fail "a burst of $BURST clients: $(grep -L '^POLICY' "$T"/burst.* | head -n 3 | xargs cat)"
for i in $(seq $BURST); do pids+=("$(sed -n 's/^pid=//p' "$T/burst.$i")"); done
pass "$SEQ clients one at a time and $BURST at once all got their policy"

e=$(jwait $((SEQ + BURST)) MESSAGE_ID="$MID_HANDED")
for p in "${pids[@]}"; do
	printf '%s\n' "$e" | grep -q "\"OBJECT_PID\":\"$p\"" || fail "no hand-out entry for PID $p"
done
pass "each has its hand-out entry in the journal"

# The last client's close must be in the trace before it stops.
wait_until 100 sh -c "grep -q '^close(' \"$T/trace.$DPID\"" || true
sleep 0.2
strace_stop
# What each thread did for the clients: the loop's alone, and all threads'.
while read -r f lines; do
	tail -n +"$((lines + 1))" "$f" >"$f.served"
done <"$T/start"
# The one-at-a-time clients' part of each thread's trace, and the burst's.
while read -r f lines; do
	start=$(awk -v f="$f" '$1 == f { print $2 }' "$T/start")
	sed -n "$((start + 1)),${lines}p" "$f" >"$f.seq"
	tail -n +"$((lines + 1))" "$f" >"$f.burst"
done <"$T/seq"
cp "$T/trace.$DPID.served" "$T/loop"
cat "$T"/trace.*.served >"$T/served"
n=$((SEQ + BURST))

# Does this kernel answer PIDFD_GET_INFO (Linux 6.13)?  Asked of our own
# pidfd; without python3, the trace's own ioctl() says.
pidfd_info=no
if command -v python3 >/dev/null; then
	python3 -c 'import os, fcntl; fcntl.ioctl(os.pidfd_open(os.getpid()), 0xC040FF0B, bytearray(64))' \
		2>/dev/null && pidfd_info=yes
elif grep -q '^ioctl(.*= 0$' "$T/served"; then
	pidfd_info=yes
fi
if [ $pidfd_info = yes ]; then
	status=$(grep -c '^openat(.*"/proc/[0-9]*/status"' "$T/served")
	[ "$status" = 0 ] || fail "$status reads of /proc/PID/status with PIDFD_GET_INFO answering: $(grep -m 2 '/status"' "$T/served")"
	polls=$(grep -c '^poll(' "$T/served")
	[ "$polls" = 0 ] || fail "$polls poll() calls with PIDFD_GET_INFO answering"
	pass "ids from PIDFD_GET_INFO: no /proc/PID/status read, no poll"
else
	echo "(no PIDFD_GET_INFO in this kernel: /proc/PID/status is read instead)"
fi

# Clients' descriptors are those accept4() returned (the journal's socket
# has its own EPOLLOUT watch, added and removed as journald keeps up).
del=$(awk '/^accept4\(.*= [0-9]+$/ { fd[$NF] = 1 }
	/EPOLL_CTL_DEL/ { split($0, a, /[(,]/); if (fd[a[2] + 0]) n++ } END { print n + 0 }' "$T/loop")
[ "$del" = 0 ] || fail "$del EPOLL_CTL_DEL calls on clients' descriptors for $n clients"
rearm=$(grep -c '^timerfd_settime(' "$T/served")
[ $((rearm * 4)) -le $n ] || fail "$rearm timer re-arms for $n clients"
pass "no EPOLL_CTL_DEL, $rearm timer re-arms for $n clients"

# The calls that do the work, and those whose number is the scheduler's:
# how many clients one wake-up finds (a loaded host wakes the threads more
# often, each wake-up its epoll_wait, futex and sd-event's gettid, and an
# accept4 or recvmsg answered EAGAIN at the end of each batch).  The bar
# is on the work; the waiting is shown, and bounded only against a spin.
calls=$(grep -c '^[a-z_0-9]*(' "$T/served")
waits=$(grep -c -e '^epoll_wait(' -e '^futex(' -e '^gettid(' -e '= -1 EAGAIN' "$T/served")
work=$((calls - waits))
per=$(awk -v c="$work" -v n="$n" 'BEGIN { printf "%.1f", c / n }')
wper=$(awk -v c="$waits" -v n="$n" 'BEGIN { printf "%.1f", c / n }')
breakdown() { grep -v -e '^epoll_wait(' -e '^futex(' -e '^gettid(' -e '= -1 EAGAIN' "$T/served" | sed 's/(.*//' | sort | uniq -c | sort -rn | head -n 20 | tr '\n' ' '; }
awk -v p="$per" -v m="$HANDOUT_CALLS" 'BEGIN { exit !(p <= m) }' ||
	fail "$per system calls of work per hand-out ($work for $n), want at most $HANDOUT_CALLS: $(breakdown)"
awk -v p="$wper" -v m="$HANDOUT_WAITS" 'BEGIN { exit !(p <= m) }' ||
	fail "$wper waiting calls per hand-out ($waits for $n), want at most $HANDOUT_WAITS (a spinning loop?)"
pass "$per system calls of work per hand-out ($work for $n clients, all threads, at most $HANDOUT_CALLS), $wper waiting"

# Clients one at a time: each HELLO comes alone while the worker waits,
# and the loop identifies it itself (server.c): the worker makes no call
# (its wait on its condition variable, under way when strace attached, may
# end in the trace).
# A burst: HELLOs come several to a wake-up, and the worker has its share.
# The loop, that made every accept4, reads of /proc no more than the
# worker would (exe, and a cgroup once: no comm, no status).
accepts=$(grep -c '^accept4(.*= [0-9]*$' "$T/loop")
[ "$accepts" -ge $n ] || fail "the loop accepted $accepts clients, want $n"
exes=$(grep -h -c '^readlink("/proc/[0-9]*/exe"' "$T"/trace.*.served | awk '{ s += $1 } END { print s + 0 }')
[ "$exes" -ge $n ] || fail "$exes reads of /proc/PID/exe for $n hand-outs"
loop_seq=$(grep -c '^readlink("/proc/[0-9]*/exe"' "$T/trace.$DPID.seq")
[ "$loop_seq" = $SEQ ] || fail "the loop read the exe of $loop_seq of $SEQ clients that came one at a time"
worker_seq=$(cat $(ls "$T"/trace.*.seq | grep -v "trace\.$DPID\.seq$") | grep -v -e '^futex(' -e '^[^a-z]' | grep -c '^[a-z_0-9]*(')
[ "$worker_seq" = 0 ] || fail "the worker made $worker_seq calls for $SEQ clients one at a time: $(cat $(ls "$T"/trace.*.seq | grep -v "trace\.$DPID\.seq$") | grep -v '^futex(' | head -n 3)"
worker_burst=$(cat $(ls "$T"/trace.*.burst | grep -v "trace\.$DPID\.burst$") | grep -c '^readlink("/proc/[0-9]*/exe"')
[ "$worker_burst" -ge 1 ] || fail "the worker identified none of a burst of $BURST"
others=$(grep -E '^(openat|readlink)\(.*"/proc/[0-9]+/' "$T/loop" | grep -c -v -E '"/proc/[0-9]+/(exe|cgroup)"')
[ "$others" = 0 ] || fail "the loop read /proc $others times besides exe and cgroup: $(grep -E '"/proc/[0-9]+/' "$T/loop" | grep -v -E '/(exe|cgroup)"' | head -n 3)"
pass "the loop accepted all $n, identified the $SEQ that came one at a time itself (the worker made no call but its wait), the worker $worker_burst of the burst of $BURST"

# The comm came in each HELLO (as the shim sends it): none is read.  The
# cgroup is read once per cgroup where its id names it (cgroup v2, or a
# hybrid layout: cgroup_cache.c), and all these clients share one.
comms=$(grep -c '^openat(.*"/proc/[0-9]*/comm"' "$T/served")
[ "$comms" = 0 ] || fail "$comms reads of /proc/PID/comm for $n clients that told theirs"
cgroups=$(grep -c '^openat(.*"/proc/[0-9]*/cgroup"' "$T/served")
if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] ||
   [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
	[ "$cgroups" -le 1 ] || fail "$cgroups reads of /proc/PID/cgroup for $n clients in one cgroup"
	pass "no /proc/PID/comm read (the HELLOs told it), $cgroups of /proc/PID/cgroup for $n clients in one cgroup"
else
	pass "no /proc/PID/comm read (the HELLOs told it); legacy cgroup layout: $cgroups reads of /proc/PID/cgroup"
fi

# A hand-out reads no /proc/PID/stat: the start time
# status compares is read when status asks, and is that process's only if
# it started before its HELLO.  A served process that still runs is alive.
"$WIRE" --socket "$SOCK" --hold 5000 >"$T/held" 2>&1 &
HPID=$!
wait_until 100 sh -c "\"$WIRE\" --socket \"$SOCK\" --status | grep -q \"PID $HPID .*alive, served\"" ||
	fail "a served, running process is not alive in status: $(client --status | grep "PID $HPID")"
kill "$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null
pass "status: a process served without reading its start time is alive"

stop_daemon || fail "pmallocd exit $?"
pass "pmallocd stops cleanly"
