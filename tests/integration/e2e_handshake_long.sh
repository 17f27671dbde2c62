#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_handshake_long.sh - a daemon.handshake_timeout_ms above one second is
# waited for in ppoll(2), not in a busy loop: with a socket that accepts
# and never answers (e2e_mute) and handshake_timeout_ms = 2500 in the policy
# file, the starting program's every ppoll call is accepted by the kernel
# (none fails with EINVAL, as one with tv_nsec >= 1e9 would), a handful
# of calls in all, and then it takes the file's policy.
. "$(dirname "$0")/e2e_lib.sh"

command -v strace >/dev/null || skip "strace not installed"
DEMO=$(readlink -f "$DEMO")
MUTE=$B/progs/e2e_mute
sed 's/^  handshake_timeout_ms = 100;/  handshake_timeout_ms = 2500;/' "$SRC/conf/pmalloc.conf" | write_conf "$T/file.conf"
grep -q '^  handshake_timeout_ms = 2500;' "$T/file.conf" || fail "cannot set handshake_timeout_ms"
strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here"

coproc MUTEP { exec "$MUTE" "$SOCK"; }
mute_stop() { [ -n "${MUTEP_PID:-}" ] && kill "$MUTEP_PID" 2>/dev/null; true; }
at_exit mute_stop
read -r -t 10 line <&"${MUTEP[0]}" && [ "$line" = listening ] || fail "e2e_mute did not start"

# strace execs the program itself; the shim is preloaded into it only.
# The subshell keeps bash's "Segmentation fault" notice out of the log.
(timeout -s KILL 30 strace -qq -e trace=ppoll -o "$T/trace" \
	-E LD_PRELOAD="$SHIM" -E PMALLOC_SOCKET="$SOCK" -E PMALLOC_CONF="$T/file.conf" -E PMALLOC_DEBUG=1 \
	"$DEMO" attack >"$T/out" 2>"$T/err"
exit $?) 2>/dev/null
rc=$?
[ $rc = 139 ] || fail "exit $rc, want 139 (protected by the file's policy): $(cat "$T/err")"
grep -q "no answer from pmallocd at $SOCK: Connection timed out; reading the policy file" "$T/err" ||
	fail "not a handshake timeout: $(grep -v site "$T/err")"
read -r -t 10 line <&"${MUTEP[0]}" && [ "$line" = "accepted 1" ] || fail "e2e_mute did not accept the program: $line"
calls=$(grep -c '^ppoll(' "$T/trace")
einval=$(grep -c 'EINVAL' "$T/trace")
[ "$einval" = 0 ] || fail "$einval of $calls ppoll calls failed with EINVAL (a busy loop): $(grep -m 3 EINVAL "$T/trace")"
[ "$calls" -ge 2 ] && [ "$calls" -le 10 ] || fail "want a few ppoll calls for one handshake, got $calls: $(head -n 5 "$T/trace")"
pass "handshake_timeout_ms = 2500: $calls ppoll calls, none refused; the file's policy applied"
