#!/usr/bin/env bash
# pmallocctl status: exit 3 and a clear message when no daemon answers; the
# reply checked before use (a fake daemon sends good, hostile and malformed
# replies); and, once build/pmallocd exists, the real daemon's answer.
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
run() { "$ctl" "$@" >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; }
rc() { cat "$T/rc"; }

# No daemon: a missing socket, a socket file nobody listens on, a non-socket.
run status --socket "$T/nothing/pmallocd.sock"
[ "$(rc)" = 3 ] || fail "missing socket: exit $(rc), expected 3"
[ "$(cat "$T/err")" = "pmallocctl: pmallocd is not running ($T/nothing/pmallocd.sock): No such file or directory" ] ||
	fail "missing socket: stderr: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "missing socket: stdout: $(cat "$T/out")"
: >"$T/plainfile"
run status --socket "$T/plainfile"
[ "$(rc)" = 3 ] && grep -qx "pmallocctl: pmallocd is not running ($T/plainfile): Connection refused" "$T/err" ||
	fail "plain file: exit $(rc): $(cat "$T/err")"
PMALLOC_SOCKET="$T/env.sock" run status
[ "$(rc)" = 3 ] && grep -qF "($T/env.sock)" "$T/err" || fail "PMALLOC_SOCKET not used: $(cat "$T/err")"
PMALLOC_SOCKET="$T/env.sock" run status --socket "$T/opt.sock"
grep -qF "($T/opt.sock)" "$T/err" || fail "--socket does not win over PMALLOC_SOCKET: $(cat "$T/err")"
run status --socket "$T/$(printf 'x%.0s' {1..120})"
[ "$(rc)" = 1 ] && grep -q 'File name too long' "$T/err" || fail "long path: exit $(rc): $(cat "$T/err")"
run status extra
[ "$(rc)" = 2 ] || fail "status extra: exit $(rc), expected 2"
pass "no daemon: exit 3 and the socket named"

# A fake daemon (Python), one connection per mode: it checks the request is
# exactly a PMW_STATUS_REQ and answers as the mode says.
if command -v python3 >/dev/null && python3 -c 'import socket; socket.SOCK_SEQPACKET' 2>/dev/null; then
	cat >"$T/fake.py" <<'PY'
import os, socket, struct, sys, time
path, mode, flag = sys.argv[1], sys.argv[2], sys.argv[3]
MAGIC, VERSION, STATUS_REQ, STATUS = 0x31414d50, 2, 7, 8
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path); s.listen(1)
c, _ = s.accept()
req = c.recv(65536)
if req != struct.pack("=IHHII", MAGIC, VERSION, STATUS_REQ, 16, 0):
    open(flag, "w").write("bad request: %r\n" % req)
def reply(text, magic=MAGIC, version=VERSION, type_=STATUS, length=None, text_len=None):
    n = 24 + len(text)
    c.send(struct.pack("=IHHIIII", magic, version, type_, n if length is None else length, 0,
                       len(text) if text_len is None else text_len, 0) + text)
good = b"pmallocd: 2 processes served\n  1234 /usr/bin/demo: pool config 4096 bytes protected\n\0"
if mode == "ok": reply(good)
elif mode == "nonewline": reply(b"one line\0")
elif mode == "hostile": reply(b"exe /tmp/\x1b]0;owned\x07x\r\xe2\x80\xaeevil\tok\nnext\0")
elif mode == "badmagic": reply(good, magic=0x41414141)
elif mode == "version": reply(good, version=VERSION + 1)
elif mode == "type": reply(good, type_=5)
elif mode == "length": reply(good, length=24 + len(good) + 8)
elif mode == "textlen": reply(good, text_len=len(good) + 1)
elif mode == "nonul": reply(b"no terminator")
elif mode == "short": c.send(b"PMA1")
elif mode == "huge": c.send(struct.pack("=IHHII", MAGIC, VERSION, STATUS, 70000, 0) + b"x" * 69984)
elif mode == "close": pass
elif mode == "silent": time.sleep(8)
c.close()
PY
	fake() {
		local mode=$1 sock=$T/fake-$1.sock
		rm -f "$T/flag"
		python3 "$T/fake.py" "$sock" "$mode" "$T/flag" &
		local pid=$!
		wait_until 100 test -S "$sock" || fail "fake daemon ($mode) did not start"
		run status --socket "$sock"
		kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
		[ ! -e "$T/flag" ] || fail "$mode: $(cat "$T/flag")"
	}
	fake ok
	[ "$(rc)" = 0 ] || fail "ok: exit $(rc): $(cat "$T/err")"
	printf 'pmallocd: 2 processes served\n  1234 /usr/bin/demo: pool config 4096 bytes protected\n' | cmp -s - "$T/out" ||
		fail "ok: output: $(cat "$T/out")"
	fake nonewline
	[ "$(rc)" = 0 ] && [ "$(cat "$T/out")" = "one line" ] && [ "$(tail -c 1 "$T/out" | od -An -c | tr -d ' ')" = '\n' ] ||
		fail "nonewline: $(od -c "$T/out")"
	fake hostile
	[ "$(rc)" = 0 ] || fail "hostile: exit $(rc)"
	[ "$(cat "$T/out")" = "$(printf '%s\n' 'exe /tmp/\x1b]0;owned\x07x\r\u202eevil	ok' next)" ] ||
		fail "hostile: $(od -c "$T/out" | head)"
	pass "fake daemon: text printed, control characters escaped"
	for mode in badmagic type length textlen nonul short huge; do
		fake $mode
		[ "$(rc)" = 1 ] || fail "$mode: exit $(rc), expected 1"
		grep -qx "pmallocctl: malformed reply from pmallocd ($T/fake-$mode.sock): .*" "$T/err" ||
			fail "$mode: stderr: $(cat "$T/err")"
		[ ! -s "$T/out" ] || fail "$mode: printed $(cat "$T/out")"
	done
	fake version
	[ "$(rc)" = 1 ] && grep -q "speaks another protocol version" "$T/err" || fail "version: $(cat "$T/err")"
	fake close
	[ "$(rc)" = 3 ] && grep -qx "pmallocctl: pmallocd is not answering ($T/fake-close.sock): .*" "$T/err" ||
		fail "close: exit $(rc): $(cat "$T/err")"
	fake silent
	[ "$(rc)" = 3 ] && grep -qx "pmallocctl: pmallocd is not answering ($T/fake-silent.sock): Connection timed out" "$T/err" ||
		fail "silent: exit $(rc): $(cat "$T/err")"
	pass "fake daemon: malformed replies refused, silence bounded"
else
	echo "note: python3 with SOCK_SEQPACKET missing: fake-daemon part left out"
fi

# The real daemon, when it has been built.
if [ -x "$B/pmallocd" ] && [ -f "$SRC/conf/pmalloc.conf" ]; then
	"$B/pmallocd" --config "$SRC/conf/pmalloc.conf" --socket "$T/real.sock" >"$T/pmallocd.log" 2>&1 &
	dpid=$!
	stop_daemon() { kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; true; }
	at_exit stop_daemon
	if wait_until 100 test -S "$T/real.sock"; then
		run status --socket "$T/real.sock"
		[ "$(rc)" = 0 ] && [ -s "$T/out" ] ||
			fail "real daemon: exit $(rc): $(cat "$T/out" "$T/err"); log: $(cat "$T/pmallocd.log")"
		pass "real daemon answers: $(head -n 1 "$T/out")"
		grep -q "(shown to root only)" "$T/out" && fail "root is shown less than everything"
		# Another user sees the counters and only their own processes.
		if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
			chmod 0755 "$T"
			setpriv --reuid=65534 --regid=65534 --clear-groups "$ctl" status --socket "$T/real.sock" \
				>"$T/out.other" 2>&1 || fail "status as uid 65534: $(cat "$T/out.other")"
			grep -q "^clients: " "$T/out.other" && grep -qx "  (shown to root only)" "$T/out.other" &&
				grep -q "^served processes (.*; only yours are listed):" "$T/out.other" ||
				fail "status as uid 65534: $(cat "$T/out.other")"
			pass "another user sees counters and only their own processes"
		fi
	else
		echo "note: build/pmallocd did not come up on $T/real.sock: real-daemon part left out ($(tail -n 3 "$T/pmallocd.log"))"
	fi
else
	echo "note: build/pmallocd or conf/pmalloc.conf missing: real-daemon part left out"
fi
