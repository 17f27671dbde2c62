#!/usr/bin/env bash
# pmallocctl status --json against the real pmallocd: one JSON object that
# parses, with the daemon's pid, the policy file, the socket, and a served
# process (an audit-mode e2e_hold after a violation) with its policy, pool
# and violation count; and, from a daemon that answers nonsense, still
# valid JSON with the lines it could not read kept under "other".
. "$(dirname "$0")/e2e_lib.sh"

command -v python3 >/dev/null || skip "python3 not installed (checks the JSON)"
journald_ensure
HOLD=$(readlink -f "$HOLD")
sed 's|^);$|  , { name = "held"; match = { exe = [ "*/e2e_hold" ]; }; mode = "audit";\n      pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); }\n);|' \
	"$SRC/conf/pmalloc.conf" | write_conf "$CONF"
start_daemon

mkfifo "$T/cmds"
hardened "$T/out" "$T/err" "$HOLD" <"$T/cmds" &
runner=$!
exec 3>"$T/cmds"
wait_until 200 grep -qx listening "$T/out" || fail "e2e_hold did not start: $(cat "$T/out" "$T/err")"
pid=$(cat "$T/hardened.pid")
printf 'write\nprint\n' >&3
wait_until 200 grep -q '^name' "$T/out" || fail "e2e_hold: $(cat "$T/out" "$T/err")"
served() { "$B/pmallocctl" status --socket "$SOCK" --json | grep -q '"violations":1,'; }
wait_until 200 served || fail "the violation never reached status"

"$B/pmallocctl" status --socket "$SOCK" --json >"$T/status.json" || fail "status --json: exit $?"
python3 - "$T/status.json" "$DPID" "$CONF" "$SOCK" "$pid" "$HOLD" <<'PY' || fail "status --json: $(cat "$T/status.json")"
import json, sys
path, dpid, conf, sock, pid, exe = sys.argv[1:]
lines = open(path).read().splitlines()
assert len(lines) == 1, "not one line"
s = json.loads(lines[0])
assert s["pmallocd"]["pid"] == int(dpid), s["pmallocd"]
assert s["policy_file"]["path"] == conf and s["policy_file"]["policies"] == 2, s["policy_file"]
assert s["socket"] == {"path": sock, "socket_activation": False}, s["socket"]
assert "clients" in s["counters"] and "journal" in s["counters"], s["counters"]
p = [p for p in s["served"] if p["pid"] == int(pid)]
assert len(p) == 1, s["served"]
p = p[0]
assert p["exe"] == exe and p["policy"] == "held" and p["mode"] == "audit" and p["uid"] == 0, p
assert p["violations"] == 1 and p["state"].startswith("alive"), p
assert [q["name"] for q in p["pools"]] == ["config"] and p["pools"][0]["protects"] >= 1, p["pools"]
assert p["pools"][0]["last_trigger"] == "on-call:listen", p["pools"]
assert s["other"] == [], s["other"]
PY
printf 'exit\n' >&3
exec 3>&-
wait "$runner"
pass "status --json: pmallocd, policy_file, socket, counters, the served process with pool and violation"

# A "daemon" that answers lines nobody wrote: still one valid JSON object.
stop_daemon
python3 - "$T/fake.sock" <<'PY' &
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept(); c.recv(65536)
text = b'garbage "\x1b[31m\nserved processes (1 connected):\n  PID x  y\n    pool "p": bad\nsocket: \xff\xfe\n\0'
c.send(struct.pack("=IHHIIII", 0x31414d50, 2, 8, 24 + len(text), 0, len(text), 0) + text)
PY
fake=$!
wait_until 100 test -S "$T/fake.sock" || fail "fake daemon did not start"
"$B/pmallocctl" status --socket "$T/fake.sock" --json >"$T/fake.json" || fail "status --json (fake): exit $?"
wait "$fake"
python3 -c 'import json,sys; s=json.loads(open(sys.argv[1]).read()); assert len(s["other"]) == 4, s' "$T/fake.json" ||
	fail "nonsense status: $(cat "$T/fake.json")"
pass "status --json of nonsense: valid JSON, the lines kept under \"other\""
exit 0
