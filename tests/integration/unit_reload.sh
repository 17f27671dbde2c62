#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# unit_reload.sh - "systemctl reload pmallocd" fails for a refused policy
# file.  The unit's ExecReload= commands are run here in order as systemd
# runs them (stop at the first that fails; the reload's result is that
# failure), against a real pmallocd: a refused file fails the reload and
# pmallocd is never signalled (its policy generation stays); a good file
# passes and is loaded.  The check line reads the daemon's default file;
# here it is given the test's file (--config), as the daemon is.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

unit=$SRC/systemd/pmallocd.service
mapfile -t reload < <(sed -n 's/^ExecReload=//p' "$unit")
[ ${#reload[@]} = 2 ] || fail "want 2 ExecReload= lines, have ${#reload[@]}: ${reload[*]}"
[[ ${reload[0]} == '@SBINDIR@/pmallocd --check' ]] || fail "the first ExecReload= is not the check: ${reload[0]}"

# systemctl reload: each command in turn, the first failure is the result.
systemctl_reload() {
	local cmd
	for cmd in "${reload[@]}"; do
		cmd=${cmd//@SBINDIR@/$B}
		cmd=${cmd//\$\{MAINPID\}/$DPID}
		cmd=${cmd//\$MAINPID/$DPID}
		[[ $cmd == "$B/pmallocd --check" ]] && cmd="$cmd --config $CONF"
		# (systemd's quoting, for these lines, is the shell's)
		eval "$cmd" >>"$T/reload.log" 2>&1 || return 1
	done
}
generation() { "$WIRE" --socket "$SOCK" | sed -n 's/^POLICY generation=//p'; }

std_conf "$CONF"
start_daemon
g0=$(generation)
[ -n "$g0" ] || fail "no policy handed out: $(cat "$T/daemon.log")"
printf 'version = 1;\npolicies = ( { name = "x"; bogus = 1; } );\n' >"$CONF"
systemctl_reload && fail "a refused file: the reload succeeded"
grep -q "^$CONF:2: " "$T/reload.log" || fail "the reload does not say why: $(cat "$T/reload.log")"
sleep 0.2
[ "$(generation)" = "$g0" ] || fail "pmallocd was signalled for a refused file (generation $(generation))"
pass "a refused file fails the reload ($(tail -n 1 "$T/reload.log")), pmallocd untouched"

std_conf "$CONF"
systemctl_reload || fail "a good file: the reload failed: $(cat "$T/reload.log")"
wait_until 100 sh -c "[ \"\$('$WIRE' --socket '$SOCK' | sed -n 's/^POLICY generation=//p')\" -gt $g0 ]" ||
	fail "a good file was not loaded (generation $(generation))"
stop_daemon || fail "exit status $?"
pass "a good file: the reload succeeds and pmallocd loads it (generation $g0 -> more)"
exit 0
