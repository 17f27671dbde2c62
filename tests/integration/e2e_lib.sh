# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_lib.sh - shared by the end-to-end tests (e2e_*.sh), sourced after
# nothing else: it sources lib.sh and daemon_lib.sh itself.  (tests/run-tests
# does not run *_lib.sh files.)
#
# The end-to-end tests run the real pieces together: the real pmallocd on a
# test socket ($SOCK, config $CONF, root-owned 0644), the real shim preloaded
# into real programs, and a real systemd-journald.  Programs get
# PMALLOC_CONF=$NOFILE (a file that does not exist), so unless a test says
# otherwise the daemon is their only source of policy.
#
# Gives, besides lib.sh's and daemon_lib.sh's helpers:
#   hardened OUT ERR CMD...   CMD under the shim (daemon only; E2E_CONF names
#                             a policy file instead of $NOFILE), stdout and
#                             stderr to files, killed after E2E_TIMEOUT s
#                             (default 20); returns CMD's status (139:
#                             SIGSEGV); its pid in $HPID; E2E_DEBUG=1 sets
#                             PMALLOC_DEBUG=1
#   jnow FILTER...            journal entries (JSON lines) of this test run
#                             (since $E2E_SINCE: pids get reused, the journal
#                             remembers) matching the journalctl FILTERs
#   jsel N FILTER...          the same, once at least N are there (synced;
#                             waits up to 10 s; fails when they are not)
#   parse_report LINE         the shim's stderr report line, split into
#                             R_PID R_POOL R_ADDR R_OFF R_SIZE R_OBJ R_SITE
#                             R_IP R_LOC R_POLICY R_TAIL; false if it is none
#   private_journal_dir       (below) no journal sockets, in a private mount
#                             namespace
#   sym_off BIN SYMBOL        SYMBOL's offset in BIN (nm), as a number
#   expect_site BIN SITE CALLEE  SITE ("fn+0xN") is a return address just
#                             after a call to CALLEE in BIN (objdump)
#   fault_symbol BIN LOC SYMBOL  "SYMBOL+0xN" for LOC ("bin+0xOFF", as the
#                             stderr line gives it), checking LOC is in BIN
#   count_is N LINES          LINES (JSON entries) are exactly N
#   expect_violation E MODE POLICY EXE  entry E is the victim's report
#                             (R_ADDR, R_SITE, R_IP; pool config, 16 bytes)
#   at_exit_first FN          FN runs at exit before the clean-ups so far
#   victim_conf FILE POLICY EXE POOL TRIGGER [MODE] [DAEMON]
#                             FILE holds one policy POLICY for */EXE (in
#                             MODE), one pool POOL of the victims' site
#                             "setup" protected at TRIGGER; DAEMON (e.g.
#                             "report_burst = 5;") goes in the daemon group
#   run_fed PROG...           PROG under the shim (hardened, $T/out and
#                             $T/err) in the background, fed through the
#                             fifo $T/cmds on fd 3; $runner waits for it
#   hold_served [TRIES]       e2e_hold under the shim and pmallocd, in the
#                             background (60 s at most), fed through the
#                             fifo $T/in on fd 7, "listening": its pid in
#                             $hpid, its output in $T/hold.out, .err
#   line_load WHAT N          N one-line requests WHAT to 127.0.0.1:$PORT, a
#                             connection each, each answered (life_server)
#   sites_of FILE             the sites a policy file names, sorted
#
# A test that needs a private mount namespace (private_journal_dir) sets
# E2E_PRIVATE_NS_WHY ("to hide the journal in") before sourcing this file:
# it then runs again under `unshare -m`, or is skipped without root.
if [ -n "${E2E_PRIVATE_NS_WHY:-}" ] && [ -z "${E2E_PRIVATE_NS:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null ||
		! unshare -m --propagation private true 2>/dev/null; then
		echo "skipped: needs root and unshare -m (a private mount namespace $E2E_PRIVATE_NS_WHY)"
		exit 77
	fi
	E2E_PRIVATE_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
NOFILE=$T/nonexistent.conf
DEMO=$B/progs/pmalloc-demo
HOLD=$B/progs/e2e_hold
[ -f "$SHIM" ] || fail "$SHIM not built"
for p in "$DEMO" "$HOLD" "$B/progs/e2e_fork" "$B/progs/e2e_mute" "$B/progs/e2e_sink"; do
	[ -x "$p" ] || fail "$p not built"
done
for t in timeout nm objdump readelf journalctl; do
	command -v "$t" >/dev/null || skip "$t not installed"
done
unset PMALLOC_DEBUG

HPID=
hardened() {
	local out=$1 err=$2 rc
	shift 2
	rm -f "$T/hardened.pid"
	# bash -c writes its pid, then env and the program exec in its place.
	# The subshell keeps bash's "Segmentation fault" notice out of the log.
	(timeout -s KILL "${E2E_TIMEOUT:-20}" bash -c 'echo $$ >"$0"; exec "$@"' "$T/hardened.pid" \
		env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="${E2E_CONF:-$NOFILE}" \
		${E2E_DEBUG:+PMALLOC_DEBUG=1} "$@" >"$out" 2>"$err"
	exit $?) 2>/dev/null
	rc=$?
	HPID=$(cat "$T/hardened.pid" 2>/dev/null)
	return $rc
}

# This run's start; journalctl and pmallocctl take "@SECONDS.FRACTION".
E2E_SINCE="@$(date +%s.%6N)"
jnow() { journalctl --no-pager -o json --since "$E2E_SINCE" "$@" 2>/dev/null; }

jsel() {
	local n=$1 tries=100 out
	shift
	while :; do
		journalctl --sync 2>/dev/null
		out=$(jnow "$@")
		[ "$(printf '%s' "$out" | grep -c .)" -ge "$n" ] && break
		tries=$((tries - 1))
		if [ $tries -le 0 ]; then
			printf '%s\n' "$out"
			return 1
		fi
		sleep 0.1
	done
	printf '%s\n' "$out"
}

# The exact form of report.c's line; every part captured.
parse_report() {
	local re='^pmalloc\[([0-9]+)\]: write to protected pool "([^"]*)" at (0x[0-9a-f]+): offset ([0-9]+) in ([0-9]+)-byte object (0x[0-9a-f]+) allocated at ([^ ;]+); ip (0x[0-9a-f]+) \(([^ )]+)\); policy "([^"]*)"; (enforce: killed by SIGSEGV|audit: write allowed)$'
	[[ $1 =~ $re ]] || return 1
	R_PID=${BASH_REMATCH[1]} R_POOL=${BASH_REMATCH[2]} R_ADDR=${BASH_REMATCH[3]}
	R_OFF=${BASH_REMATCH[4]} R_SIZE=${BASH_REMATCH[5]} R_OBJ=${BASH_REMATCH[6]}
	R_SITE=${BASH_REMATCH[7]} R_IP=${BASH_REMATCH[8]} R_LOC=${BASH_REMATCH[9]}
	R_POLICY=${BASH_REMATCH[10]} R_TAIL=${BASH_REMATCH[11]}
	[ $((R_OBJ + R_OFF)) = $((R_ADDR)) ] || fail "report line: object $R_OBJ + offset $R_OFF is not $R_ADDR"
}

sym_off() {
	local a
	a=$(nm "$1" | awk -v s="$2" '$3 == s { print $1; exit }')
	[ -n "$a" ] || fail "no symbol $2 in $1"
	echo $((0x$a))
}

expect_site() {
	local bin=$1 site=$2 callee=$3 fn off ra insn
	fn=${site%%+0x*}
	off=${site#*+0x}
	[ "$fn+0x$off" = "$site" ] || fail "site '$site' is not FUNCTION+0xOFFSET"
	ra=$(($(sym_off "$bin" "$fn") + 0x$off))
	# The instruction that ends at the return address is a call to CALLEE
	# (a direct call is 5 bytes on x86-64).
	insn=$(objdump -d --no-show-raw-insn --start-address=$((ra - 5)) --stop-address=$ra "$bin" |
		grep -E '^ +[0-9a-f]+:' | tail -n 1)
	case $insn in
	*call*"<$callee>"*) ;;
	*) fail "site $site: the instruction before it is not a call to $callee: '$insn'" ;;
	esac
}

fault_symbol() {
	local bin=$1 loc=$2 sym=$3 off
	[ "${loc%+0x*}" = "$(basename "$bin")" ] || fail "fault location $loc is not in $(basename "$bin")"
	off=$((0x${loc##*+0x} - $(sym_off "$bin" "$sym")))
	[ $off -ge 0 ] || fail "fault location $loc is before $sym"
	printf '%s+0x%x\n' "$sym" $off
}

count_is() { [ "$(printf '%s' "$2" | grep -c .)" = "$1" ]; }
# expect_violation E MODE POLICY EXE: entry E is the victim's violation
# report as its stderr line gave it (parse_report's R_ADDR, R_SITE, R_IP):
# pool "config" of POLICY in MODE (enforce: priority 2, audit: 4), a
# 16-byte object written at offset 0, by EXE.
expect_violation() {
	local e=$1 prio=2
	[ "$2" = audit ] && prio=4
	expect_field "$e" PRIORITY $prio
	expect_field "$e" PMALLOC_MODE "$2"
	expect_field "$e" PMALLOC_POLICY "$3"
	expect_field "$e" PMALLOC_POOL config
	expect_field "$e" PMALLOC_ADDRESS "$R_ADDR"
	expect_field "$e" PMALLOC_OFFSET 0
	expect_field "$e" PMALLOC_OBJECT_SIZE 16
	expect_field "$e" PMALLOC_OBJECT_SITE "$R_SITE"
	expect_field "$e" PMALLOC_FAULT_IP "$R_IP"
	expect_field "$e" PMALLOC_EXE "$4"
}

# private_journal_dir: in a private mount namespace (E2E_PRIVATE_NS_WHY,
# above), hide the machine's journal sockets under an empty
# tmpfs, so "no journald" (or a fake one) is what the pieces see while the
# machine's journald runs on untouched.  Refuses to mount anything in the
# machine's own namespace.
JOURNAL_DIR=/run/systemd/journal
private_journal_dir() {
	[ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] ||
		fail "not in a private mount namespace: refusing to hide the machine's journal"
	if [ -d "$JOURNAL_DIR" ]; then
		mount -t tmpfs -o mode=0755 pmalloc-e2e "$JOURNAL_DIR" || fail "cannot mount a tmpfs on $JOURNAL_DIR"
	else
		mount -t tmpfs -o mode=0755 pmalloc-e2e /run || fail "cannot mount a tmpfs on /run"
		mkdir -p "$JOURNAL_DIR"
	fi
	[ -z "$(ls -A "$JOURNAL_DIR")" ] || fail "$JOURNAL_DIR is not empty"
}


victim_conf() {
	write_conf "$1" <<EOF
version = 1;
${7:+daemon = { $7 \};}
policies = (
  {
    name = "$2";
    match = { exe = [ "*/$3" ]; };
    ${6:+mode = \"$6\";}
    pools = ( { name = "$4"; sites = [ "setup" ]; protect = [ "$5" ]; } );
  }
);
EOF
}

runner=
run_fed() {
	mkfifo "$T/cmds"
	hardened "$T/out" "$T/err" "$@" <"$T/cmds" &
	runner=$!
	exec 3>"$T/cmds"
}

hold_bg= hpid=
_hold_stop() { [ -n "$hold_bg" ] && kill -KILL "$hold_bg" 2>/dev/null; exec 7>&-; true; }
hold_served() {
	mkfifo "$T/in"
	exec 7<>"$T/in"
	at_exit _hold_stop
	(timeout -s KILL 60 bash -c 'echo $$ >"$0"; exec "$@"' "$T/hold.pid" \
		env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$NOFILE" "$(readlink -f "$HOLD")" \
		<"$T/in" >"$T/hold.out" 2>"$T/hold.err" 7>&-
	exit $?) 2>/dev/null 7>&- &
	hold_bg=$!
	wait_until "${1:-200}" grep -qx listening "$T/hold.out" ||
		fail "e2e_hold did not start: $(cat "$T/hold.out" "$T/hold.err")"
	hpid=$(cat "$T/hold.pid")
}

# at_exit_first FN: run FN at exit before the clean-ups registered so far
# (daemon_lib.sh's SIGTERM-and-wait would wait forever on a stopped daemon).
at_exit_first() { _cleanup_fns=("$1" "${_cleanup_fns[@]}"); }

# line_load WHAT N: N requests of one line, WHAT, to 127.0.0.1:$PORT, each
# on a connection of its own; fails on a request not answered (with the
# end of $T/server.err, where a killed server's report is).
line_load() {
	local i reply
	for i in $(seq "$2"); do
		exec 3<>"/dev/tcp/127.0.0.1/$PORT" || fail "connect $PORT"
		printf '%s\n' "$1" >&3
		IFS= read -r reply <&3 || fail "$1 request $i not answered: $(tail -n 3 "$T/server.err" 2>/dev/null)"
		exec 3>&-
	done
}
# sites_of FILE: the sites a policy file names, one a line, sorted.
sites_of() { sed -n '/sites = \[/,/\]/p' "$1" | grep -o '"[^"]*"' | sort; }
