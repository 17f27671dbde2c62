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
# back is found at the protect and said in the journal.
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
exit 0
