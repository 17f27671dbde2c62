# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_lib.sh - helpers for the pmallocd tests (daemon_*.sh), sourced
# after lib.sh.  Run on its own (as tests/run-tests does with every *.sh)
# it is the start/stop test: READY=1, SIGTERM, exit 0, socket removed.
#
# Gives: write_conf FILE (policy text on stdin; root-owned, 0644),
# start_daemon [ARGS] (the real pmallocd on $SOCK with $CONF, pid in $DPID,
# stderr in $T/daemon.log), stop_daemon (SIGTERM, returns the exit status),
# client ARGS (build/progs/wire_client on $SOCK), jentries FILTER... (the
# daemon's journal entries as JSON lines, synced first), jfield FIELD
# (values of FIELD in JSON lines on stdin), jwait N FILTER... (jentries once
# N entries are there), std_conf FILE [BURST INTERVAL], daemon_reload
# (SIGHUP, and the next policy generation awaited).

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	_daemon_lib_main=1
	. "$(dirname "$0")/lib.sh"
fi

PMALLOCD=$B/pmallocd
WIRE=$B/progs/wire_client
SOCK=$T/pmallocd.sock
CONF=$T/pmalloc.conf
DPID=

[ -x "$PMALLOCD" ] || fail "$PMALLOCD not built"
[ -x "$WIRE" ] || fail "$WIRE not built"
[ "$(id -u)" = 0 ] || skip "the daemon tests run as root (policy ownership, journald, setpriv)"
# Unprivileged clients must reach the socket under $T.
chmod 0755 "$T"

write_conf() {
	cat >"$1"
	chown root:root "$1"
	chmod 0644 "$1"
}

# The standard test policy: wire_client gets "demo" (enforce), with
# report_burst / report_interval_s as given (default 20 / 10).
std_conf() {
	write_conf "$1" <<EOF
version = 1;
daemon = {
  socket = "$T/from-config.sock";
  handshake_timeout_ms = 100;
  report_burst = ${2:-20};
  report_interval_s = ${3:-10};
};
policies = (
  {
    name = "demo";
    match = { exe = [ "*/wire_client" ]; uid = [ 0 ]; };
    mode = "enforce";
    pools = (
      { name = "config"; sites = [ "wire_alloc_site" ]; protect = [ "manual" ]; }
    );
  }
);
EOF
}

_stop_daemon_at_exit() {
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		kill -TERM "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	true
}
at_exit _stop_daemon_at_exit

start_daemon() {
	"$PMALLOCD" --config "$CONF" --socket "$SOCK" "$@" >>"$T/daemon.log" 2>&1 &
	DPID=$!
	# Ready when it answers (a stale socket file may already be there).
	if ! wait_until 200 "$WIRE" --socket "$SOCK" --status; then
		fail "pmallocd did not come up: $(cat "$T/daemon.log")"
	fi
}

# SIGTERM and wait; prints nothing, returns pmallocd's exit status.
stop_daemon() {
	local rc
	kill -TERM "$DPID"
	wait "$DPID"
	rc=$?
	DPID=
	return $rc
}

client() { "$WIRE" --socket "$SOCK" "$@"; }

# daemon_reload: SIGHUP to pmallocd, and its next policy generation awaited
# (pmallocctl status says it), not a guess of how long a reload takes.
daemon_generation() { "$B/pmallocctl" status --socket "$SOCK" 2>/dev/null | sed -n 's/^policy file: .*, generation \([0-9]*\) .*/\1/p'; }
_daemon_generation_past() { [ "$(daemon_generation)" -gt "$1" ]; }
daemon_reload() {
	local g
	g=$(daemon_generation)
	[ -n "$g" ] || fail "pmallocd's status names no generation: $("$B/pmallocctl" status --socket "$SOCK" 2>&1 | head -n 20)"
	kill -HUP "$DPID"
	wait_until 200 _daemon_generation_past "$g" || fail "pmallocd did not reload (generation $g): $(tail -n 5 "$T/daemon.log")"
}

# The daemon's entries matching the journalctl filters given (e.g.
# MESSAGE_ID=...), one JSON object a line.
jentries() {
	journal_sync
	journalctl --no-pager -o json --since "$TEST_SINCE" _PID="${JPID:-$DPID}" "$@" 2>/dev/null
}

# jwait N FILTER...: wait (up to 20 s) until at least N entries match, then
# print them as jentries does.  The daemon logs asynchronously to clients.
jwait() {
	local n=$1 tries=200 out
	shift
	while [ $tries -gt 0 ]; do
		out=$(jentries "$@")
		if [ "$(printf '%s' "$out" | grep -c .)" -ge "$n" ]; then
			printf '%s\n' "$out"
			return 0
		fi
		sleep 0.1
		tries=$((tries - 1))
	done
	printf '%s\n' "$out"
	return 1
}

# Values of a field in JSON lines on stdin (journal fields are strings).
jfield() {
	sed -nE 's/.*"'"$1"'":"((\\.|[^"\\])*)".*/\1/p'
}

# A field of the one entry on stdin must have this exact value.
expect_field() {
	local entry=$1 field=$2 want=$3 got
	got=$(printf '%s\n' "$entry" | jfield "$field")
	[ "$got" = "$want" ] || fail "$field: want '$want', got '$got' in: $entry"
}

if [ -n "${_daemon_lib_main:-}" ]; then
	# The start/stop test.
	NOTIFY=$B/progs/wire_notify
	[ -x "$NOTIFY" ] || fail "$NOTIFY not built"
	journald_ensure
	std_conf "$CONF"

	"$NOTIFY" "$T/notify.sock" 30 >"$T/notify.log" &
	npid=$!
	wait_until 100 test -S "$T/notify.sock" || fail "notify socket did not appear"
	NOTIFY_SOCKET=$T/notify.sock start_daemon
	wait_until 100 grep -q READY=1 "$T/notify.log" || fail "no READY=1: $(cat "$T/notify.log")"
	grep -q "STATUS=Serving $CONF, generation 1" "$T/notify.log" || fail "no STATUS: $(cat "$T/notify.log")"
	[ "$(stat -c %a "$SOCK")" = 666 ] || fail "socket mode $(stat -c %a "$SOCK"), want 666"
	client >/dev/null || fail "no answer"
	pass "READY=1 and STATUS sent, socket 0666, answering"

	stop_daemon || fail "SIGTERM: exit status $?, want 0: $(cat "$T/daemon.log")"
	[ -e "$SOCK" ] && fail "socket $SOCK left behind"
	wait "$npid"
	grep -q STOPPING=1 "$T/notify.log" || fail "no STOPPING=1: $(cat "$T/notify.log")"
	pass "SIGTERM: exit 0, STOPPING=1, socket removed"

	start_daemon
	kill -INT "$DPID"
	wait "$DPID" || fail "SIGINT: exit status $?, want 0"
	DPID=
	pass "SIGINT: exit 0"

	# A socket left by a daemon that was killed is stale: replaced.
	start_daemon
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	[ -S "$SOCK" ] || fail "SIGKILL should leave the socket behind"
	start_daemon
	client >/dev/null || fail "no answer after replacing a stale socket"
	grep -q "removed stale socket $SOCK" "$T/daemon.log" || fail "stale socket not reported"
	# A second daemon on a live socket refuses to start.
	"$PMALLOCD" --config "$CONF" --socket "$SOCK" >"$T/second.log" 2>&1 && fail "a second daemon started"
	grep -q "another daemon is listening" "$T/second.log" || fail "second daemon: $(cat "$T/second.log")"
	client >/dev/null || fail "the first daemon lost its socket"
	stop_daemon || fail "exit status $?"
	pass "stale socket replaced; a live one is not taken over"

	# Without --socket: daemon.socket of the policy file, directory created.
	rm -rf "$T/run"
	sed -i "s|socket = \"$T/from-config.sock\"|socket = \"$T/run/pm.sock\"|" "$CONF"
	"$PMALLOCD" --config "$CONF" >>"$T/daemon.log" 2>&1 &
	DPID=$!
	wait_until 200 "$WIRE" --socket "$T/run/pm.sock" --status || fail "no socket from daemon.socket: $(cat "$T/daemon.log")"
	[ "$(stat -c %a "$T/run")" = 755 ] || fail "socket directory mode $(stat -c %a "$T/run")"
	SOCK=$T/run/pm.sock client >/dev/null || fail "no answer on daemon.socket"
	stop_daemon || fail "exit status $?"
	[ -e "$T/run/pm.sock" ] && fail "socket left behind"
	pass "daemon.socket used when --socket is absent, its directory created 0755"

	if command -v systemd-socket-activate >/dev/null; then
		# It passes on only the environment it is told to: the sanitizers'
		# options (make check-sanitize: no leak check at exit, whose prctl
		# and ptrace the sandbox kills) must reach pmallocd here too.
		systemd-socket-activate --seqpacket ${ASAN_OPTIONS+-E ASAN_OPTIONS} ${UBSAN_OPTIONS+-E UBSAN_OPTIONS} \
			-l "$T/act.sock" "$PMALLOCD" --config "$CONF" \
			>>"$T/daemon.log" 2>&1 &
		apid=$!
		wait_until 100 "$WIRE" --socket "$T/act.sock" --status || fail "socket activation: no answer"
		SOCK=$T/act.sock client | grep -q "^POLICY generation=1" || fail "socket activation: no policy: $(cat "$T/daemon.log")"
		SOCK=$T/act.sock client --status | grep -q "(socket activation)" || fail "status does not say socket activation"
		kill -TERM "$apid"
		wait "$apid" || fail "socket-activated daemon: exit status $?"
		pass "socket activation (SOCK_SEQPACKET)"
	fi
	exit 0
fi
