#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# stress_learn.sh - learning misses no write (tests/progs/learn_stress.c):
# 48 contexts allocated interleaved by eight threads, two of them still
# allocating when the trigger (listen) fires; after it, thirteen threads
# (born before it, one still starting, four born after) write a third of
# the contexts themselves and have the kernel write another third (read,
# readv, recv, recvmsg, recvmmsg, pread, preadv, getsockopt,
# __read_chk, __recv_chk).  Each round: learn, propose, then enforce the proposal on
# the same program: it must never be killed; the proposal protects only
# never-written contexts (ctx_K, K % 3 == 2), and an injected write into
# one of them dies.  LEARN_STRESS_ROUNDS rounds (3 by default: make check;
# make stress repeats the script, STRESS_N times), then one more with the
# even contexts allocating through five frames alike (learn_stress shared):
# their objects share pages, the first write into a page marks every
# context on it; still no kill, nothing written proposed, and the odd
# unwritten contexts (pages of their own) proposed.
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"

PROG=$B/progs/learn_stress
SHIM=$B/libpmalloc_shim.so
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v journalctl >/dev/null || skip "journalctl not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock
ROUNDS=${LEARN_STRESS_ROUNDS:-3}

exe=$T/learn_stress
cp "$PROG" "$exe"
cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "stress"; match = { exe = [ "$exe" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-call:listen" ]; } ); } );
EOC

# learn_once ROUND [ARG]: one learn run and its proposal in $T/proposed.conf;
# false when the journal has none of its entries (a journald restarted
# under it by someone else: the run is learned again, twice at most).
learn_once() {
	local since rc=0
	since=@$(date +%s.%N)
	PMALLOC_CONF=$T/learn.conf timeout -s KILL 60 env LD_PRELOAD="$SHIM" "$exe" ${2:-} >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 0 ] || fail "round $1: learn run exited $rc: $(cat "$T/err" "$T/out")"
	[ ! -s "$T/err" ] || fail "round $1: learn mode wrote to stderr: $(cat "$T/err")"
	# journald, shared and busy, may refuse a sync now and then: retried.
	wait_until 40 journalctl --sync || fail "round $1: journalctl --sync keeps failing"
	rm -f "$T/proposed.conf"
	"$B/pmallocctl" propose --mode enforce --exe "$exe" --since "$since" --output "$T/proposed.conf" 2>"$T/perr" && return 0
	grep -q 'nothing learned' "$T/perr" && return 1
	fail "round $1: propose failed: $(cat "$T/perr")"
}

protected_total=0
for round in $(seq 1 $((ROUNDS + 1))); do
	arg= min=12
	[ "$round" -le "$ROUNDS" ] || arg=shared min=6
	learn_once "$round" $arg || learn_once "$round" $arg || learn_once "$round" $arg ||
		fail "round $round: three learn runs, no entries in the journal: $(cat "$T/perr")"
	sites=$(sed -n '/sites = \[/,/\]/p' "$T/proposed.conf" | grep -o '"learn_stress:ctx_[0-9]*"' |
		sed 's/.*ctx_\([0-9]*\)"/\1/' | sort -n | tr '\n' ' ')
	for k in $sites; do
		[ $((k % 3)) = 2 ] || fail "round $round: ctx_$k proposed, but it is written after the trigger: $(grep -v '^ *#' "$T/proposed.conf")"
	done
	n=$(printf '%s' "$sites" | wc -w)
	# Shared pages: the even unwritten contexts sit between written ones.
	if [ -n "$arg" ]; then
		even=0
		for k in $sites; do [ $((k % 2)) = 1 ] || even=$((even + 1)); done
		[ "$even" -lt 8 ] || fail "round $round ($arg): all 8 even unwritten contexts proposed: no page shared? ($sites)"
		shared_n="$n of 16 ($even even)"
	fi
	[ "$n" -ge "$min" ] || fail "round $round${arg:+ ($arg)}: only $n of the 16 unwritten contexts proposed ($sites): $(cat "$T/proposed.conf")"
	protected_total=$((protected_total + n))
	# Enforce under exactly the learned load: twice, never killed.
	for e in 1 2; do
		rc=0; PMALLOC_CONF=$T/proposed.conf timeout -s KILL 60 env LD_PRELOAD="$SHIM" "$exe" $arg >"$T/out" 2>"$T/err" || rc=$?
		[ $rc = 0 ] || fail "round $round${arg:+ ($arg)}: enforce run $e of the proposal exited $rc (a false kill): $(head -n 5 "$T/err")"
		grep -q '^ok ' "$T/out" || fail "round $round: enforce output: $(cat "$T/out")"
	done
	rc=0; PMALLOC_CONF=$T/proposed.conf timeout -s KILL 60 env LD_PRELOAD="$SHIM" "$exe" $arg inject >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 139 ] || fail "round $round: injected write into ctx_5: exit $rc, expected SIGSEGV"
done
pass "$ROUNDS rounds (and one with pages shared: $shared_n proposed) of learn -> propose -> enforce x2 with 13 threads: no kill, $protected_total unwritten contexts proposed, none written, injected write killed"
