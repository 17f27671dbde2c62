# SPDX-License-Identifier: GPL-2.0-or-later
# lib.sh - shared by the integration tests (sourced, not run).
#
# Gives: $B (build dir), $B_USR (the build for make install PREFIX=/usr),
# $SRC (source dir), $T (a private scratch dir removed on exit), fail/skip,
# journald_ensure (a real systemd-journald: the machine's, or one started
# here as root when none runs), journal_sync, wait_until; the MESSAGE_IDs
# as $MID_VIOLATION, $MID_LEARNED, ... (every MID_* of msgid.h, read from
# it: the one table the shim, pmallocd and pmallocctl include); run_ctl
# and its $T/out, $T/err, $T/rc (below); systemctl_stand_in and
# stand_in_follow (a systemctl for pmallocctl exercise, below).
set -u
B=${PMALLOC_BUILD:?run through make check}
SRC=${PMALLOC_SRC:?run through make check}
T=$(mktemp -d "${TMPDIR:-/tmp}/pmalloc-test.XXXXXX")
# The build that the tests' "make install PREFIX=/usr" use: one of its own,
# kept between runs.  The install paths are compiled into pmallocd and
# pmallocctl: an install from $B rebuilt them there for /usr, under the
# tests that came after, and the next make rebuilt them back (31 objects,
# 5 s each way, in every make check; this build costs 15 s once).
B_USR=$B/prefix-usr
# This script's start: journal queries look no further back (pids are
# reused, and the journal holds every earlier run's entries).
TEST_SINCE=@$(date +%s)
# The MESSAGE_IDs, by the names msgid.h gives them, from msgid.h itself.
MSGID_H=$(find "$SRC/common" "$SRC/shim" -name msgid.h -print -quit 2>/dev/null)
[ -n "$MSGID_H" ] || { echo "FAIL: msgid.h not found under $SRC"; exit 1; }
eval "$(sed -n 's/^#define \(MID_[A-Z_]*\) *"\([0-9a-f]\{32\}\)".*/\1=\2/p' "$MSGID_H")"
[ -n "${MID_VIOLATION:-}" ] && [ -n "${MID_LEARNED:-}" ] || { echo "FAIL: no MID_* read from $MSGID_H"; exit 1; }
# run ARGS...: pmallocctl ARGS, its stdout in $T/out, stderr in $T/err and
# exit status in $T/rc (rc prints it, answer both outputs), for the tests
# that look at all three.
ctl=$B/pmallocctl
run() { "$ctl" "$@" >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; }
rc() { cat "$T/rc"; }
answer() { cat "$T/out" "$T/err"; }
_cleanup_fns=()
_cleanup() { local f; for f in "${_cleanup_fns[@]}"; do $f; done; rm -rf "$T"; }
trap _cleanup EXIT
at_exit() { _cleanup_fns+=("$1"); }

fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
skip() { printf 'skipped: %s\n' "$*"; exit 77; }
pass() { printf 'ok: %s\n' "$*"; }

JOURNAL_SOCKET=/run/systemd/journal/socket
_journald_pid=
_journald_stop() { [ -n "$_journald_pid" ] && kill "$_journald_pid" 2>/dev/null; wait "$_journald_pid" 2>/dev/null; true; }
# A real journald answers on its native socket; start one if none does.
journald_ensure() {
	if [ -S "$JOURNAL_SOCKET" ] && journalctl --sync 2>/dev/null; then return 0; fi
	[ "$(id -u)" = 0 ] || skip "no systemd-journald running and not root to start one"
	local jd=/lib/systemd/systemd-journald
	[ -x "$jd" ] || jd=/usr/lib/systemd/systemd-journald
	[ -x "$jd" ] || skip "systemd-journald not installed"
	"$jd" >"$T/journald.log" 2>&1 &
	_journald_pid=$!
	at_exit _journald_stop
	wait_until 100 journalctl --sync || fail "journald did not come up: $(cat "$T/journald.log")"
}
# Everything sent so far is readable by journalctl afterwards.
journal_sync() { journalctl --sync; }

# wait_until TRIES CMD...: run CMD every 50 ms until it succeeds (bounded).
wait_until() {
	local n=$1; shift
	while [ "$n" -gt 0 ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; n=$((n - 1)); done
	return 1
}

# systemctl_stand_in DIR: $T/systemctl, the systemctl that pmallocctl
# exercise talks to ($PMALLOC_SYSTEMCTL; FAKE_DIR=DIR, both exported), as
# this machine has no booted systemd.  It answers for one unit, named by
# DIR's files: pid (the main process), start (its start time when it was
# named: as systemd, the stand-in follows the process, not its number,
# which a busy machine may give another), reload (the ExecReload signal,
# as Debian's units send it; empty: no ExecReload), stop (the stop signal)
# and timeout (how many seconds of wall time a stop waits for the process
# to go; not a count of sleeps: a loaded machine stretches neither).
#   show: MainPID, ActiveState, ExecReload; reload: the signal; stop: the
#   signal, then the wait (fails when the process outlives it).
# A pid without a start file is named as it stands at the first call.
systemctl_stand_in() {
	mkdir -p "$1"
	cat >"$T/systemctl" <<'EOF'
#!/bin/sh
D=${FAKE_DIR:?}
pid=$(cat "$D/pid" 2>/dev/null) rsig=$(cat "$D/reload" 2>/dev/null) ssig=$(cat "$D/stop" 2>/dev/null)
start_of() { cut -d')' -f2- "/proc/$1/stat" 2>/dev/null | cut -d' ' -f21; }
[ -z "$pid" ] || [ -s "$D/start" ] || start_of "$pid" >"$D/start"
# Its state and start time from one read of its stat: read from two files,
# a zombie reaped between the reads was taken for alive (stat read, status
# gone), and a stop that had worked failed.
alive() {
	set -- $(cut -d')' -f2- "/proc/$pid/stat" 2>/dev/null)
	[ $# -ge 20 ] && [ "$1" != Z ] && [ "$1" != X ] && [ "${20}" = "$(cat "$D/start" 2>/dev/null)" ]
}
case $1 in
show)
	if alive; then echo "MainPID=$pid"; echo "ActiveState=active"; else echo "MainPID=0"; echo "ActiveState=inactive"; fi
	if [ -n "$rsig" ]; then echo "ExecReload={ path=/bin/kill ; argv[]=/bin/kill -$rsig \$MAINPID ; }"; else echo "ExecReload="; fi ;;
reload) [ -n "$rsig" ] && alive && kill -"$rsig" "$pid" ;;
stop)
	alive || exit 0
	kill -"$ssig" "$pid"
	end=$(($(date +%s) + $(cat "$D/timeout")))
	while alive && [ "$(date +%s)" -le $end ]; do sleep 0.05; done
	! alive ;;
*) exit 1 ;;
esac
EOF
	chmod 0755 "$T/systemctl"
	export PMALLOC_SYSTEMCTL=$T/systemctl FAKE_DIR=$1
}
# stand_in_follow PID [RELOAD-SIGNAL STOP-SIGNAL TIMEOUT]: the stand-in's
# unit is PID's now (the signals and timeout kept when not given).
stand_in_follow() {
	echo "$1" >"$FAKE_DIR/pid"
	cut -d')' -f2- "/proc/$1/stat" | cut -d' ' -f21 >"$FAKE_DIR/start"
	[ $# -lt 4 ] || { echo "$2" >"$FAKE_DIR/reload"; echo "$3" >"$FAKE_DIR/stop"; echo "$4" >"$FAKE_DIR/timeout"; }
}

# json_schema_check SCHEMA FILE: FILE is one line of JSON that fits SCHEMA
# (the subset of JSON Schema pmallocctl's schemas use; no pip).  Fails
# with the first place that does not fit, on stdout.
json_schema_check() {
	python3 - "$1" "$2" <<'PY'
# A JSON Schema subset validator: type (one or a list), properties,
# required, additionalProperties: false, items, enum, minimum, $ref to
# #/$defs/NAME.  Exits 1 naming the first place that does not fit.
import json, sys
schema = json.load(open(sys.argv[1]))
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
def is_type(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])
def check(v, s, where):
    if "$ref" in s:
        return check(v, schema["$defs"][s["$ref"].split("/")[-1]], where)
    if "enum" in s and v not in s["enum"]:
        sys.exit("%s: %r not one of %r" % (where, v, s["enum"]))
    if "type" in s:
        ts = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(is_type(v, t) for t in ts):
            sys.exit("%s: %r is not %s" % (where, v, ts))
    if "minimum" in s and is_type(v, "integer") and v < s["minimum"]:
        sys.exit("%s: %r below %r" % (where, v, s["minimum"]))
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                sys.exit("%s: %s missing" % (where, k))
        props = s.get("properties", {})
        for k, x in v.items():
            if k in props:
                check(x, props[k], where + "." + k)
            elif s.get("additionalProperties") is False:
                sys.exit("%s: %s not in the schema" % (where, k))
    if isinstance(v, list) and "items" in s:
        for i, x in enumerate(v):
            check(x, s["items"], "%s[%d]" % (where, i))
text = open(sys.argv[2]).read()
lines = text.splitlines()
if len(lines) != 1:
    sys.exit("not one line")
check(json.loads(lines[0]), schema, "$")
PY
}
