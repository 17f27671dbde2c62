#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# life_audit.sh - the README's walkthrough on a small pre-forking server
# (life_server), with the real pmallocd, shim and journald and a stand-in
# for systemctl (this machine has no booted systemd) that drives the
# server: show (MainPID from its pid file), reload = SIGHUP, stop = SIGTERM.
#
#   learn (pmallocctl learn) -> a load of "get" requests -> pmallocctl
#   exercise (reload, a worker killed and respawned, stop) -> propose:
#   audit mode by default -> ready: not ready (24 h not passed) -> a load
#   the learn run never sent ("set": writes the start-up cache), then
#   exercise again (reload, respawn, stop) -> one report per site and
#   process -> ready: not ready (a site the policy names was written) ->
#   propose again: exactly that site left out, a comment names the writing
#   function -> ready: ready (--min-time 0), with the life-cycle events of
#   the audit run counted per role (main: a reload and a clean stop; child:
#   a respawn and the workers' stops), --json valid against
#   man/pmallocctl-ready.schema.json -> propose --mode enforce -> the same
#   load: zero kills.
# And issue 27's item 5: another user's learn run of the same program is
# refused by propose, and counted.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
command -v python3 >/dev/null || skip "python3 not installed (to validate JSON)"
mkdir -p "$T/bin" "$T/svc"
chmod 0777 "$T/svc"   # the run as nobody writes its port and pid there too
cp "$B/progs/life_server" "$T/bin/life_server"
EXE=$T/bin/life_server
CTL=$B/pmallocctl

# The systemctl stand-in (lib.sh): the unit is life_server, reload =
# SIGHUP, stop = SIGTERM and up to 10 s for it to go.
systemctl_stand_in "$T/svc"

# start_server [USER]: life_server under the shim (pmallocd's policy), 2 workers.
SPID=
start_server() {
	rm -f "$T/svc/pid" "$T/svc/start" "$T/svc/port"
	if [ -n "${1:-}" ]; then
		setpriv --reuid="$1" --regid=nogroup --clear-groups env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" \
			PMALLOC_CONF="$NOFILE" "$EXE" "$T/svc/port" "$T/svc/pid" 2 >>"$T/server.err" 2>&1 &
	else
		env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="$NOFILE" "$EXE" "$T/svc/port" "$T/svc/pid" 2 \
			>>"$T/server.err" 2>&1 &
	fi
	SPID=$!
	wait_until 200 test -s "$T/svc/port" || fail "life_server did not come up: $(cat "$T/server.err")"
	stand_in_follow "$(cat "$T/svc/pid")" HUP TERM 10
	PORT=$(cat "$T/svc/port")
}
stop_server() { "$PMALLOC_SYSTEMCTL" stop life; wait "$SPID" 2>/dev/null; }

# -- learn
"$CTL" learn --exe "$EXE" --output "$CONF" >/dev/null 2>"$T/err" || fail "learn: $(cat "$T/err")"
chmod 0644 "$CONF"
start_daemon
start_server
line_load get 20
"$CTL" exercise life >"$T/ex" 2>&1 || fail "exercise: $(cat "$T/ex")"
grep -q '^reload: systemctl reload life.service' "$T/ex" && grep -q '^  respawned: worker PID' "$T/ex" &&
	grep -q '^  check: life.service inactive, main PID [0-9]* gone' "$T/ex" || fail "exercise said: $(cat "$T/ex")"
wait "$SPID" || fail "life_server exited $? after the stop"
pass "learn: 20 requests, then exercise: reload, a worker respawned, stop, each checked"

# Another user's run of the same program, under the same learn policy:
# her entries are the program's own (journald's _EXE), her uid is not trusted.
if command -v setpriv >/dev/null; then
	start_server nobody
	line_load get 3
	stop_server
	wait_until 100 sh -c "journalctl --no-pager -o json --since '$E2E_SINCE' MESSAGE_ID=$MID_LEARNED _UID=65534 PMALLOC_EXE='$EXE' | grep -q ." ||
		fail "no learned entry of uid nobody"
fi
journal_sync

# -- propose: audit by default
"$CTL" propose --exe "$EXE" --output "$CONF" >/dev/null 2>"$T/err" || fail "propose: $(cat "$T/err")"
grep -q '^    mode = "audit";' "$CONF" || fail "propose did not write audit mode: $(cat "$CONF")"
if command -v setpriv >/dev/null; then
	grep -q "entries refused: runs of $EXE by uid 65534, not root" "$T/err" ||
		fail "another user's run not refused and said: $(cat "$T/err")"
	pass "another user's learn run of the program refused and counted: $(grep -o '[0-9]* entries refused' "$T/err")"
fi
"$CTL" check "$CONF" >/dev/null 2>&1 || fail "check refused the proposal: $("$CTL" check "$CONF" 2>&1)"
sites_of "$CONF" >"$T/sites.audit"
grep -q 'init_cache' "$T/sites.audit" && grep -q 'load_types' "$T/sites.audit" ||
	fail "proposal: want load_types and init_cache: $(cat "$T/sites.audit")"
# What libc allocates when the shim starts a thread of its own (its timer,
# at the listen) is the shim's: never learned, never a site.
! grep -q 'libpmalloc_shim' "$T/sites.audit" || fail "proposal: a site in the shim itself: $(cat "$T/sites.audit")"
daemon_reload
"$CTL" status --socket "$SOCK" | grep -q '^  life_server: audit  (exe ' || fail "status does not show the stage: $("$CTL" status --socket "$SOCK")"
pass "propose: mode audit by default (status says the stage), sites $(tr '\n' ' ' <"$T/sites.audit")"

# -- audit: the learned load, then one it never sent
start_server
line_load get 5
rc=0; "$CTL" ready --exe "$EXE" --config "$CONF" >"$T/ready" 2>&1 || rc=$?
[ $rc = 1 ] || fail "ready before 24 h: exit $rc: $(cat "$T/ready")"
grep -q '^not ready:' "$T/ready" && grep -q 'in audit for .*, less than 24h00min (--min-time)' "$T/ready" ||
	fail "ready's reasons: $(cat "$T/ready")"
pass "ready before the audit load: not ready ($(grep -- '  - ' "$T/ready" | head -n 1 | sed 's/^ *- //'))"
line_load set 20
"$CTL" exercise life >"$T/ex" 2>&1 || fail "exercise in audit: $(cat "$T/ex")"
wait "$SPID" || fail "life_server exited $? after the stop in audit"
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$EXE" PMALLOC_MODE=audit) || fail "no audit report"
sleep 0.5
e=$(jnow MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$EXE" PMALLOC_MODE=audit)
n=$(printf '%s\n' "$e" | grep -c .)
pids=$(printf '%s\n' "$e" | jfield OBJECT_PID | sort -u | grep -c .)
[ "$n" = "$pids" ] || fail "want one report per process: $n reports of $pids processes"
printf '%s\n' "$e" | jfield PMALLOC_OBJECT_SITE | grep -qv '^init_cache+' && fail "reports of other sites: $e"
printf '%s\n' "$e" | jfield PMALLOC_BACKTRACE | grep -q "(cache_set+0x[0-9a-f]*)" || fail "writer not cache_set: $e"
pass "audit: 20 \"set\" requests, $n reports, one per process (init_cache written by cache_set)"

rc=0; "$CTL" ready --exe "$EXE" --config "$CONF" --min-time 0 >"$T/ready" 2>&1 || rc=$?
[ $rc = 1 ] && grep -q 'site init_cache+0x[0-9a-f]* was written in audit (by cache_set+0x[0-9a-f]* .*) and the policy still names it' "$T/ready" ||
	fail "ready after the audit load: exit $rc: $(cat "$T/ready")"
pass "ready after the audit load: not ready, the written site named"

# -- refine
"$CTL" propose --exe "$EXE" --output "$CONF" >/dev/null 2>"$T/err" || fail "propose again: $(cat "$T/err")"
sites_of "$CONF" >"$T/sites.refined"
[ "$(comm -23 "$T/sites.audit" "$T/sites.refined" | grep -c init_cache)" = 1 ] &&
	[ "$(comm -23 "$T/sites.audit" "$T/sites.refined" | grep -c .)" = 1 ] &&
	[ "$(comm -13 "$T/sites.audit" "$T/sites.refined" | grep -c .)" = 0 ] ||
	fail "refine: want exactly init_cache left out: before $(cat "$T/sites.audit"), after $(cat "$T/sites.refined"); propose said: $(cat "$T/err")"
grep -q '# Left out after audit: the site "init_cache+0x[0-9a-f]*", written by "cache_set+0x[0-9a-f]* (the store in [^"]*)" [0-9]* times in [0-9]* processes' "$CONF" ||
	fail "refine: no comment: $(grep '#' "$CONF")"
grep -q '^    mode = "audit";' "$CONF" || fail "refine: not audit"
daemon_reload
rc=0; "$CTL" ready --exe "$EXE" --config "$CONF" --min-time 0 >"$T/ready" 2>&1 || rc=$?
[ $rc = 0 ] && grep -q '^ready' "$T/ready" || fail "ready after refining: exit $rc: $(cat "$T/ready")"
# The audit run: one main (a reload, a clean stop), its 2 workers and the
# one respawned for the one killed; life_server keeps its workers through
# a reload (the one note), and the two alive at the stop exit cleanly.
grep -q '^  role main: 1 processes, 1 reloads, 0 respawns, 1 stops seen$' "$T/ready" &&
	grep -q '^  role child: 3 processes, 0 reloads, 1 respawns, 2 stops seen$' "$T/ready" ||
	fail "ready: the audit run's life-cycle not counted: $(cat "$T/ready")"
[ "$(grep -c 'note: ' "$T/ready")" = 1 ] && grep -q 'note: role child: no reload seen' "$T/ready" ||
	fail "ready: want the one note (no reload of a worker): $(cat "$T/ready")"
"$CTL" ready --exe "$EXE" --config "$CONF" --min-time 0 --json >"$T/ready.json" || fail "ready --json: exit $?"
json_schema_check "$SRC/man/pmallocctl-ready.schema.json" "$T/ready.json" || fail "ready --json does not fit its schema: $(cat "$T/ready.json")"
grep -q '"ready": true' "$T/ready.json" || fail "ready --json: $(cat "$T/ready.json")"
pass "refine: exactly init_cache left out, said in a comment; ready, the audit run's events counted ($(grep '^  role' "$T/ready" | sed 's/^ *//' | tr '\n' ';')), --json fits its schema"

# -- enforce under the load audit saw
"$CTL" propose --exe "$EXE" --mode enforce --output "$CONF" >/dev/null 2>"$T/err" || fail "propose --mode enforce: $(cat "$T/err")"
grep -q '^    mode = "enforce";' "$CONF" || fail "not enforce: $(cat "$CONF")"
daemon_reload
since=$(date +%s.%6N)
start_server
line_load get 10
line_load set 20
line_load get 10
stop_server
journal_sync
k=$(journalctl --no-pager -o json --since "@$since" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$EXE" | grep -c .)
[ "$k" = 0 ] || fail "enforce: $k violations"
grep -q 'killed by SIGSEGV' "$T/server.err" && fail "enforce: a kill: $(cat "$T/server.err")"
pass "enforce: 40 requests of both kinds, zero kills"
stop_daemon || fail "pmallocd exit status $?"
exit 0
