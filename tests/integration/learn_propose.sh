# SPDX-License-Identifier: GPL-2.0-or-later
# learn_propose.sh - learn -> propose -> enforce on a program built with
# symbols and on the same program stripped.
#
# learn_prog allocates its configuration (load_config), a counter the
# program writes after listen (make_counter) and a buffer the kernel writes
# after listen (make_buffer, read(2)).  Under mode = "learn" it runs to
# completion, unharmed; the journal gets one entry per site; propose keeps
# load_config only (by name, or by pinned offset when stripped); the
# proposal passes pmallocctl check without a warning, runs the same
# workload in enforce mode without a kill, and an injected write into the
# configuration dies by SIGSEGV with the policy, pool and site in the
# journal.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/learn_prog
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v strip >/dev/null || skip "strip (binutils) not installed"
command -v journalctl >/dev/null || skip "journalctl not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock

# field JSON NAME: the value of NAME in one journal entry (JSON line).
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }

# cycle DIR LABEL: the whole cycle for DIR/learn_prog.
cycle() {
	local dir=$1 label=$2 exe=$1/learn_prog since rc out
	cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "lp"; match = { exe = [ "$exe" ]; }; mode = "learn";
  pools = ( { name = "setup"; sites = [ "*" ]; protect = [ "on-call:listen" ]; } ); } );
EOC
	since=@$(date +%s)
	rc=0; PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$exe" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 0 ] || fail "$label: learn run exited $rc: $(cat "$T/err")"
	[ ! -s "$T/err" ] || fail "$label: learn mode wrote to stderr: $(cat "$T/err")"
	grep -q "counter 100 buffer hello" "$T/out" || fail "$label: learn run output: $(cat "$T/out")"
	journal_sync
	# The exit flush: every context once (earlier flushes said the same, or less).
	out=$(journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$exe" \
		PMALLOC_LEARN_REASON=exit)
	[ "$(printf '%s\n' "$out" | grep -c PMALLOC_CHAIN)" -ge 3 ] || fail "$label: learned entries: $out"
	local written
	written=$(printf '%s\n' "$out" | grep '"PMALLOC_WRITTEN":"1"' | grep -c '"PMALLOC_BYTES":"8192"')
	[ "$written" = 2 ] || fail "$label: the counter and the buffer are not both written: $out"

	rm -f "$T/proposed.conf"   # --output onto a file keeps its other policies: a fresh one here
	"$B/pmallocctl" propose --mode enforce --exe "$exe" --since "$since" --output "$T/proposed.conf" 2>"$T/err" ||
		fail "$label: propose failed: $(cat "$T/err")"
	"$B/pmallocctl" check "$T/proposed.conf" >"$T/check" 2>&1 || fail "$label: check refused: $(cat "$T/check")"
	grep -qi warning "$T/check" && fail "$label: check warns: $(cat "$T/check")"
	grep -q 'mode = "enforce"' "$T/proposed.conf" || fail "$label: not enforce: $(cat "$T/proposed.conf")"
	grep -q 'protect = \[ "on-call:listen" \]' "$T/proposed.conf" || fail "$label: trigger lost"
	grep -q '^ *# left out: 16384 bytes written, ' "$T/proposed.conf" || fail "$label: no left-out comment: $(grep '#' "$T/proposed.conf")"
	grep -q '^ *# protected: 4096 bytes live in 1 sites; unwritten at learning: 4096 bytes; coverage 100.0%$' "$T/proposed.conf" ||
		fail "$label: coverage: $(grep '#' "$T/proposed.conf")"
	PROPOSED_SITES=$(sed -n '/sites = \[/,/\]/p' "$T/proposed.conf" | grep -o '"[^"]*"' | tr '\n' ' ')
	[ "$(printf '%s' "$PROPOSED_SITES" | wc -w)" = 1 ] || fail "$label: expected one site: $PROPOSED_SITES"

	rc=0; PMALLOC_CONF=$T/proposed.conf LD_PRELOAD=$SHIM "$exe" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 0 ] || fail "$label: enforce run of the proposal exited $rc: $(cat "$T/err")"
	rc=0; PMALLOC_CONF=$T/proposed.conf LD_PRELOAD=$SHIM "$exe" inject >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 139 ] || fail "$label: injected write: exit $rc, expected SIGSEGV: $(cat "$T/err")"
	grep -q 'write to protected pool "setup" .* 4096-byte object .*; policy "lp"; enforce: killed by SIGSEGV' "$T/err" ||
		fail "$label: report line: $(cat "$T/err")"
	journal_sync
	out=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$exe")
	[ -n "$out" ] || fail "$label: no violation in the journal"
	[ "$(field "$out" PMALLOC_POLICY)" = lp ] && [ "$(field "$out" PMALLOC_POOL)" = setup ] ||
		fail "$label: violation entry: $out"
	VIOLATION_SITE=$(field "$out" PMALLOC_OBJECT_SITE)
}

mkdir -p "$T/full" "$T/stripped"
cp "$PROG" "$T/full/"
cycle "$T/full" symbols
[ "$PROPOSED_SITES" = '"learn_prog:load_config" ' ] || fail "symbols: proposed $PROPOSED_SITES"
case $VIOLATION_SITE in load_config+0x*) ;; *) fail "symbols: violation site $VIOLATION_SITE" ;; esac
pass "with symbols: learn, propose learn_prog:load_config, enforce without a kill, injected write killed at $VIOLATION_SITE"

# A learned entry forged by another user (any process can write to the
# journal) is not believed: journald says which program wrote it (_EXE).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ -x /usr/bin/python3 ]; then
	since=@$(date +%s)
	bid=$(readelf -n "$T/full/learn_prog" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
	setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 - "$T/full/learn_prog" "$MID_LEARNED" "$bid" \
		"$(python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_mtime_ns // 1000)' "$T/learn.conf")" <<'EOF'
import socket, sys
# loaded: the same load of the learn policy as the real run's (the file's mtime).
exe, mid, bid, loaded = sys.argv[1:5]
fields = dict(MESSAGE_ID=mid, MESSAGE="forged", PMALLOC_POLICY="lp", PMALLOC_POOL="setup",
              PMALLOC_CHAIN="%s@%s+0x1234=forged_site" % (exe, bid), PMALLOC_EXE_BUILD_ID=bid,
              PMALLOC_RUN="f" * 32, PMALLOC_POLICY_LOADED=str(loaded), PMALLOC_OBJECTS="1",
              PMALLOC_BYTES="4096", PMALLOC_LIVE_OBJECTS="1", PMALLOC_LIVE_BYTES="4096", PMALLOC_WRITTEN="0",
              PMALLOC_TRIGGERS="on-call:listen", PMALLOC_EXE=exe, OBJECT_PID="1")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto("".join("%s=%s\n" % kv for kv in fields.items()).encode(), "/run/systemd/journal/socket")
fields.update(PMALLOC_POOL="big", PMALLOC_CHAIN="%s@%s+0x1238=big_site" % (exe, bid), PMALLOC_BYTES="3000000000",
              PMALLOC_LIVE_BYTES="3000000000")
s.sendto("".join("%s=%s\n" % kv for kv in fields.items()).encode(), "/run/systemd/journal/socket")
# Alive while journald reads /proc for _EXE: a sender gone by then leaves
# no _EXE, and an entry of a trusted uid without one is believed (a
# learning process killed right after its flush must be).
import time
time.sleep(1)
EOF
	PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$T/full/learn_prog" >/dev/null 2>&1 || fail "second learn run"
	journal_sync
	"$B/pmallocctl" propose --mode enforce --exe "$T/full/learn_prog" --since "$since" >"$T/p1" 2>"$T/err" || fail "propose: $(cat "$T/err")"
	grep -q forged_site "$T/p1" && fail "a forged entry of uid nobody was believed: $(cat "$T/p1")"
	grep -q '"learn_prog:load_config"' "$T/p1" || fail "propose lost the real site: $(cat "$T/p1")"
	# Written by python3, not learn_prog (journald's _EXE): --uid does not
	# make it believed either.
	"$B/pmallocctl" propose --mode enforce --exe "$T/full/learn_prog" --since "$since" --uid nobody >"$T/p2" 2>"$T/err" ||
		fail "propose --uid nobody: $(cat "$T/err")"
	grep -q 'forged_site\|big_site' "$T/p2" && fail "--uid nobody believed an entry python3 wrote: $(cat "$T/p2")"
	grep -q 'not believed' "$T/err" || fail "propose did not say it left entries out: $(cat "$T/err")"
	pass "an entry forged by another user is left out (and said), with or without --uid"
fi

strip --strip-all -o "$T/stripped/learn_prog" "$PROG"
id=$(readelf -n "$T/stripped/learn_prog" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
cycle "$T/stripped" stripped
case $PROPOSED_SITES in "\"learn_prog@$id:+0x"*) ;; *) fail "stripped: proposed $PROPOSED_SITES (build-id $id)" ;; esac
off=${PROPOSED_SITES#*:+}; off=${off%\"*}
[ "$VIOLATION_SITE" = "learn_prog+$off" ] || fail "stripped: violation site $VIOLATION_SITE, proposed +$off"
pass "stripped: learn, propose $PROPOSED_SITES, enforce without a kill, injected write killed at $VIOLATION_SITE"
