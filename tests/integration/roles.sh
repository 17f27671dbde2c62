#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# roles.sh - learn -> propose -> enforce per role.  roles_prog is a master
# and a worker forked before the master's trigger: both read the
# configuration, the master writes its own object once it listens, the
# worker its own once it polls.  Learning sees roles main and child
# (PMALLOC_ROLE on each learned entry); propose writes one pool per set of
# roles: the configuration for both, the master's object for the worker
# only, the worker's for the master only.  Under enforce (served by the
# real pmallocd) the same run lives; the worker writing the master's object
# is killed, its violation saying role child; a grandchild (child.child, a
# role learning never saw) runs unprotected, said once in the journal; a
# policy naming no pool for role main says so in pmallocctl status.
. "$(dirname "$0")/e2e_lib.sh"

PROG=$(readlink -f "$B/progs/roles_prog")
MID_LEARNED=81abfd4bd92b4d58b67b434bbf0f7ac1
MID_ROLE=239811c3bab44d1681c765550bb90227
journald_ensure

cat >"$T/learn.conf" <<EOF
version = 1;
policies = ( { name = "rl"; match = { exe = [ "$PROG" ]; }; mode = "learn";
  pools = ( { name = "state"; sites = [ "*" ]; protect = [ "on-wait", "on-call:listen" ]; } ); } );
EOF
since=@$(date +%s.%6N)
E2E_CONF=$T/learn.conf hardened "$T/out" "$T/err" "$PROG" || fail "learn run: exit $?: $(cat "$T/out" "$T/err")"
grep -qx 'master done, worker 0' "$T/out" || fail "learn run: $(cat "$T/out")"
e=$(jsel 6 MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$PROG") || fail "learned entries: $e"
for r in main child; do
	printf '%s\n' "$e" | grep -q "\"PMALLOC_ROLE\":\"$r\"" || fail "no learned entry of role $r: $e"
done
pass "learning: entries of roles main and child"

"$B/pmallocctl" propose --mode enforce --exe "$PROG" --since "$since" --output "$T/p.conf" 2>"$T/perr" ||
	fail "propose: $(cat "$T/perr")"
"$B/pmallocctl" check "$T/p.conf" >"$T/check" 2>&1 || fail "check: $(cat "$T/check")"
grep -qi warning "$T/check" && fail "check warns: $(cat "$T/check")"
# pool NAME ROLES SITE: the proposal has that pool with exactly those.
pool() {
	awk -v n="name = \"$1\";" '$0 ~ n { p = 1 } p && /roles = / { print; exit }' "$T/p.conf" | grep -qxF "        roles = [ $2 ];" ||
		fail "pool $1: not roles $2: $(cat "$T/p.conf")"
	awk -v n="name = \"$1\";" '$0 ~ n { p = 1; next } p && /^ *"/ { print; exit }' "$T/p.conf" | grep -q "roles_prog:$3\"" ||
		fail "pool $1: not site $3: $(cat "$T/p.conf")"
}
pool state '"main", "child"' make_config
pool state-child '"child"' make_master
pool state-main '"main"' make_worker
pass "propose: one pool per set of roles (state: main, child; state-child; state-main)"

write_conf "$CONF" <"$T/p.conf"
start_daemon
hardened "$T/out" "$T/err" "$PROG" || fail "enforce: exit $?: $(cat "$T/out" "$T/err")"
grep -qx 'master done, worker 0' "$T/out" && [ ! -s "$T/err" ] || fail "enforce: $(cat "$T/out" "$T/err")"
pass "enforce: the learned run lives, master and worker"

hardened "$T/out" "$T/err" "$PROG" inject
grep -qx 'master done, worker 139' "$T/out" || fail "inject: the worker lived: $(cat "$T/out" "$T/err")"
parse_report "$(cat "$T/err")" || fail "inject: not a report line: $(cat "$T/err")"
[ "$R_POOL" = state-child ] || fail "inject: pool $R_POOL"
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID="$R_PID") || fail "inject: no violation entry"
expect_field "$e" PMALLOC_ROLE child
expect_field "$e" PMALLOC_POOL state-child
pass "the worker writing the master's object is killed, role child in the journal"

hardened "$T/out" "$T/err" "$PROG" deep || fail "deep: exit $?: $(cat "$T/out" "$T/err")"
grep -qx 'grandchild done' "$T/out" && [ ! -s "$T/err" ] || fail "deep: $(cat "$T/out" "$T/err")"
e=$(jsel 1 MESSAGE_ID=$MID_ROLE PMALLOC_EXE="$PROG") || fail "deep: no entry for the unprotected role"
count_is 1 "$e" || fail "deep: said more than once: $e"
expect_field "$e" PMALLOC_ROLE child.child
pass "a role learning never saw (child.child) runs unprotected, said once"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"

# A policy whose pools name only child: main runs unprotected, said in status.
sed -n '1,/pools = (/p' "$T/p.conf" >"$T/c.conf"
cat >>"$T/c.conf" <<EOF
      { name = "state"; sites = [ "make_master" ]; roles = [ "child" ]; protect = [ "on-wait" ]; }
    );
  }
);
EOF
write_conf "$CONF" <"$T/c.conf"
start_daemon
hardened "$T/out" "$T/err" "$PROG" || fail "child-only policy: exit $?: $(cat "$T/out" "$T/err")"
status=$("$B/pmallocctl" status --socket "$SOCK") || fail "status: $status"
printf '%s\n' "$status" | grep -Eq "^  PID $HPID  .*unprotected: no pool of its policy names role main" ||
	fail "status does not say main is unprotected: $status"
"$B/pmallocctl" status --json --socket "$SOCK" | grep -q '"role":"main","role_unprotected":true' ||
	fail "status --json: $("$B/pmallocctl" status --json --socket "$SOCK")"
pass "status says a process whose role no pool names runs unprotected"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
