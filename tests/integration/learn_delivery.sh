# SPDX-License-Identifier: GPL-2.0-or-later
# learn_delivery.sh - learned entries arrive while the process runs
# (tests/progs/learn_deliver.c, PMALLOC_LEARN_INTERVAL=1):
#  - every context at the trigger, then what changed each interval: a
#    process killed by SIGKILL after its counter was written has that
#    write in the journal (a periodic entry), and propose uses each
#    context's latest entry, counts the earlier ones as superseded and
#    says the process sent no entry at exit;
#  - a write, then a wait call (a server's event loop once a request is
#    answered), then SIGTERM, which the program does not handle: the write
#    is in the journal, sent at that wait call (the interval is 60 s
#    there), and propose leaves the written counter out;
#  - a process that chroots into an empty directory and drops to nobody
#    still delivers at exit, under its executable's path (taken at start),
#    with its functions named (names kept from the first flush);
#  - a chrooted process's flush of more entries than journald's queue
#    holds (256 contexts; the queue: 10 datagrams without a booted
#    systemd) arrives whole: each entry waits for room on the socket kept
#    from before the chroot, as it does on the socket's path outside;
#  - a process that execs a set-user-ID program (the loader then ignores
#    LD_PRELOAD) says so in its exec entries, and propose counts it;
#  - on-wait's settle, first reached inside a chroot, still reads the
#    threads (/proc kept at the chroot call).
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/learn_deliver
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v jq >/dev/null || skip "jq not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock PMALLOC_LEARN_INTERVAL=1

mkdir -p "$T/bin" "$T/jail"
chmod 755 "$T" "$T/bin"
exe=$T/bin/learn_deliver
cp "$PROG" "$exe"
cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "deliver"; match = { exe = [ "$exe" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-call:listen" ]; } ); } );
EOC
chmod 644 "$T/learn.conf"

# start: the program, its input on fd 3 (a fifo), its pid in PID.
start() {
	# A "ready" left by the last start must not pass for this one's: the
	# program opens its output only once the fifo has a writer.
	rm -f "$T/in" "$T/out" "$T/err"
	mkfifo "$T/in"
	PMALLOC_CONF=${CONF:-$T/learn.conf} LD_PRELOAD=$SHIM "$exe" <"$T/in" >"$T/out" 2>"$T/err" &
	PID=$!
	exec 3>"$T/in"
	wait_until 100 grep -q '^ready' "$T/out" || fail "no ready: $(cat "$T/out" "$T/err")"
	OKS=0
}
# cmd LINE: one command, its "ok" awaited (the count read at each look).
oks() { [ "$(grep -c '^ok$' "$T/out")" -ge "$OKS" ]; }
cmd() {
	echo "$1" >&3
	OKS=$((OKS + 1))
	# (bounded at 30 s: a loaded host, a flush of the shim's thread under way)
	wait_until 600 oks || fail "no ok for $1: $(cat "$T/out" "$T/err")"
}
entries() {
	wait_until 40 journalctl --sync || fail "journalctl --sync keeps failing"
	journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID="$PID" >"$T/$1.json"
}
# some FILTER: true when an entry on stdin passes it (jq 1.6's -e looks
# at the last entry only).
some() { jq -s -e "any(.[]; $1)" >/dev/null; }
# ctx FILE FUNCTION: the entries of the context allocated by FUNCTION.
ctx() { jq -c --arg f "=$2 " 'select(.PMALLOC_CHAIN | contains($f))' "$T/$1.json"; }

# has_entries: the trigger's flush (on the shim's thread) reached the
# journal: its entries, or, for those journald did not take (a busy
# journald on a loaded machine: the shim waits 50 ms an entry, then sends
# them again at the next flush and counts them), a later flush's.
has_entries() {
	wait_until 40 journalctl --sync || fail "journalctl --sync keeps failing"
	[ -n "$(journalctl --no-pager -o cat --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID="$PID" \
		PMALLOC_LEARN_REASON=trigger)" ] ||
	[ -n "$(journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID="$PID" |
		jq -r 'select((.PMALLOC_LEARN_UNSENT | tonumber) > 0) | .PMALLOC_LEARN_SEQ' | head -n 1)" ]
}

# Killed: what the last interval before the kill saw is there.
start
wait_until 300 has_entries || fail "no entries at the trigger"
cmd write
# The next periodic flush (1 s) carries the write: awaited, then the kill.
counter_written() {
	journal_sync
	journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID="$PID" \
		PMALLOC_LEARN_REASON=periodic PMALLOC_WRITTEN=1 | grep -q '=make_counter '
}
wait_until 300 counter_written || fail "no periodic entry with the counter written"
kill -KILL $PID
wait $PID 2>/dev/null
exec 3>&-
entries killed
some '.PMALLOC_LEARN_REASON == "exit"' <"$T/killed.json" &&
	fail "an exit entry from a process killed by SIGKILL"
# The counter unwritten at the trigger: in the trigger's flush, or (not
# taken by journald then, counted) in the next one, before the write.
ctx killed make_counter | some '(.PMALLOC_LEARN_REASON == "trigger" and .PMALLOC_LEARN_SEQ == "1"
	or .PMALLOC_LEARN_REASON == "periodic" and (.PMALLOC_LEARN_UNSENT | tonumber) > 0)
	and .PMALLOC_WRITTEN == "0"' ||
	fail "no unwritten counter at the trigger: $(ctx killed make_counter | jq -c '[.PMALLOC_LEARN_REASON, .PMALLOC_LEARN_SEQ, .PMALLOC_WRITTEN, .PMALLOC_LEARN_UNSENT]')"
ctx killed make_counter | some '.PMALLOC_LEARN_REASON == "periodic" and .PMALLOC_WRITTEN == "1"
	and (.PMALLOC_LEARN_SEQ | tonumber) >= 2' ||
	fail "the counter's write did not arrive before the kill: $(ctx killed make_counter)"
[ "$(ctx killed make_config | jq -r .PMALLOC_WRITTEN | sort -u)" = 0 ] || fail "the configuration written: $(ctx killed make_config)"
[ "$(jq -r '.PMALLOC_LEARN_CTX' "$T/killed.json" | sort | uniq -d | head -n 1)" != "" ] ||
	fail "no context sent twice (trigger, then periodic)"
pass "a process killed by SIGKILL: its counter's write arrived in a periodic entry (interval 1 s)"

"$B/pmallocctl" propose --exe "$exe" --since "$TEST_SINCE" --run "$(jq -r .PMALLOC_RUN "$T/killed.json" | head -n 1)" \
	>"$T/proposed.conf" 2>"$T/perr" || fail "propose: $(cat "$T/perr")"
grep -q 'learn_deliver:make_config' "$T/proposed.conf" || fail "make_config not proposed: $(cat "$T/proposed.conf")"
grep -q 'make_counter"' "$T/proposed.conf" && fail "the written counter proposed: $(cat "$T/proposed.conf")"
grep -q 'superseded by a later flush [1-9]' "$T/perr" || fail "no superseded entries said: $(cat "$T/perr")"
grep -q '1 of the processes sent no entry at exit or exec' "$T/perr" || fail "the killed process not said: $(cat "$T/perr")"
grep -q '^ *# entries read [0-9]*: used [0-9]*, superseded by a later flush [1-9]' "$T/proposed.conf" ||
	fail "no count of entries in the proposal: $(grep '#' "$T/proposed.conf")"
pass "propose uses the latest entry per context, counts the superseded ones and the process without an exit entry"

# A write, the event loop's wait, then SIGTERM (not handled: no exit
# flush): the mark went to the journal at the wait, not at the interval.
# (No periodic flush sends again what journald did not take at the
# trigger, stalled for more than 50 ms an entry by other tests' floods:
# the run is then started again, twice at most.)
for try in 1 2 3; do
	PMALLOC_LEARN_INTERVAL=60 start
	wait_until 100 has_entries && break
	[ $try != 3 ] || fail "no entries at the trigger, 3 runs"
	kill -KILL $PID
	wait $PID 2>/dev/null
	exec 3>&-
done
cmd write
cmd poll
kill -TERM $PID
wait $PID 2>/dev/null
exec 3>&-
entries termed
ctx termed make_counter | some '.PMALLOC_WRITTEN == "1" and .PMALLOC_LEARN_REASON == "written"' ||
	fail "the counter's write did not arrive before SIGTERM: $(ctx termed make_counter | jq -c '[.PMALLOC_LEARN_REASON, .PMALLOC_LEARN_SEQ, .PMALLOC_WRITTEN]')"
"$B/pmallocctl" propose --exe "$exe" --since "$TEST_SINCE" --run "$(jq -r .PMALLOC_RUN "$T/termed.json" | head -n 1)" \
	>"$T/proposed.conf" 2>"$T/perr" || fail "propose: $(cat "$T/perr")"
grep -q 'learn_deliver:make_config' "$T/proposed.conf" || fail "make_config not proposed: $(cat "$T/proposed.conf")"
grep -q 'make_counter"' "$T/proposed.conf" && fail "the written counter proposed: $(cat "$T/proposed.conf")"
pass "a write, a wait call, then SIGTERM (interval 60 s): the mark arrived at the wait, the counter not proposed"

# chroot and setuid: delivered at exit, the executable named.
[ "$(id -u)" = 0 ] || skip "not root: chroot and setuid cannot be tried"
start
cmd "chroot $T/jail"
cmd "setuid 65534"
cmd write
echo exit >&3
wait $PID || fail "the chrooted run exited $?: $(cat "$T/err")"
exec 3>&-
entries jail
ctx jail make_counter | some ".PMALLOC_LEARN_REASON == \"exit\" and .PMALLOC_WRITTEN == \"1\"
	and .PMALLOC_EXE == \"$exe\"" ||
	fail "no exit entry of the written counter under $exe after chroot: $(jq -c '[.PMALLOC_LEARN_REASON, .PMALLOC_EXE, .PMALLOC_WRITTEN]' "$T/jail.json")"
pass "after chroot into an empty directory and setuid(nobody): exit entries arrive, executable and functions named"

# chroot, then 256 contexts, then the first wait (the trigger here): the
# trigger's flush and the exit's, from inside, arrive whole.
cat >"$T/wait.conf" <<EOC
version = 1;
policies = ( { name = "deliver"; match = { exe = [ "$exe" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-wait" ]; } ); } );
EOC
chmod 644 "$T/wait.conf"
CONF=$T/wait.conf start
cmd "chroot $T/jail"
cmd many
cmd poll
echo exit >&3
wait $PID || fail "the chrooted run exited $?: $(cat "$T/err")"
exec 3>&-
entries burst
# (Its frames unnamed: the symbol files are outside.  Its contexts: the
# 256 and the few of its start.)
n=$(jq -r .PMALLOC_LEARN_CTX "$T/burst.json" | sort -u | grep -c .)
[ "$n" -ge 256 ] || fail "$n contexts of a chrooted process in the journal, 256 or more made: $(jq -r '[.PMALLOC_LEARN_REASON, .PMALLOC_LEARN_UNSENT] | join(" ")' "$T/burst.json" | sort | uniq -c | tr '\n' ';')"
pass "a chrooted process's flushes of 256 contexts arrive whole (each entry waits for room in journald's queue)"

# A set-user-ID program of another user: the loader runs it in secure mode.
cp /bin/true "$T/bin/suid_true"
chown nobody "$T/bin/suid_true"
chmod 4755 "$T/bin/suid_true"
start
cmd write
echo "exec $T/bin/suid_true" >&3
wait $PID || fail "the exec'd program exited $?: $(cat "$T/err")"
exec 3>&-
entries secure
some ".PMALLOC_LEARN_REASON == \"exec\" and .PMALLOC_LEARN_SECURE_EXEC == \"1\"
	and .PMALLOC_LEARN_EXEC == \"$T/bin/suid_true\"" <"$T/secure.json" ||
	fail "no exec entry says the secure exec: $(jq -c '[.PMALLOC_LEARN_REASON, .PMALLOC_LEARN_EXEC, .PMALLOC_LEARN_SECURE_EXEC]' "$T/secure.json")"
"$B/pmallocctl" propose --exe "$exe" --since "$TEST_SINCE" --run "$(jq -r .PMALLOC_RUN "$T/secure.json" | head -n 1)" \
	>"$T/proposed.conf" 2>"$T/perr" || fail "propose: $(cat "$T/perr")"
grep -q "1 of the processes exec'd a program in secure mode" "$T/perr" || fail "secure exec not said: $(cat "$T/perr")"
grep -q "^ *# 1 of the processes exec'd a program in secure mode" "$T/proposed.conf" ||
	fail "secure exec not in the proposal: $(grep '#' "$T/proposed.conf")"
pass "an exec of a set-user-ID program (no LD_PRELOAD there) said in the exec entries and by propose"

# on-wait's settle inside a chroot: the main thread's first wait comes
# after the chroot (haproxy's worker), where "/proc" is gone; the settle
# reads the threads through /proc as kept at the chroot call, and waits.
cat >"$T/onwait.conf" <<EOC
version = 1;
policies = ( { name = "deliver"; match = { exe = [ "$exe" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-wait" ]; } ); } );
EOC
chmod 644 "$T/onwait.conf"
CONF=$T/onwait.conf PMALLOC_DEBUG=1 start
cmd "chroot $T/jail"
cmd poll
echo exit >&3
wait $PID || fail "the chrooted on-wait run exited $?: $(cat "$T/err")"
exec 3>&-
grep -q 'on-wait: other threads at rest after [0-9]* us$' "$T/err" ||
	fail "no settle inside the chroot: $(grep 'on-wait' "$T/err")"
pass "on-wait's settle reads the threads inside a chroot (/proc kept at the chroot call)"
