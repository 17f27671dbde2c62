# SPDX-License-Identifier: GPL-2.0-or-later
# name_rules_limit.sh - the shim applies at most 256 rules by name to one
# loaded object; a policy naming more never drops the rest silently.
# many_sites has 300 allocating functions; a pool names them all
# ("many_sites:site_000" ... "site_299"): the first 256 are applied, and the
# 44 others are shown as not applied, and why, by pmallocctl status (text
# and --json; as many as its rows hold, the rest counted), said under
# PMALLOC_DEBUG, and in the journal's entry for a rule that protects
# nothing; pmallocctl check warns of such a policy.  Past the rows a
# message holds, status counts the rest in one line.  pmallocctl propose,
# from a learn run of the program, names 256 and pins the others.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/many_sites
CTL=$B/pmallocctl
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v python3 >/dev/null || skip "python3 not installed (checks the JSON)"
journald_ensure
unset PMALLOC_DEBUG
sites=$(for i in $(seq 0 299); do printf '"many_sites:site_%03d", ' "$i"; done)
write_conf "$CONF" <<EOF
version = 1;
policies = ( { name = "many"; match = { exe = [ "*/many_sites" ]; };
  pools = ( { name = "m"; sites = [ ${sites%, } ]; protect = [ "manual" ]; } ); } );
EOF

"$CTL" check "$CONF" >"$T/check" 2>&1 || fail "check: $(cat "$T/check")"
grep -q 'warning: policy "many": 300 rules by name fit an object "many_sites" fits (300 sites for it, 0 rules for any object): the shim applies the first 256; pin the others by offset' \
	"$T/check" || fail "check does not warn of the rules past 256: $(cat "$T/check")"
pass "check: warns of 300 rules by name for one object"

# Without pmallocd, under PMALLOC_DEBUG: each dropped rule said, where.
PMALLOC_DEBUG=1 PMALLOC_SOCKET=$T/none.sock PMALLOC_CONF=$CONF LD_PRELOAD=$SHIM "$PROG" </dev/null \
	>"$T/out" 2>"$T/debug" || fail "many_sites: $(cat "$T/out" "$T/debug")"
n=$(grep -c "site rule \"many_sites:site_[0-9]*\" not applied in $PROG: more than 256 rules by name fit it" "$T/debug")
[ "$n" = 44 ] || fail "PMALLOC_DEBUG said $n dropped rules, not 44: $(grep 'not applied' "$T/debug")"
grep -q 'site rule "many_sites:site_255" not applied' "$T/debug" && fail "site_255, the 256th, said dropped"
grep -q 'site rule "many_sites:site_256" not applied' "$T/debug" || fail "site_256 not said dropped"
pass "PMALLOC_DEBUG: the 44 rules past the first 256 for the object, each said not applied"

start_daemon
mkfifo "$T/hold"
exec 9<>"$T/hold"
env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$T/no.conf" "$PROG" <"$T/hold" 9<&- >"$T/out" 2>"$T/err" &
ppid=$!
wait_until 200 grep -qx ready "$T/out" || fail "many_sites: $(cat "$T/out" "$T/err")"
# The rules come after the hand-out, asynchronously to the program.
rules_in() { "$CTL" status --socket "$SOCK" >"$T/status" 2>&1 && grep -q '^      rules: ' "$T/status"; }
wait_until 200 rules_in || fail "status: no rules for PID $ppid: $(cat "$T/status")"
sed -n "/^  PID $ppid /,/^  PID /p" "$T/status" >"$T/proc"
grep -qE '^      rules: [0-9]+ resolved, 0 unresolved, [0-9]+ not applied \(too many rules by name for one object\)$' \
	"$T/proc" || fail "the pool's rule counts: $(cat "$T/proc")"
# 32 rows a message (the unmatched first): site_256 to site_287 listed,
# the 12 others counted.
grep -qx '      not applied: site many_sites:site_256 (not applied in a loaded object that more than 256 rules by name fit: the shim applies the first 256; pin the others by offset)' \
	"$T/proc" || fail "site_256 not shown as not applied: $(cat "$T/proc")"
grep -q 'not applied: site many_sites:site_2[0-4][0-9] \|not applied: site many_sites:site_25[0-5] \|not applied: site many_sites:site_[01]' \
	"$T/proc" && fail "one of the first 256 shown as not applied: $(cat "$T/proc")"
grep -qx '    268 of 300 rules not listed: 12 of them unresolved or not applied' "$T/proc" ||
	fail "the rules not listed: $(cat "$T/proc")"
grep -q 'warning: 44 of 300 rules match nothing' "$T/proc" || fail "the process's warning: $(cat "$T/proc")"
pass "status: the rules past the first 256 shown not applied, and why ($(grep -c '^      not applied: ' "$T/proc") rows listed)"

"$CTL" status --json --socket "$SOCK" >"$T/json" 2>&1 || fail "status --json: $(cat "$T/json")"
python3 - "$T/json" "$ppid" <<'PY' || fail "status --json: $(cat "$T/json")"
import json, sys
doc = json.load(open(sys.argv[1]))
procs = [p for p in doc["served"] if p["pid"] == int(sys.argv[2])]
assert len(procs) == 1, procs
rules = [r for pool in procs[0]["pools"] for r in pool.get("rules", [])]
dropped = [r["rule"] for r in rules if r["dropped"]]
assert dropped and all(int(r.rsplit("_", 1)[1]) >= 256 for r in dropped), dropped
assert all(not r["resolved"] and "first 256" in r["why"] for r in rules if r["dropped"]), rules
assert procs[0]["rules_total"] == 300 and procs[0]["rules_unresolved"] == 44, procs[0]
PY
pass "status --json: those rules \"dropped\": true, with why"

journal_sync
journalctl --no-pager -o cat --since "$TEST_SINCE" MESSAGE_ID=$MID_UNMATCHED _PID="$ppid" >"$T/journal"
# (One entry a rule, sent without waiting: journald may not take them all.)
grep -q 'site rule "many_sites:site_2[5-9][0-9]" of pool "m" (policy "many") is not applied in a loaded object that more than 256 rules by name fit' \
	"$T/journal" || fail "the journal: $(cat "$T/journal")"
grep -q 'site_[01][0-9][0-9]"\|site_2[0-4][0-9]"\|site_25[0-5]"\|matches no function' "$T/journal" &&
	fail "the journal names one of the first 256, or says a rule matches nothing: $(cat "$T/journal")"
pass "journal: the rules not applied, each said so ($(grep -c . "$T/journal") entries)"
exec 9>&-
wait "$ppid" || fail "many_sites exited $?: $(cat "$T/err")"

# 40 rules that all resolve, 32 rows a message: status says what it does
# not list, and how it counts, in one line.
sites=$(for i in $(seq 0 39); do printf '"many_sites:site_%03d", ' "$i"; done)
write_conf "$CONF" <<EOF
version = 1;
policies = ( { name = "many"; match = { exe = [ "*/many_sites" ]; };
  pools = ( { name = "m"; sites = [ ${sites%, } ]; protect = [ "manual" ]; } ); } );
EOF
kill -HUP "$DPID"
gen2() { "$CTL" status --json --socket "$SOCK" | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["policy_file"]["generation"] < 2)'; }
wait_until 200 gen2 || fail "pmallocd did not reload: $(cat "$T/daemon.log")"
mkfifo "$T/hold2"
exec 8<>"$T/hold2"
env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$T/no.conf" "$PROG" <"$T/hold2" 8<&- >"$T/out2" 2>"$T/err2" &
ppid2=$!
hidden() {
	"$CTL" status --socket "$SOCK" >"$T/status2" 2>&1
	sed -n "/^  PID $ppid2 /,/^  PID /p" "$T/status2" >"$T/proc2"
	grep -qx '    8 of 40 rules not listed: all resolved' "$T/proc2"
}
wait_until 200 hidden || fail "the 8 rules not listed: $(cat "$T/proc2")"
grep -qx '      rules: 32 resolved, 0 unresolved' "$T/proc2" || fail "the listed rules: $(cat "$T/proc2")"
pass "status: $(grep -x '    8 of 40 .*' "$T/proc2")"
exec 8>&-
wait "$ppid2" || fail "many_sites exited $?: $(cat "$T/err2")"

# propose never writes more names for one object than the shim applies:
# learned under a learn policy, the 300 sites come back as the first 256 by
# name and the 44 others pinned by their calls; under that proposal no rule
# is left out and every one resolves.
write_conf "$T/learn.conf" <<EOF2
version = 1;
policies = ( { name = "ms"; match = { exe = [ "$PROG" ]; }; mode = "learn";
  pools = ( { name = "setup"; sites = [ "*" ]; protect = [ "on-call:listen" ]; } ); } );
EOF2
since=@$(date +%s)
PMALLOC_SOCKET=$T/none.sock PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$PROG" </dev/null >"$T/out" 2>"$T/err" ||
	fail "many_sites learning: $(cat "$T/out" "$T/err")"
journal_sync
"$CTL" propose --mode enforce --exe "$PROG" --since "$since" --output "$T/proposed.conf" 2>"$T/err" || fail "propose: $(cat "$T/err")"
sed -n '/sites = \[/,/\]/p' "$T/proposed.conf" >"$T/sites"
[ "$(grep -c '"many_sites:site_[0-9]*"' "$T/sites")" = 256 ] && [ "$(grep -c '"many_sites@[0-9a-f]*:+0x[0-9a-f]*"' "$T/sites")" = 44 ] ||
	fail "propose's sites: $(cat "$T/sites")"
grep -q '"many_sites:site_2[5-9][6-9]"\|"many_sites:site_2[6-9][0-9]"' "$T/sites" && fail "propose named past the first 256: $(cat "$T/sites")"
grep -q '^ *#   site "many_sites:site_299": .* pinned by its 1 calls$' "$T/proposed.conf" ||
	fail "propose does not say why site_299 is pinned: $(grep '#' "$T/proposed.conf")"
"$CTL" check "$T/proposed.conf" >"$T/check" 2>&1 || fail "check refused the proposal: $(cat "$T/check")"
grep -qi warning "$T/check" && fail "check warns of the proposal: $(cat "$T/check")"
PMALLOC_DEBUG=1 PMALLOC_SOCKET=$T/none.sock PMALLOC_CONF=$T/proposed.conf LD_PRELOAD=$SHIM "$PROG" </dev/null \
	>"$T/out" 2>"$T/debug" || fail "many_sites under the proposal: $(cat "$T/out" "$T/debug")"
grep -q 'not applied' "$T/debug" && fail "a rule of the proposal not applied: $(grep 'not applied' "$T/debug")"
grep -q 'rules checked: 300 of 300 name a function loaded at start-up' "$T/debug" ||
	fail "the proposal's rules: $(grep 'rules checked' "$T/debug")"
pass "propose: 256 sites by name for the object, the 44 others pinned by their calls (said); all 300 resolve"
