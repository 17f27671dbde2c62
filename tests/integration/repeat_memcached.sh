#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# repeat_memcached.sh - the same server learned again gives the same
# proposal, and the proposal holds at every start: memcached with 4 worker
# threads (-t 4) on loopback, as nobody.
#   - REPEAT_LEARN_RUNS learn runs (the generic learn policy, no pmallocd:
#     PMALLOC_CONF, entries straight to the journal), each under the same
#     small load, 3 s long (memcached's background threads' cycle is a
#     second) and stopped by SIGTERM, each proposed on its own
#     (propose --since the run's start): the proposals' protected bytes are
#     each within 5% of their median;
#   - REPEAT_STARTS starts of the last proposal in enforce, every other one
#     served by a pmallocd of ours, the others reading PMALLOC_CONF
#     themselves: each protects (the shim's "made read-only" line, under
#     PMALLOC_DEBUG), answers a set and a get, and stops by SIGTERM
#     without a kill.
# make check: 3 learn runs, 4 starts; make soak: 10 and 50.  The spread
# and the starts' figures go to stdout ("figures:").
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
ctl=$B/pmallocctl
MC=/usr/bin/memcached
[ -x "$MC" ] || skip "memcached not installed"
journald_ensure
unset PMALLOC_DEBUG
chmod a+rx "$T"
RUNS=${REPEAT_LEARN_RUNS:-3}
STARTS=${REPEAT_STARTS:-4}
port=$((25000 + $$ % 900))

MAIN=
stop_main() { [ -z "$MAIN" ] || { kill -KILL "$MAIN" 2>/dev/null; wait "$MAIN" 2>/dev/null; MAIN=; }; }
at_exit stop_main

mc_cmd() { # CMD...: one connection, the lines given; the answer not an error
	local out
	out=$(exec 3<>"/dev/tcp/127.0.0.1/$port" && printf '%s\r\n' "$@" quit >&3 && timeout 5 cat <&3) 2>/dev/null || return 1
	[ -n "$out" ] && ! printf '%s' "$out" | grep -q '^ERROR\|^SERVER_ERROR'
}
mc_start() { # OUT: memcached -t 4 under the shim, with the environment given
	LD_PRELOAD=$SHIM "$MC" -u nobody -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 64 >"$1" 2>&1 &
	MAIN=$!
	wait_until 200 mc_cmd version || fail "memcached did not come up: $(cat "$1")"
}
mc_stop() { # rc 0: stopped by SIGTERM, as its unit stops it
	local rc=0
	kill -TERM "$MAIN"
	wait "$MAIN" || rc=$?
	MAIN=
	[ $rc = 0 ] || [ $rc = 143 ]
}

write_conf "$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "repeat-$$"; match = { exe = [ "$MC" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-wait" ]; } ); } );
EOC

# learn_once R: one learn run and its proposal, $T/p$R.conf; the bytes it
# protects in $BYTES.  False when the journal has none of its entries (a
# journald restarted under it by another test): tried again, twice at most.
learn_once() {
	local since
	since=@$(date +%s.%6N)
	PMALLOC_CONF=$T/learn.conf PMALLOC_SOCKET=$T/none.sock PMALLOC_LEARN_INTERVAL=1 mc_start "$T/learn.out"
	local i load=()
	for i in $(seq 30); do load+=("set k$i 0 0 3" abc "get k$i"); done
	mc_cmd "${load[@]}" || fail "learn run $1: the sets and gets failed"
	# memcached's LRU maintainer and slab automover write what they built
	# at start once a second (memcached's clock): a run shorter than that
	# would learn it as never written, and enforce kill a second later.
	sleep 3
	mc_stop || fail "learn run $1: the stop failed: $(cat "$T/learn.out")"
	wait_until 40 journalctl --sync || fail "learn run $1: journalctl --sync keeps failing"
	rm -f "$T/p$1.conf"
	if ! "$ctl" propose --mode enforce --exe "$MC" --since "$since" --uid nobody --output "$T/p$1.conf" 2>"$T/perr"; then
		grep -q 'nothing learned' "$T/perr" && return 1
		fail "learn run $1: propose failed: $(cat "$T/perr")"
	fi
	BYTES=$(sed -n 's/^    # protected: \([0-9]*\) bytes live.*/\1/p' "$T/p$1.conf" | head -n 1)
	[ "${BYTES:-0}" -gt 0 ] || fail "learn run $1: a proposal that protects nothing: $(cat "$T/p$1.conf")"
}

all=()
for r in $(seq "$RUNS"); do
	learn_once "$r" || learn_once "$r" || learn_once "$r" ||
		fail "learn run $r: three runs, no entries in the journal: $(cat "$T/perr")"
	all+=("$BYTES")
done
read -r med lo hi < <(printf '%s\n' "${all[@]}" | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }')
spread=$(awk -v m="$med" -v lo="$lo" -v hi="$hi" 'BEGIN { printf "%.2f", 100 * (hi - lo) / m }')
echo "figures: memcached -t 4, $RUNS learn runs: protected bytes ${all[*]}; median $med, spread (max-min)/median $spread%"
r=0
for b in "${all[@]}"; do
	r=$((r + 1))
	[ "$((b * 100))" -ge "$((med * 95))" ] && [ "$((b * 100))" -le "$((med * 105))" ] && continue
	[ -z "${KEEP:-}" ] || cp "$T"/p*.conf "$KEEP/"
	fail "the proposals of $RUNS learn runs differ by more than 5% of their median $med: ${all[*]}; run $r's sites against run 1's: $(diff <(grep '^ *#   site' "$T/p1.conf") <(grep '^ *#   site' "$T/p$r.conf"))"
done
pass "$RUNS learn runs of memcached -t 4: proposals within 5% of each other (spread $spread%)"

# The starts: the last proposal, with and without pmallocd.
cp "$T/p$RUNS.conf" "$CONF"
chown root:root "$CONF"
chmod 0644 "$CONF"
start_daemon
served=0 alone=0
for s in $(seq "$STARTS"); do
	if [ $((s % 2)) = 0 ]; then
		# (PMALLOC_CONF is run-tests' /nonexistent: the policy is pmallocd's.)
		PMALLOC_DEBUG=1 PMALLOC_SOCKET=$SOCK mc_start "$T/s.out"
		served=$((served + 1))
	else
		PMALLOC_DEBUG=1 PMALLOC_CONF=$CONF PMALLOC_SOCKET=$T/none.sock mc_start "$T/s.out"
		alone=$((alone + 1))
	fi
	wait_until 100 grep -q 'bytes made read-only (on-wait)' "$T/s.out" ||
		fail "start $s: nothing protected: $(cat "$T/s.out")"
	mc_cmd "set s$s 0 0 5" hello "get s$s" || fail "start $s: set/get failed: $(cat "$T/s.out")"
	mc_stop || fail "start $s: killed or failed: $(grep -v '^pmalloc\[[0-9]*\]: \(pool\|on-wait\|policy\)' "$T/s.out" | head -n 5)"
	! grep -q 'write to protected pool' "$T/s.out" || fail "start $s: $(grep 'write to protected' "$T/s.out")"
done
journal_sync
k=$(journalctl --no-pager -o json --since "@$(($(date +%s) - 3600))" MESSAGE_ID=$MID_VIOLATION \
	PMALLOC_POLICY="repeat-$$" | grep -c . || true)
[ "$k" = 0 ] || fail "$k violations of the proposal in the journal"
echo "figures: memcached -t 4: $STARTS enforce starts of one proposal ($served served by pmallocd, $alone alone): all served, 0 kills"
pass "$STARTS enforce starts ($served with pmallocd, $alone without): each protected, served and stopped cleanly"
