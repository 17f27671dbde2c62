#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pmallocctl status --json against the real pmallocd: one JSON object, valid
# against man/pmallocctl-status.schema.json (checked by lib.sh's small
# validator: no pip), numbers as numbers and durations in microseconds; a
# served process (an audit-mode e2e_hold after a violation) with its policy,
# pool and violation count; then N served processes at once (N=60 here,
# 500 in make check-status-500), each with 24 rules that match nothing,
# every one of them in the JSON and in the text (past the 64 KiB a packet
# holds).
. "$(dirname "$0")/e2e_lib.sh"

command -v python3 >/dev/null || skip "python3 not installed (checks the JSON)"
journald_ensure
HOLD=$(readlink -f "$HOLD")
sleep_exe=$(readlink -f "$(command -v sleep)")
sed 's|^);$|  , { name = "held"; match = { exe = [ "*/e2e_hold" ]; }; mode = "audit";\n      pools = ( { name = "config"; sites = [ "setup" ]; protect = [ "on-call:listen" ]; } ); }\n  , { name = "many"; match = { exe = [ "'"$sleep_exe"'" ]; }; mode = "audit";\n      pools = ( { name = "p"; sites = [ '"$(printf '"no_such_function_%d", ' $(seq 23))"'"no_such_function_24" ]; protect = [ "manual" ]; } ); }\n);|' \
	"$SRC/conf/pmalloc.conf" | write_conf "$CONF"
start_daemon

validate() { json_schema_check "$SRC/man/pmallocctl-status.schema.json" "$1"; }

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
validate "$T/status.json" || fail "status --json does not fit its schema: $(cat "$T/status.json")"
python3 - "$T/status.json" "$DPID" "$CONF" "$SOCK" "$pid" "$HOLD" <<'PY' || fail "status --json: $(cat "$T/status.json")"
import json, sys
path, dpid, conf, sock, pid, exe = sys.argv[1:]
s = json.loads(open(path).read())
assert s["pmallocd"]["pid"] == int(dpid), s["pmallocd"]
assert 0 < s["pmallocd"]["running_usec"] < 600 * 10**6, s["pmallocd"]
assert s["policy_file"]["path"] == conf and s["policy_file"]["policies"] == 3, s["policy_file"]
assert s["socket"] == {"path": sock, "socket_activation": False}, s["socket"]
assert s["clients"]["connected"] >= 1 and s["messages"]["violation_reports"] >= 1, s
assert s["budgets"]["interval_usec"] % 10**6 == 0 and s["root_view"] is True, s
p = [p for p in s["served"] if p["pid"] == int(pid)]
assert len(p) == 1, s["served"]
p = p[0]
assert p["exe"] == exe and p["policy"] == "held" and p["mode"] == "audit" and p["uid"] == 0, p
assert p["violations"] == 1 and p["state"] == "alive" and p["served_usec"] > 0 and p["exited_usec"] is None, p
assert [q["name"] for q in p["pools"]] == ["config"] and p["pools"][0]["protects"] >= 1, p["pools"]
assert p["pools"][0]["protected"] is True and p["pools"][0]["last_trigger"] == "on-call:listen", p["pools"]
assert p["pools"][0]["protected_bytes"] > 0 and isinstance(p["pools"][0]["objects"], int), p["pools"]
PY
"$B/pmallocctl" status --socket "$SOCK" --json "$pid" >"$T/one.json"
validate "$T/one.json" || fail "status --json PID does not fit its schema: $(cat "$T/one.json")"
python3 -c '
import json, sys
s = json.loads(open(sys.argv[1]).read())
one = s["served"] + s["exited"]
assert s["pid"] == int(sys.argv[2]) and s["found"] and len(one) == 1, s
assert "sites" in one[0] and "rows" in one[0]["sites"], s' "$T/one.json" "$pid" ||
	fail "status --json PID: $(cat "$T/one.json")"
printf 'exit\n' >&3
exec 3>&-
wait "$runner"
pass "status --json fits its schema: pmallocd, counters, the served process with pool and violation; status PID too"

# N processes at once: the status is whole, in JSON and in text.
N=${PMALLOC_STATUS_N:-60}
: >"$T/many.pids"
kill_many() { xargs -r kill <"$T/many.pids" 2>/dev/null; true; }
at_exit kill_many
connected() { "$B/pmallocctl" status --socket "$SOCK" --json | grep -o '"served_connected":[0-9]*' | cut -d: -f2; }
# In batches, each let through before the next.  A process whose hand-out
# comes later than the shim waits (a loaded machine) runs unprotected and
# is not served: more are started until N are.
spawned=0 before=$(connected)
while [ "$(connected)" -lt $((before + N)) ] && [ $spawned -lt $((2 * N)) ]; do
	for _ in $(seq 25); do
		env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$NOFILE" sleep 300 &
		echo $! >>"$T/many.pids"
		spawned=$((spawned + 1))
	done
	# Asked once a second at most: each answer reads /proc for every process.
	for _ in $(seq 20); do
		sleep 1
		[ "$(connected)" -ge $((before + spawned)) ] && break
	done
done
[ "$(connected)" -ge $((before + N)) ] || fail "$(connected) served of $spawned started"
"$B/pmallocctl" status --socket "$SOCK" --json >"$T/many.json" || fail "status --json of $N: exit $?"
validate "$T/many.json" || fail "status --json of $N does not fit its schema"
python3 - "$T/many.json" "$T/many.pids" "$sleep_exe" "$N" <<'PY' || fail "status --json of $N is not whole"
import json, sys
s = json.loads(open(sys.argv[1]).read())
started = {int(l) for l in open(sys.argv[2])}
n = int(sys.argv[4])
assert len(s["served"]) == s["served_connected"], (len(s["served"]), s["served_connected"])
many = [p for p in s["served"] if p["pid"] in started]
assert len(many) >= n and all(p["exe"] == sys.argv[3] for p in many), (len(many), n)
assert all(p["policy"] == "many" and len(p["pools"][0]["rules"]) == 24 for p in many), many[0]
assert all(p["rules_unresolved"] == 24 for p in many), many[0]
PY
"$B/pmallocctl" status --socket "$SOCK" >"$T/many.txt" || fail "status of $N: exit $?"
size=$(wc -c <"$T/many.txt")
[ "$size" -gt 65536 ] && [ "$(grep -c "^  PID [0-9]*  $sleep_exe  uid 0  policy \"many\"" "$T/many.txt")" -ge $N ] &&
	! grep -q truncated "$T/many.txt" || fail "status text of $N: $size bytes, $(grep -c "$sleep_exe" "$T/many.txt") rows"
kill_many
pass "$N processes with 24 rules each: status --json whole and valid ($(wc -c <"$T/many.json") bytes), the text whole ($size bytes)"
exit 0
