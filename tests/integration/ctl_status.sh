#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
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
# exactly a PMW_STATUS_REQ and answers as the mode says, with status records
# (common/proto/wire.h's PMW_STATUS_DATA) in a memfd passed along.
if command -v python3 >/dev/null && python3 -c 'import socket; socket.SOCK_SEQPACKET; socket.send_fds' 2>/dev/null; then
	cat >"$T/fake.py" <<'PY'
import os, re, socket, struct, sys, time
path, mode, flag, wire_h = sys.argv[1:5]
MAGIC, VERSION, STATUS_REQ, STATUS, DATA = 0x31414d50, 2, 7, 8, 14
wire = open(wire_h).read()
def count(enum):   # the members of an enum of wire.h before its *_N_NUMS / *_N_STRS
    body = re.search(r"enum " + enum + r" \{(.*?)\};", wire, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = [n.strip() for n in body.split(",") if n.strip()]
    return len(names) - 1
ND, SD = count("pmw_sr_daemon"), count("pmw_sr_daemon_str")
NP, SP = count("pmw_sr_process"), count("pmw_sr_process_str")
def rec(type_, nums, strs, n_nums=None, pad=True):
    body = b"".join(struct.pack("=Q", v) for v in nums) + b"".join(s + b"\0" for s in strs)
    n = 8 + len(body)
    if pad:
        n = (n + 7) & ~7
    return struct.pack("=HBBI", type_, len(nums) if n_nums is None else n_nums, len(strs), n) + body + b"\0" * (n - 8 - len(body))
def daemon(flags=1):
    nums = [0] * ND
    nums[0] = 4242; nums[ND - 2] = flags
    return rec(1, nums, [b"/etc/pmalloc.conf", b"/run/pmalloc/pmallocd.sock"])
def process(exe, pid=1234):
    nums = [0] * NP
    nums[1] = pid; nums[4] = 1; nums[7] = 0
    return rec(4, nums, [exe, b"demo", b"demo"])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path); s.listen(1)
c, _ = s.accept()
req = c.recv(65536)
if req != struct.pack("=IHHII", MAGIC, VERSION, STATUS_REQ, 16, 0):
    open(flag, "w").write("bad request: %r\n" % req)
def reply(data, n_records, magic=MAGIC, version=VERSION, type_=DATA, data_len=None, fds=1, size=None):
    fd = os.memfd_create("fake")
    os.write(fd, data)
    if size is not None:
        os.ftruncate(fd, size)
    msg = struct.pack("=IHHIIII", magic, version, type_, 24, 0, len(data) if data_len is None else data_len, n_records)
    if fds:
        socket.send_fds(c, [msg], [fd] * fds)
    else:
        c.send(msg)
good = daemon() + process(b"/usr/bin/demo")
if mode == "ok": reply(good, 2)
elif mode == "hostile": reply(daemon() + process(b"/tmp/\x1b]0;owned\x07x\r\xe2\x80\xaeevil\tok\nnext"), 2)
elif mode == "badmagic": reply(good, 2, magic=0x41414141)
elif mode == "version": reply(good, 2, version=VERSION + 1)
elif mode == "type": reply(good, 2, type_=STATUS)
elif mode == "nofd": reply(good, 2, fds=0)
elif mode == "twofds": reply(good, 2, fds=2)
elif mode == "size": reply(good, 2, size=len(good) + 8)
elif mode == "datalen": reply(good, 2, data_len=len(good) - 8)
elif mode == "toobig": reply(good, 2, data_len=(64 << 20) + 1)
elif mode == "records": reply(good, 1)
elif mode == "unaligned": reply(daemon() + rec(4, [1], [b"x"], pad=False), 2)
elif mode == "nonul": reply(daemon()[:-8] + b"xxxxxxxx", 1)
elif mode == "first": reply(process(b"/x") + daemon(), 2)
elif mode == "counts": reply(daemon() + rec(4, [1, 2], [b"a", b"b", b"c"]), 2)
elif mode == "short": c.send(b"PMA1")
elif mode == "close": pass
elif mode == "silent": time.sleep(8)
c.close()
PY
	# The fake daemons start at once (a python3 start-up each), one socket
	# and flag file a mode; fake MODE asks its own.
	declare -A fake_pid=()
	start_fake() {
		python3 "$T/fake.py" "$T/fake-$1.sock" "$1" "$T/flag-$1" "$SRC/common/proto/wire.h" &
		fake_pid[$1]=$!
	}
	stop_fakes() { local p; for p in "${fake_pid[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; true; }
	at_exit stop_fakes
	fake() {
		local mode=$1 sock=$T/fake-$1.sock
		wait_until 200 test -S "$sock" || fail "fake daemon ($mode) did not start"
		run status --socket "$sock"
		kill "${fake_pid[$mode]}" 2>/dev/null; wait "${fake_pid[$mode]}" 2>/dev/null
		[ ! -e "$T/flag-$mode" ] || fail "$mode: $(cat "$T/flag-$mode")"
	}
	# A daemon that accepts and never answers: pmallocctl's 5 s wait runs
	# beside the other cases.
	start_fake silent
	wait_until 200 test -S "$T/fake-silent.sock" || fail "fake daemon (silent) did not start"
	("$ctl" status --socket "$T/fake-silent.sock" >"$T/silent.out" 2>"$T/silent.err"; echo $? >"$T/silent.rc") &
	silent_ctl=$!
	for mode in ok hostile badmagic type nofd twofds size datalen toobig records unaligned nonul first counts \
		short version close; do
		start_fake $mode
	done
	fake ok
	[ "$(rc)" = 0 ] || fail "ok: exit $(rc): $(cat "$T/err")"
	grep -q '^pmallocd (PID 4242), running 0s$' "$T/out" &&
		grep -qx '  PID 1234  /usr/bin/demo  uid 0  policy "demo" (enforce, generation 0)  alive, served 0s' "$T/out" ||
		fail "ok: output: $(cat "$T/out")"
	fake hostile
	[ "$(rc)" = 0 ] || fail "hostile: exit $(rc)"
	grep -qF '  PID 1234  /tmp/\x1b]0;owned\x07x\r\u202eevil\tok\nnext  uid 0' "$T/out" && ! grep -q '^next' "$T/out" ||
		fail "hostile: $(grep -a "PID 1234" "$T/out" | od -c | head -8)"
	pass "fake daemon: status records laid out, control characters escaped"
	for mode in badmagic type nofd twofds size datalen toobig records unaligned nonul first counts short; do
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
	wait "$silent_ctl"
	kill "${fake_pid[silent]}" 2>/dev/null; wait "${fake_pid[silent]}" 2>/dev/null
	[ ! -e "$T/flag-silent" ] || fail "silent: $(cat "$T/flag-silent")"
	[ "$(cat "$T/silent.rc")" = 3 ] &&
		grep -qx "pmallocctl: pmallocd is not answering ($T/fake-silent.sock): Connection timed out" "$T/silent.err" ||
		fail "silent: exit $(cat "$T/silent.rc"): $(cat "$T/silent.err")"
	pass "fake daemon: malformed answers refused (header, descriptor, sizes, records), silence bounded"
else
	echo "note: python3 with SOCK_SEQPACKET and send_fds missing: fake-daemon part left out"
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
