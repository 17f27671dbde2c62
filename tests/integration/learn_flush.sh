# SPDX-License-Identifier: GPL-2.0-or-later
# learn_flush.sh - pmallocctl learn-flush PID: a process served a learn
# policy by pmallocd writes what it learned to the journal while it runs
# (PMALLOC_LEARN_REASON=learn-flush), and again when it exits (propose then
# counts what the learn-flush said was live, not the exit's); a PID that
# pmallocd does not serve is refused with exit 1, and so is the forked
# child of a process that has exited (a daemon that forked away from its
# starter, as nginx's master), saying so.  pmallocctl sites PID prints the
# same as a table, believing only the rows of the process and pmallocd's
# (root's process named pmallocd, or in pmallocd.service).
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/learn_prog
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
journald_ensure
unset PMALLOC_DEBUG
write_conf "$CONF" <<EOF
version = 1;
policies = ( { name = "lp"; match = { exe = [ "*/learn_prog" ]; }; mode = "learn";
  pools = ( { name = "setup"; sites = [ "*" ]; protect = [ "on-call:listen" ]; } ); },
  { name = "py"; match = { exe = [ "*/python3*" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-wait" ]; } ); } );
EOF
start_daemon

mkfifo "$T/in"
PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$T/nonexistent LD_PRELOAD=$SHIM "$PROG" hold <"$T/in" >"$T/out" 2>"$T/err" &
ppid=$!
exec 9>"$T/in"
wait_until 200 grep -q '^ready' "$T/out" || fail "learn_prog did not get ready: $(cat "$T/out" "$T/err")"
"$B/pmallocctl" learn-flush "$ppid" --socket "$SOCK" >"$T/ans" 2>&1 || fail "learn-flush: $(cat "$T/ans")"
grep -q '^ok: learn-flush sent' "$T/ans" || fail "learn-flush answer: $(cat "$T/ans")"
got() {
	journal_sync
	[ "$(journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID="$ppid" \
		PMALLOC_LEARN_REASON="$1" | grep -c .)" -ge 3 ]
}
wait_until 100 got learn-flush || fail "no learn-flush entries from PID $ppid"
kill -0 "$ppid" || fail "learn_prog is gone"
out=$(journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID="$ppid")
printf '%s\n' "$out" | grep '"PMALLOC_SITE":"load_config"' | grep -q '"PMALLOC_WRITTEN":"0"' ||
	fail "load_config not learned as unwritten: $out"
# Served by pmallocd: the policy's load time is the daemon's load of the
# file, at or after this script's start, not in the future.
loaded=$(printf '%s\n' "$out" | sed -n 's/.*"PMALLOC_POLICY_LOADED":"\([0-9]*\)".*/\1/p' | sort -u)
[ "$(printf '%s\n' "$loaded" | wc -l)" = 1 ] && [ "$(( loaded / 1000000 ))" -ge "${TEST_SINCE#@}" ] &&
	[ "$(( loaded / 1000000 ))" -le "$(date +%s)" ] || fail "PMALLOC_POLICY_LOADED from pmallocd: $loaded"
"$B/pmallocctl" sites "$ppid" --socket "$SOCK" >"$T/sites" 2>&1 || fail "sites: $(cat "$T/sites")"
head -n 1 "$T/sites" | grep -q '^POOL  *SITE  *OBJECTS  *BYTES  *WRITTEN$' || fail "sites header: $(cat "$T/sites")"
grep -q '^setup  *load_config  *1  *4096  *no$' "$T/sites" || fail "sites: no load_config row: $(cat "$T/sites")"
grep -q '^setup  *make_counter  *1  *8192  *yes$' "$T/sites" || fail "sites: no make_counter row: $(cat "$T/sites")"
pass "sites PID: the live table (pool, site, objects, bytes, written)"

# Another user writes rows naming the process while sites reads: not shown.
setpriv --reuid=61031 --regid=61031 --clear-groups sh -c 'for i in $(seq 30); do
	"$0" MESSAGE_ID='$MID_LEARNED' OBJECT_PID='$ppid' PMALLOC_LEARN_REASON=learn-flush \
		PMALLOC_POOL=setup PMALLOC_SITE=forged_site PMALLOC_OBJECTS=1 PMALLOC_BYTES=999999 \
		PMALLOC_WRITTEN=0 MESSAGE=forged; sleep 0.1; done' "$B/progs/journal_inject" &
fpid=$!
"$B/pmallocctl" sites "$ppid" --socket "$SOCK" >"$T/sites" 2>"$T/sites.err" || fail "sites: $(cat "$T/sites" "$T/sites.err")"
wait $fpid
grep -q forged_site "$T/sites" && fail "sites shows a forged row: $(cat "$T/sites")"
grep -q '^setup  *load_config  *1  *4096  *no$' "$T/sites" || fail "sites: no load_config row: $(cat "$T/sites")"
grep -qE "^pmallocctl: sites: [0-9]+ entr(y|ies) naming PID $ppid written by another process, not shown$" "$T/sites.err" ||
	fail "sites did not say it left rows out: $(cat "$T/sites.err")"
pass "sites PID: rows another user wrote naming the process are not shown, and said so"

# Root's process in pmallocd.service's cgroup under another name (for about
# a second after a start, journald can still name pmallocd by systemd's
# child before its exec, "(pmallocd)"): pmallocd's rows, shown.  The cgroup is ours, system.slice/pmallocd.service, in
# systemd's hierarchy (and the unified one on a hybrid layout), where no
# systemd runs as PID 1 to own one.
if [ "$(cat /proc/1/comm)" = systemd ]; then
	pass "sites PID: root's rows from pmallocd.service not tried (systemd is PID 1 and owns that unit)"
else
	cg= ucg=
	if grep -q '^[0-9]*:name=systemd:' /proc/self/cgroup && [ -d /sys/fs/cgroup/systemd ]; then
		cg=/sys/fs/cgroup/systemd/system.slice/pmallocd.service
		[ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] &&
			ucg=/sys/fs/cgroup/unified/system.slice/pmallocd.service
	elif [ -f /sys/fs/cgroup/cgroup.procs ]; then
		cg=/sys/fs/cgroup/system.slice/pmallocd.service
	fi
	[ -n "$cg" ] || fail "no systemd cgroup hierarchy to make pmallocd.service's cgroup in"
	# The slices too when this made them (rmdir leaves one in use).
	made=
	for d in "$cg" $ucg; do [ -d "${d%/*}" ] || made="$made ${d%/*}"; done
	rm_cgroup() { rmdir "$cg" $ucg $made 2>/dev/null; true; }
	at_exit rm_cgroup
	mkdir -p "$cg" $ucg || fail "cannot make $cg $ucg"
	sh -c 'echo $$ >"$1/cgroup.procs" && { [ -z "$2" ] || echo $$ >"$2/cgroup.procs"; } || exit 1
		for i in $(seq 15); do JOURNAL_INJECT_LINGER_MS=200 "$0" MESSAGE_ID='$MID_LEARNED' OBJECT_PID='$ppid' \
		PMALLOC_LEARN_REASON=learn-flush PMALLOC_POOL=setup PMALLOC_SITE=unit_site \
		PMALLOC_OBJECTS=1 PMALLOC_BYTES=777 PMALLOC_WRITTEN=0 MESSAGE=unit; sleep 0.1; done' \
		"$B/progs/journal_inject" "$cg" "$ucg" &
	upid=$!
	# sites reads the entries written from its request on, once its
	# process's flush is in: the writer's, one each 0.3 s, may all fall
	# outside that window (a fresh-clone CI run showed no row), so sites
	# is asked again while the writer writes; each writer stays 0.2 s
	# after its entry, so that journald attests its _UID and unit.
	unit_row_shown() {
		"$B/pmallocctl" sites "$ppid" --socket "$SOCK" >"$T/sites" 2>"$T/sites.err" &&
			grep -q '^setup  *unit_site  *1  *777  *no$' "$T/sites"
	}
	wait_until 40 unit_row_shown
	wait $upid || fail "the writer in pmallocd.service's cgroup failed"
	journal_sync
	# (Some entries may lack the fields: see below.)
	e=$(journalctl --no-pager -o json --since "$TEST_SINCE" PMALLOC_SITE=unit_site)
	printf '%s\n' "$e" | grep '"_SYSTEMD_UNIT":"pmallocd.service"' | grep '"_UID":"0"' |
		grep -q '"_COMM":"journal_inject"' || fail "no entry from root's journal_inject in pmallocd.service: $e"
	grep -q '^setup  *unit_site  *1  *777  *no$' "$T/sites" ||
		fail "sites hides root's rows from pmallocd.service: $(cat "$T/sites" "$T/sites.err")"
	# (Not asserted: that none is left out.  journald reads a sender's
	# /proc entries after its message, and one already gone has no _UID
	# or _SYSTEMD_UNIT in its entry: rightly not believed.)
	grep -q '^setup  *load_config  *1  *4096  *no$' "$T/sites" || fail "sites: no load_config row: $(cat "$T/sites")"
	pass "sites PID: root's rows from pmallocd.service, under another name (_COMM journal_inject), are pmallocd's"
fi
exec 9>&-
wait "$ppid" || fail "learn_prog exited $?: $(cat "$T/err")"
wait_until 100 got exit || fail "no exit entries from PID $ppid"
pass "learn-flush: a running learn process writes its sites (reason learn-flush), then again at exit"

# propose of that run: each context's counts are the learn-flush's, not
# its exit entry's (a later flush, whose frees and live bytes are the
# shutdown's and not counted), what was written since kept.
run=$(journalctl --no-pager -o cat --output-fields=PMALLOC_RUN --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED \
	OBJECT_PID="$ppid" | head -n 1)
"$B/pmallocctl" propose --exe "$PROG" --since "$TEST_SINCE" --run "$run" >"$T/proposed.conf" 2>"$T/perr" ||
	fail "propose: $(cat "$T/perr")"
grep -q '^ *#   site "learn_prog:load_config": 4096 bytes live' "$T/proposed.conf" ||
	fail "load_config not proposed with its 4096 bytes live: $(grep 'load_config\|# protected' "$T/proposed.conf")"
grep -q 'make_counter"' "$T/proposed.conf" && fail "the written counter proposed: $(cat "$T/proposed.conf")"
pass "propose after a learn-flush and the exit: the learn-flush's counts (load_config's 4096 bytes live), the exit's written marks"

"$B/pmallocctl" learn-flush 999999 --socket "$SOCK" >"$T/ans" 2>&1 && fail "learn-flush of an unknown PID succeeded"
grep -q "^pmallocctl: PID 999999 is not connected" "$T/ans" || fail "unknown PID: $(cat "$T/ans")"
pass "learn-flush of a process pmallocd does not serve: refused"

# A daemon that forked away from its starter: the child shares the exited
# parent's connection and reads no orders; the answer says that parent is
# gone (not "ask PID parent") and how its learning reaches the journal.
# (The child's first wait, select(2), protects its pool: pmallocd learns of
# the child from that message on the shared connection.)
if [ -x /usr/bin/python3 ]; then
	PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$T/nonexistent LD_PRELOAD=$SHIM /usr/bin/python3 -c '
import os, select, sys
if os.fork():
    sys.exit(0)
print(os.getpid(), flush=True)
select.select([], [], [], 60)' >"$T/daemon.out" 2>"$T/daemon.err" &
	wait $!
	wait_until 100 test -s "$T/daemon.out" || fail "the daemonized child said nothing: $(cat "$T/daemon.err")"
	child=$(cat "$T/daemon.out")
	kill_child() { kill "$child" 2>/dev/null; }
	at_exit kill_child
	wait_until 100 sh -c "'$B/pmallocctl' status --socket '$SOCK' | grep -q '^  PID $child .*forked child of PID'" ||
		fail "status does not list PID $child as a forked child: $("$B/pmallocctl" status --socket "$SOCK")"
	"$B/pmallocctl" learn-flush "$child" --socket "$SOCK" >"$T/ans" 2>&1 && fail "learn-flush of the daemonized child succeeded"
	grep -qE "^pmallocctl: PID $child is a forked child of PID [0-9]+, which has exited, .*stop the service" "$T/ans" ||
		fail "daemonized child: $(cat "$T/ans")"
	pass "learn-flush of a forked child whose parent exited: $(cat "$T/ans")"
fi
