#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# status_rules.sh - no silent non-protection, without PMALLOC_DEBUG: a
# program served by the real pmallocd with a policy holding a mistyped site
# (parse_confg), in a policy file with an exe glob that can never match
# (no leading '/') and one naming a symbolic link.  pmallocctl status (text
# and --json) shows, for that process's pool, the unresolved site and why,
# a pool no trigger reached as not protected, and the file's warnings;
# status PID shows every rule and the bytes and objects per call site; the
# journal has the unmatched rule (the shim's entry) and the warnings
# (pmallocd's, at load).  The process's rules stay in status once it exits.
# status PID fetches the site table of a pool no trigger reached (from a
# process that reads orders).  A rule that a later dlopen resolves is shown
# resolved from then on; a
# forked child shows the rules it inherited.
# A client's rules message is checked like a report: one naming a pool not
# handed to it is refused as forged; past the rate, messages are counted
# and not kept.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/learn_prog
CTL=$B/pmallocctl
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v python3 >/dev/null || skip "python3 not installed (checks the JSON)"
journald_ensure
unset PMALLOC_DEBUG
ln -s /bin/true "$T/link-to-true"
write_conf "$CONF" <<EOF
version = 1;
policies = (
  { name = "typo"; match = { exe = [ "*/learn_prog" ]; };
    pools = ( { name = "cfg"; sites = [ "parse_confg", "load_config" ]; protect = [ "on-call:listen" ]; },
              { name = "later"; sites = [ "make_buffer" ]; protect = [ "manual" ]; } ); },
  { name = "bare"; match = { exe = [ "learn_prog" ]; }; pools = ( { name = "a"; sites = [ "f" ]; } ); },
  { name = "link"; match = { exe = [ "$T/link-to-true" ]; }; pools = ( { name = "a"; sites = [ "f" ]; } ); },
  { name = "demo"; match = { exe = [ "*/wire_client" ]; };
    pools = ( { name = "config"; sites = [ "f" ]; } ); },
  { name = "plugin"; match = { exe = [ "*/ip_dlopen" ]; };
    pools = ( { name = "plug"; sites = [ "plugin_init" ]; protect = [ "on-call:listen" ]; } ); },
  { name = "held"; match = { exe = [ "*/e2e_hold" ]; };
    pools = ( { name = "all"; sites = [ "*" ]; protect = [ "manual" ]; } ); }
);
EOF
start_daemon

# learn_prog holds until its standard input ends: when fd 9 closes.
mkfifo "$T/hold"
exec 9<>"$T/hold"
env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$T/no.conf" "$PROG" hold <"$T/hold" 9<&- >"$T/out" 2>"$T/err" &
ppid=$!
wait_until 200 grep -qx ready "$T/out" || fail "learn_prog hold: $(cat "$T/out" "$T/err")"
# The rules come after the hand-out, the sites after the protect: both
# asynchronously to the program.
sites_in() { "$CTL" status "$ppid" --socket "$SOCK" >"$T/detail" 2>&1 && grep -q '^      site load_config' "$T/detail"; }
wait_until 200 sites_in || fail "status $ppid: no site table: $(cat "$T/detail")"

"$CTL" status --socket "$SOCK" >"$T/status" 2>&1 || fail "status: exit $?: $(cat "$T/status")"
sed -n "/^  PID $ppid /,/^  PID /p" "$T/status" >"$T/proc"
grep -q "policy \"typo\" (enforce" "$T/proc" || fail "PID $ppid not served typo: $(cat "$T/status")"
grep -A3 '^    pool "cfg": 4096 bytes protected in 1 objects' "$T/proc" >"$T/cfg" || fail "pool cfg: $(cat "$T/proc")"
grep -qx '      rules: 2 resolved, 1 unresolved' "$T/cfg" || fail "cfg's rule counts: $(cat "$T/proc")"
grep -qx '      unresolved: site parse_confg (no function of that name in any loaded object)' "$T/cfg" ||
	fail "the mistyped site is not flagged: $(cat "$T/proc")"
grep -q 'resolved: site load_config' "$T/proc" && fail "summary lists resolved rules: $(cat "$T/proc")"
grep -qx '    pool "later": not protected yet (no trigger has fired)' "$T/proc" ||
	fail "the manual pool is not shown unprotected: $(cat "$T/proc")"
grep -qx '    warning: 1 of 4 rules match nothing: they protect nothing' "$T/proc" ||
	fail "no warning line: $(cat "$T/proc")"
grep -q '^policy file warnings' "$T/status" || fail "no warnings section: $(cat "$T/status")"
grep -q '^  line 6: policy "bare": exe "learn_prog" can never match' "$T/status" ||
	fail "the bare exe glob is not in status: $(cat "$T/status")"
grep -q "^  line 7: .*symbolic link" "$T/status" || fail "the symbolic link is not in status: $(cat "$T/status")"
[ ! -s "$T/err" ] || fail "the program said something on stderr: $(cat "$T/err")"
pass "status: the mistyped site flagged in its pool, an untriggered pool unprotected, the file's warnings; no debug"

grep -qx '      resolved: site load_config' "$T/detail" &&
	grep -qx '      resolved: trigger on-call:listen' "$T/detail" &&
	grep -qx '      resolved: site make_buffer' "$T/detail" &&
	grep -qx '      unresolved: site parse_confg (no function of that name in any loaded object)' "$T/detail" ||
	fail "status PID does not list every rule: $(cat "$T/detail")"
grep -Eq '^      site load_config\+0x[0-9a-f]+  pool "cfg": 1 objects, 4096 bytes$' "$T/detail" ||
	fail "status PID: load_config's objects and bytes: $(cat "$T/detail")"
"$CTL" status 999999999 --socket "$SOCK" >"$T/none" 2>&1
[ $? = 1 ] || fail "status of an unknown PID: exit not 1: $(cat "$T/none")"
grep -q '^no such process: PID 999999999' "$T/none" || fail "unknown PID: $(cat "$T/none")"
pass "status PID: every rule, and objects and bytes per call site; an unknown PID exits 1"

"$CTL" status --json --socket "$SOCK" >"$T/status.json" || fail "status --json: exit $?"
"$CTL" status --pid "$ppid" --json --socket "$SOCK" >"$T/detail.json" || fail "status --pid --json: exit $?"
python3 - "$T/status.json" "$T/detail.json" "$ppid" <<'PY' || fail "status --json: $(cat "$T/status.json" "$T/detail.json")"
import json, sys
summary, detail = (json.load(open(p)) for p in sys.argv[1:3])
pid = int(sys.argv[3])
w = summary["policy_warnings"]
assert any(x["line"] == 6 and 'exe "learn_prog" can never match' in x["warning"] for x in w), w
assert any(x["line"] == 7 and "symbolic link" in x["warning"] for x in w), w
for doc, full in ((summary, False), (detail, True)):
    p = [p for p in doc["served"] if p["pid"] == pid][0]
    pools = {x["name"]: x for x in p["pools"]}
    cfg, later = pools["cfg"], pools["later"]
    assert cfg["protected"] and cfg["protected_bytes"] == 4096 and cfg["objects"] == 1, cfg
    assert [r["resolved"] for r in cfg["rules"]].count(True) == 2, cfg
    bad = [r for r in cfg["rules"] if not r["resolved"]]
    assert bad == [{"kind": "site", "rule": "parse_confg", "resolved": False, "waiting": False,
                    "dropped": False, "why": "no function of that name in any loaded object"}], cfg["rules"]
    assert len(cfg["rules"]) == 3, cfg["rules"]
    assert later["protected"] is False, later
    assert p["rules_unresolved"] == 1 and p["rules_total"] == 4, p
    if full:
        s = [s for s in p["sites"]["rows"] if s["site"].startswith("load_config+0x")]
        assert s and s[0]["pool"] == "cfg" and s[0]["objects"] == 1 and s[0]["bytes"] == 4096, p["sites"]
    else:
        assert "sites" not in p, p
PY
pass "status --json and status --pid --json carry the same"

in_journal() {
	journal_sync
	journalctl --no-pager -o json --since "$TEST_SINCE" "$@" >"$T/j"
	[ -s "$T/j" ]
}
wait_until 100 in_journal MESSAGE_ID=$MID_UNMATCHED PMALLOC_POLICY=typo _PID="$ppid" ||
	fail "no journal entry for the mistyped site"
grep -q '"PMALLOC_RULE":"parse_confg"' "$T/j" && grep -q '"PMALLOC_POOL":"cfg"' "$T/j" || fail "entry: $(cat "$T/j")"
wait_until 100 in_journal _PID="$DPID" MESSAGE_ID=$MID_POLICY PRIORITY=4 CONFIG_LINE=6 ||
	fail "no journal warning for the bare exe glob"
pass "the journal has the unmatched site (from the process) and the exe glob's warning (from pmallocd)"

# A pool no trigger has reached: its site table comes when status PID asks
# (the process reads pmallocd's orders: it has a manual pool).
mkfifo "$T/held"
exec 8<>"$T/held"
env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$T/no.conf" "$B/progs/e2e_hold" <"$T/held" 9<&- 8<&- \
	>"$T/held.out" 2>"$T/held.err" &
hpid=$!
wait_until 200 grep -qx listening "$T/held.out" || fail "e2e_hold: $(cat "$T/held.out" "$T/held.err")"
"$CTL" status "$hpid" --socket "$SOCK" >"$T/held.status" 2>&1 || fail "status $hpid: $(cat "$T/held.status")"
grep -qx '    pool "all": not protected yet (no trigger has fired)' "$T/held.status" &&
	grep -Eq '^      site .*  pool "all": [1-9][0-9]* objects, [1-9][0-9]* bytes$' "$T/held.status" ||
	fail "status PID did not fetch the unprotected pool's sites: $(cat "$T/held.status")"
grep -q 'fresh table asked' "$T/held.status" && fail "the answer never came: $(cat "$T/held.status")"
exec 8>&-
wait "$hpid" || fail "e2e_hold exited $?: $(cat "$T/held.err")"
pass "status PID asks a process that reads orders for its site table: an unprotected pool's sites"

# plugin_init is in a library loaded after start-up: unresolved at first,
# resolved once the plugin allocates.
PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$T/nonexistent LD_PRELOAD=$SHIM "$B/progs/ip_dlopen" "$B/progs/libip_plugin.so" \
	>"$T/dl.out" 2>"$T/dl.err" &
dpid=$!
wait "$dpid" || fail "ip_dlopen exited $?: $(cat "$T/dl.out" "$T/dl.err")"
grep -q '^plugin_init: struct 1' "$T/dl.out" || fail "plugin_init's objects not protected: $(cat "$T/dl.out")"
dl_resolved() { "$CTL" status "$dpid" --socket "$SOCK" >"$T/dl.status" 2>&1 &&
	grep -qx '      resolved: site plugin_init' "$T/dl.status"; }
wait_until 200 dl_resolved || fail "plugin_init not resolved after the dlopen: $(cat "$T/dl.status")"
grep -q '^      unresolved:' "$T/dl.status" && fail "still unresolved: $(cat "$T/dl.status")"
pass "a site in a dlopen'ed library: resolved in status once the library allocates"

# A hostile client: its own pool, too often; then a pool it was not handed.
"$WIRE" --socket "$SOCK" --rules config --rules-n $((10 + 5)) --hold 30000 >"$T/w1" 2>&1 &
wpid=$!
flood_seen() { "$CTL" status "$wpid" --socket "$SOCK" >"$T/w1status" 2>&1 &&
	grep -q '(5 rules and sites messages over the rate limit, not kept)' "$T/w1status"; }
wait_until 200 flood_seen || fail "rate limit not shown: $(cat "$T/w1status")"
grep -qx '      unresolved: site typo_fn (no function of that name in any loaded object)' "$T/w1status" ||
	fail "the client's own pool: $(cat "$T/w1status")"
"$WIRE" --socket "$SOCK" --rules nosuch >"$T/w2" 2>&1 || fail "wire_client: $(cat "$T/w2")"
forged() { "$CTL" status --socket "$SOCK" | grep -q '^dropped: .* 1 forged,'; }
wait_until 200 forged || fail "a foreign pool not counted as forged: $("$CTL" status --socket "$SOCK")"
"$CTL" status --socket "$SOCK" | grep -q 'nosuch' && fail "the foreign pool reached status"
kill "$wpid"
wait "$wpid" 2>/dev/null
pass "a rules message naming a pool not handed out: refused as forged; past the rate: counted, not kept"

# A forked child that reports on its parent's connection shows the rules
# it inherited.
"$WIRE" --socket "$SOCK" --rules config --fork-report >"$T/w3" 2>&1 || fail "wire_client: $(cat "$T/w3")"
child=$(sed -n 's/^child=//p' "$T/w3")
[ -n "$child" ] || fail "no child: $(cat "$T/w3")"
child_rules() { "$CTL" status "$child" --socket "$SOCK" >"$T/w3status" 2>&1 &&
	grep -qx '      unresolved: site typo_fn (no function of that name in any loaded object)' "$T/w3status"; }
wait_until 200 child_rules || fail "the forked child's rules: $(cat "$T/w3status")"
grep -q "forked child of PID" "$T/w3status" || fail "not shown as a forked child: $(cat "$T/w3status")"
pass "a forked child shows the rules it inherited"

exec 9>&-
wait "$ppid" || fail "learn_prog exited $?: $(cat "$T/err")"
gone() { "$CTL" status --socket "$SOCK" | sed -n '/^exited processes/,$p' | grep -q "^  PID $ppid "; }
wait_until 200 gone || fail "PID $ppid never moved to the exited processes"
"$CTL" status "$ppid" --socket "$SOCK" >"$T/after" 2>&1 || fail "status PID after exit: $(cat "$T/after")"
grep -q '^exited processes (PID' "$T/after" &&
	grep -qx '      unresolved: site parse_confg (no function of that name in any loaded object)' "$T/after" ||
	fail "the exited process's rules are gone: $(cat "$T/after")"
stop_daemon || fail "pmallocd exit status $?"
pass "an exited process keeps its rules in status"
