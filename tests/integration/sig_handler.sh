#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# sig_handler.sh - the fault handler stays the shim's (issue 27, item 3):
# a program built with -std=c99 (tests/progs/api_sig_c99) installs its own
# SIGSEGV handler by each of libc's routes (signal, which is __sysv_signal
# there, bsd_signal, sysv_signal, __sysv_signal, ssignal, sigset,
# __sigaction), by a raw rt_sigaction system call, or holds or ignores
# SIGSEGV (sigset's SIG_HOLD, sigignore, a raw rt_sigprocmask, a jump
# buffer or a context saved with SIGSEGV blocked, restored after the
# protect); then a
# write into a protected pool object.  Each time: a fault that is no pool
# write still reaches the program's handler, the pool write is reported
# (stderr line and journal entry) and killed by SIGSEGV, never handed to
# the program's handler nor killed silently; what was done behind libc's
# back is found at the protect and said in the journal.  Then the raw
# cases again under a real pmallocd serving the program a policy, and a
# raw rt_sigaction after the last protect, found at the program's next
# wait a second later (rawlate): the write reported and killed, the
# journal and status (text and JSON) say what was found behind the shim's
# back.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
P=$(readlink -f "$B/progs/api_sig_c99")
[ -x "$P" ] || fail "$P not built"

for how in signal bsd_signal sysv_signal __sysv_signal ssignal sigset __sigaction raw hold ignore rawmask jmpmask ctxmask; do
	hardened "$T/out" "$T/err" "$P" "$how"
	rc=$?
	pid=$HPID
	[ "$rc" = 2 ] && fail "$how: $(cat "$T/err")"
	case $how in hold | ignore | rawmask | jmpmask | ctxmask) want="writing" ;; *) want="handled
writing" ;; esac
	[ "$(cat "$T/out")" = "$want" ] || fail "$how: exit $rc, stdout: $(cat "$T/out"); stderr: $(head -n 3 "$T/err")"
	[ "$rc" = 139 ] || fail "$how: exit $rc, want 139 (SIGSEGV): $(head -n 3 "$T/err")"
	grep -q "^pmalloc\[$pid\]: write to protected pool .*; enforce: killed by SIGSEGV$" "$T/err" ||
		fail "$how: killed without the report line: $(head -n 3 "$T/err")"
	jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid >/dev/null || fail "$how: no journal entry for PID $pid"
	said=
	case $how in
	raw | rawmask)
		e=$(jsel 1 MESSAGE_ID=$MID_HANDLER OBJECT_PID=$pid) || fail "$how: the protect did not say it in the journal"
		said="; said: $(printf '%s\n' "$e" | jfield PMALLOC_HANDLER | head -n 1 | cut -c1-60)..."
		;;
	esac
	pass "$how: the pool write reported (stderr, journal) and killed$said"
done

command -v jq >/dev/null || skip "jq not installed (reads status --json)"
write_conf "$CONF" <<'EOF'
version = 1;
policies = (
  { name = "sig"; match = { exe = [ "*/api_sig_c99" ]; }; mode = "enforce";
    pools = ( { name = "unused"; sites = [ "install" ]; protect = [ "manual" ]; } ); }
);
EOF
start_daemon
for how in raw rawmask rawlate; do
	hardened "$T/out" "$T/err" "$P" "$how"
	rc=$?
	pid=$HPID
	[ "$rc" = 139 ] || fail "$how under pmallocd: exit $rc: $(cat "$T/out") $(head -n 3 "$T/err")"
	grep -q "^pmalloc\[$pid\]: write to protected pool .*; enforce: killed by SIGSEGV$" "$T/err" ||
		fail "$how under pmallocd: killed without the report line: $(head -n 3 "$T/err")"
	jsel 1 MESSAGE_ID=$MID_HANDLER OBJECT_PID=$pid >/dev/null || fail "$how under pmallocd: not said in the journal"
	want=sigsegv-replaced
	[ $how = rawmask ] && want=sigsegv-blocked
	"$B/pmallocctl" status --socket "$SOCK" --json >"$T/status.json" 2>&1 || fail "status --json: $(cat "$T/status.json")"
	found=$(jq -r --argjson p "$pid" '[.served[], .exited[]] | map(select(.pid == $p)) | .[0] | "\(.handler_put_right) \(.handler_found | join(","))"' "$T/status.json")
	[ "$found" = "1 $want" ] || fail "$how: status --json says \"$found\" for PID $pid, want \"1 $want\""
	"$B/pmallocctl" status --socket "$SOCK" >"$T/status" 2>&1 || fail "status: $(cat "$T/status")"
	line=$(sed -n "/^  PID $pid /,/^  PID /p" "$T/status" | grep "warning: the shim put its fault handler right")
	case $how:$line in
	raw*:*"its SIGSEGV handler replaced by a raw rt_sigaction"* | rawmask:*"SIGSEGV blocked"*) ;;
	*) fail "$how: status does not say it for PID $pid: $(cat "$T/status")" ;;
	esac
	pass "$how: pmallocctl status says it: ${line#    }"
done
exit 0
