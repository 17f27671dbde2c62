#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# learn_libc_state.sh - what the C library and the loader allocate for
# themselves is never proposed: life_server looks its user up at start
# (as nginx's "user" does), and glibc then allocates a record for every
# name-service module nsswitch.conf names, and writes one only when a
# lookup first needs that module.  The learn load ("get") needs none;
# then, under the enforce proposal, "who" looks up a user and a service
# that exist nowhere: glibc loads the modules behind "files" and writes
# their records.  Proposed, those records killed the worker at the first
# such lookup, however rare (a day's first unknown user, a reload that
# names a host).
#   learn (real pmallocd, shim, journald) -> 20 "get" -> propose --mode
#   enforce: no site in libc or ld.so, the comment says what was left on
#   the heap and why -> enforce: 5 "who" and 5 "get" all answered, no
#   violation, the master and its workers alive.
# The shim keeps the same rule for a policy written by hand: a site with
# no object or an object glob ("global_state_allocate", "*:__nss_*")
# never fits glibc's objects, so "who" is answered; named without a glob
# ("libc.so.6:global_state_allocate"), it does, and "who" kills a worker
# (the explicit choice is the author's).
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
mkdir -p "$T/bin" "$T/svc"
cp "$B/progs/life_server" "$T/bin/life_server"
EXE=$T/bin/life_server
CTL=$B/pmallocctl

SPID=
start_server() {  # [POLICY FILE]
	rm -f "$T/svc/pid" "$T/svc/port"
	env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="${1:-$NOFILE}" "$EXE" "$T/svc/port" "$T/svc/pid" 2 \
		>>"$T/server.err" 2>&1 &
	SPID=$!
	wait_until 200 test -s "$T/svc/port" || fail "life_server did not come up: $(cat "$T/server.err")"
	PORT=$(cat "$T/svc/port")
}
stop_server() {
	kill -TERM "$SPID"
	wait "$SPID" || fail "life_server exited $? at its stop: $(tail -n 5 "$T/server.err")"
}

"$CTL" learn --exe "$EXE" --output "$CONF" >/dev/null 2>"$T/err" || fail "learn: $(cat "$T/err")"
chmod 0644 "$CONF"
start_daemon
start_server
line_load get 20
stop_server
journal_sync
# What the start-up allocated for the C library's lookup was learned (and
# never written): the proposal's choice to make, not learning's gap.
wait_until 100 sh -c "journalctl --no-pager -o cat --output-fields=PMALLOC_CHAIN --since '$E2E_SINCE' \
	MESSAGE_ID=$MID_LEARNED PMALLOC_EXE='$EXE' | grep -q '__nss_module_allocate'" ||
	fail "learning saw no name-service module record: is nsswitch.conf's passwd line a module list?"

"$CTL" propose --exe "$EXE" --mode enforce --output "$CONF" >/dev/null 2>"$T/err" || fail "propose: $(cat "$T/err")"
sites_of "$CONF" >"$T/sites"
grep -q 'load_config' "$T/sites" && grep -q 'init_cache' "$T/sites" || fail "proposal: want load_config and init_cache: $(cat "$T/sites")"
! grep -Eq '"(libc\.so|ld-linux)[^:]*:' "$T/sites" || fail "proposal: a site in the C library or the loader: $(grep -E 'libc\.so|ld-linux' "$T/sites")"
grep -q "^        # left on the heap: [0-9]* bytes of the C library's and the loader's own state" "$CONF" ||
	fail "the proposal does not say what it left to the C library: $(grep '^        #' "$CONF")"
daemon_reload

start_server
line_load who 5
line_load get 5
kill -0 "$SPID" || fail "the master is gone"
[ "$(pgrep -P "$SPID" | grep -c .)" = 2 ] || fail "want 2 workers: $(pgrep -P "$SPID")"
stop_server
journal_sync
v=$(jnow MESSAGE_ID="$MID_VIOLATION" PMALLOC_EXE="$EXE")
[ -z "$v" ] || fail "violations under the proposal: $(printf '%s\n' "$v" | jfield PMALLOC_OBJECT_SITE | sort | uniq -c)"
pass "enforce: 5 lookups of modules learning never needed and 5 \"get\" answered, no violation; $(grep -o -m1 "left on the heap: [0-9]* bytes" "$CONF")"

# -- a policy by hand, from a file (no daemon)
stop_daemon
hand() {  # SITE...: a policy file naming load_config and SITE...
	local sites='"load_config"' x
	for x in "$@"; do sites+=", \"$x\""; done
	cat >"$T/hand.conf" <<EOF
version = 1;
policies = ( { name = "hand"; match = { exe = [ "$EXE" ]; };
  pools = ( { name = "conf"; sites = [ $sites ]; protect = [ "on-wait" ]; } ); } );
EOF
}
since=$(date '+%Y-%m-%d %H:%M:%S')
hand "global_state_allocate" "*:__nss_*" "__nss_action_allocate"
start_server "$T/hand.conf"
line_load who 3
line_load get 2
stop_server
journal_sync
v=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID="$MID_VIOLATION" PMALLOC_EXE="$EXE" 2>/dev/null)
[ -z "$v" ] || fail "a site by no object or a glob fit glibc: $(printf '%s\n' "$v" | jfield PMALLOC_OBJECT_SITE)"
pass "by hand: sites \"global_state_allocate\", \"*:__nss_*\", \"__nss_action_allocate\" fit no glibc object: 3 \"who\" answered"

hand "libc.so.6:global_state_allocate"
start_server "$T/hand.conf"
exec 3<>"/dev/tcp/127.0.0.1/$PORT" || fail "connect $PORT"
printf 'who\n' >&3
IFS= read -r reply <&3 && fail "who answered under libc.so.6:global_state_allocate: $reply"
exec 3>&-
e=$(jsel 1 MESSAGE_ID="$MID_VIOLATION" PMALLOC_EXE="$EXE") || fail "no violation under libc.so.6:global_state_allocate"
printf '%s\n' "$e" | jfield PMALLOC_OBJECT_SITE | grep -q '^global_state_allocate+' ||
	fail "the write was not into global_state_allocate's object: $e"
stop_server
pass "by hand: \"libc.so.6:global_state_allocate\" (no glob) fits: the first \"who\" killed the worker, reported at that site"
