# SPDX-License-Identifier: GPL-2.0-or-later
# reload_generations.sh - a service's reload and a trigger that does not
# race, with the real pmallocd, journal and pmallocctl (SPEC "A service's
# life": reloads and generations, trigger).
#
# Reload: learn_server reload re-reads its configuration on SIGHUP on its
# main thread (twice), as nginx's master does: it writes its resolver state
# (allocated at start-up, as glibc's NSS state), frees the old
# configuration and reads a new one.  Learned under the generic policy with
# those reloads in the load, the proposal keeps the configuration and the
# resolver (coverage >= 90%: the reloads' allocations are learned as
# allocated before their generation's protect, the resolver's write in the
# reload is not a write while serving); under enforce the process lives
# through both reloads, each reload's configuration is a new generation
# (PMALLOC_GENERATION 2 and 3 in the journal, >= 90% of the first one's
# bytes, listed by pmallocctl status, text and --json), and a write into the
# configuration the last reload built still kills.
#
# Softstop: learn_server softstop stops as haproxy's old worker does at a
# reload (SIGUSR1, a reload signal of the shim's): its writes in a window
# still open when it exits are learned written; under enforce, the loop
# turning once more (the window closed before those writes), no kill.
#
# Race: learn_server race has a thread that waits (epoll_wait) at a time
# that varies between runs while the main thread still fills a table it
# allocated: on-wait fires on the main thread's first wait, so the proposal
# learned from one run is applied 20 times without a kill.
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"
# Each run is bounded (RUN_TIMEOUT seconds, then SIGKILL): a process that
# hangs in a reload fails the test, it never holds make check.
. "$SRC/tests/integration/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
ctl=$B/pmallocctl
[ -x "$B/progs/learn_server" ] || fail "learn_server is missing: run make check"
command -v jq >/dev/null || skip "jq not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$SOCK

mkdir -p "$T/reload" "$T/race"
cp "$B/progs/learn_server" "$T/reload/"
cp "$B/progs/learn_server" "$T/race/"

# learn_conf DIR: the generic learn policy for DIR/learn_server, named for
# this run (other trees run the same tests).
learn_conf() {
	write_conf "$CONF" <<EOF
version = 1;
policies = ( { name = "$1-$$"; match = { exe = [ "$T/$1/learn_server" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-wait" ]; } ); } );
EOF
}

# run DIR ARGS...: one run under the shim, at most RUN_TIMEOUT seconds (a
# run takes well under one; exit 124 or 137 when it hangs); its output in
# $T/out, pid in $PID (the program's own: sh writes its pid and execs it).
RUN_TIMEOUT=30
run() {
	local dir=$1 rc=0
	shift
	rm -f "$T/pid"
	timeout -k 5 "$RUN_TIMEOUT" sh -c 'echo $$ >"$1"; shift; exec env LD_PRELOAD="$0" "$@"' "$SHIM" "$T/pid" \
		"$T/$dir/learn_server" "$@" >"$T/out" 2>"$T/err" || rc=$?
	PID=$(cat "$T/pid" 2>/dev/null)
	[ $rc != 124 ] && [ $rc != 137 ] || fail "learn_server $*: still running after ${RUN_TIMEOUT} s (exit $rc): $(cat "$T/err")"
	return $rc
}

learned() { # DIR
	journal_sync
	journalctl --no-pager -q --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$T/$1/learn_server" |
		grep -q .
}

propose() {
	wait_until 200 learned "$1" || fail "$1: nothing learned in the journal"
	"$ctl" propose --mode enforce --exe "$T/$1/learn_server" --output "$T/$1.conf" 2>"$T/err" ||
		fail "$1: propose: $(cat "$T/err")"
	grep -q 'mode = "enforce"' "$T/$1.conf" || fail "$1: not an enforce policy: $(cat "$T/$1.conf")"
	write_conf "$CONF" <"$T/$1.conf"
	stop_daemon || true
	start_daemon
}

kills() { # DIR
	journal_sync
	journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_VIOLATION \
		PMALLOC_EXE="$T/$1/learn_server" | grep -c . || true
}

# ---- reload ----
learn_conf reload
start_daemon
run reload reload || fail "learn run exited $?: $(cat "$T/err")"
grep -q "^served 5 requests, config 16 entries, port 8080, 2 reloads, 3 lookups$" "$T/out" ||
	fail "learn run: $(cat "$T/out")"
propose reload
cov=$(sed -n 's/^    # protected: .*coverage \([0-9.]*\)%$/\1/p' "$T/reload.conf")
awk -v c="$cov" 'BEGIN { exit !(c >= 90) }' || fail "coverage $cov% learned with reloads: $(cat "$T/reload.conf")"
grep -q '"learn_server:parse_entry"\|"learn_server:xstrdup"' "$T/reload.conf" ||
	fail "the configuration is not proposed: $(cat "$T/reload.conf")"
grep -q '"learn_server:init_resolver"' "$T/reload.conf" ||
	fail "the resolver state (written only in reloads) is not proposed: $(cat "$T/reload.conf")"
pass "learned with 2 reloads in the load: coverage $cov%, configuration and resolver state proposed"

run reload reload || fail "enforce run with 2 reloads exited $?: $(cat "$T/err")"
grep -q "^served 5 requests, config 16 entries, port 8080, 2 reloads, 3 lookups$" "$T/out" ||
	fail "enforce run: $(cat "$T/out")"
[ "$(kills reload)" = 0 ] || fail "a violation in enforce with reloads"
gens=$(jwait 3 MESSAGE_ID=$MID_PROTECTED OBJECT_PID=$PID) || fail "3 pool-protected entries expected: $gens"
[ "$(printf '%s\n' "$gens" | jfield PMALLOC_GENERATION | tr '\n' ' ')" = "1 2 3 " ] ||
	fail "generations: $(printf '%s\n' "$gens" | jfield PMALLOC_GENERATION | tr '\n' ' ')"
[ "$(printf '%s\n' "$gens" | jfield PMALLOC_TRIGGER | tr '\n' ' ')" = "on-wait reload reload " ] ||
	fail "triggers: $(printf '%s\n' "$gens" | jfield PMALLOC_TRIGGER | tr '\n' ' ')"
# Each reload's generation as large as the first; the protected bytes the
# program still uses (protected less freed: the old configuration) after
# each reload >= 90% of those after the first trigger.
bytes=($(printf '%s\n' "$gens" | jfield PMALLOC_NEW_BYTES))
prot=($(printf '%s\n' "$gens" | jfield PMALLOC_PROTECTED_BYTES))
freed=($(printf '%s\n' "$gens" | jfield PMALLOC_FREED_BYTES))
for k in 1 2; do
	[ $(( bytes[k] * 10 )) -ge $(( bytes[0] * 9 )) ] ||
		fail "generation $((k + 1)): ${bytes[k]} bytes, generation 1: ${bytes[0]}"
	[ $(( (prot[k] - freed[k]) * 10 )) -ge $(( (prot[0] - freed[0]) * 9 )) ] ||
		fail "after reload $k: $((prot[k] - freed[k])) bytes protected in use, before: $((prot[0] - freed[0]))"
done
[ "${freed[2]}" -gt 0 ] || fail "the old configurations' frees are not counted: ${freed[*]}"
[ -n "$(printf '%s\n' "$gens" | jfield PMALLOC_POLICY_GENERATION | head -n 1)" ] ||
	fail "no PMALLOC_POLICY_GENERATION: $gens"
pass "enforce: 2 reloads lived through; generations 1 2 3 of ${bytes[*]} bytes in the journal, in use after each: $((prot[0] - freed[0])) $((prot[1] - freed[1])) $((prot[2] - freed[2]))"

"$ctl" status --socket "$SOCK" "$PID" >"$T/status" 2>&1 || fail "status: $(cat "$T/status")"
grep -q "generation 3: ${bytes[2]} bytes made read-only .* ago (reload), ${prot[2]} in all, ${freed[2]} of them freed since" "$T/status" ||
	fail "status shows no generations: $(cat "$T/status")"
"$ctl" status --socket "$SOCK" --json "$PID" >"$T/status.json" 2>&1 || fail "status --json: $(cat "$T/status.json")"
jq -e '[(.served + .exited)[] | .pools[].generations[] | .generation] == [1, 2, 3]' "$T/status.json" >/dev/null ||
	fail "status --json shows no generations: $(cat "$T/status.json")"
pass "pmallocctl status (text and --json) lists the generations"

rc=0
run reload reload inject || rc=$?
[ $rc = 139 ] || fail "a write into the reloaded configuration: exit $rc, expected 139: $(cat "$T/err")"
grep -q "write to protected pool \"all\" .* allocated at xstrdup+" "$T/err" ||
	fail "violation line: $(cat "$T/err")"
pass "a write into the configuration the last reload built kills"

# ---- softstop ----
# A stop by a reload signal, as haproxy's old worker makes it: the window
# the signal opens lets the stop's first write through (its handler
# record), then the loop turns once (learning) or twice (enforce: the
# worker's other thread acknowledged the stop later) before the resolver
# state is written (haproxy's deinit) and the process exits.  Learning's
# window is still open at that write (no wait was entered after one
# returned), enforce's is not: a process that ends with its window open
# has the contexts the window let it write marked written.  Before, the
# resolver was proposed, and enforce killed at the stop.
learn_conf softstop
mkdir -p "$T/softstop"
cp "$B/progs/learn_server" "$T/softstop/"
stop_daemon || true
start_daemon
run softstop softstop 1 || fail "softstop learn run exited $?: $(cat "$T/err")"
propose softstop
grep -q '"learn_server:parse_entry"\|"learn_server:xstrdup"' "$T/softstop.conf" ||
	fail "softstop: the configuration is not proposed: $(cat "$T/softstop.conf")"
! grep -q '"learn_server:init_resolver"' "$T/softstop.conf" ||
	fail "softstop: the resolver state, written after the stop's loop turned, is proposed: $(cat "$T/softstop.conf")"
run softstop softstop 2 || fail "softstop: enforce run exited $?: $(cat "$T/err")"
[ "$(kills softstop)" = 0 ] || fail "softstop: a violation in enforce"
pass "softstop: a stop's write in a window still open at exit is learned (its site not proposed); enforce turning twice: no kill"

# ---- race ----
learn_conf race
stop_daemon || true
start_daemon
run race race || fail "race learn run exited $?: $(cat "$T/err")"
propose race
grep -q '"learn_server:init_table"' "$T/race.conf" ||
	fail "the table filled after another thread waited is not proposed: $(cat "$T/race.conf")"
for n in $(seq 20); do
	run race race || fail "race: enforce run $n exited $?: $(cat "$T/err")"
done
[ "$(kills race)" = 0 ] || fail "race: a violation in enforce"
pass "race: the proposal applied 20 times, another thread waiting first at varying times: no kill"
