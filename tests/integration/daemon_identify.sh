# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_identify.sh - pmallocd reads who a client is (its pidfd, exe,
# comm, cgroup) in a worker thread while its loop answers others; clients
# that leave while they are being identified must cost nothing but their
# own answer:
#   - hundreds of connections that say HELLO and close at once (their
#     process lives on), and processes that say HELLO and exit at once
#     (their pid gone, perhaps reaped, before or while identified), among
#     clients that wait for their policy: every waiting client gets it, the
#     daemon stays up, every connection is accounted for (handed, vanished,
#     unidentified or refused) and none is left connected;
#   - SIGTERM while identifications are out: a clean exit, the worker
#     joined (exit status 0).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

ROUNDS=3 MANY=200 WAITING=10 EXITING=10

journald_ensure
std_conf "$CONF"
start_daemon

for r in $(seq $ROUNDS); do
	bg=()
	client --many $MANY --vanish --hold 300 >"$T/many.$r" 2>&1 &
	bg+=($!)
	for i in $(seq $WAITING); do client >"$T/ok.$r.$i" 2>&1 & bg+=($!); done
	for i in $(seq $EXITING); do client --vanish >/dev/null 2>&1 & bg+=($!); done
	for p in "${bg[@]}"; do wait "$p"; done
	grep -qx "vanished=$MANY" "$T/many.$r" || fail "round $r: --many --vanish: $(cat "$T/many.$r")"
	for i in $(seq $WAITING); do
		grep -qx "POLICY generation=1" "$T/ok.$r.$i" || fail "round $r: waiting client $i: $(cat "$T/ok.$r.$i")"
	done
	kill -0 "$DPID" 2>/dev/null || fail "round $r: pmallocd died: $(tail -n 5 "$T/daemon.log")"
done
pass "$ROUNDS rounds of $MANY closing and $EXITING exiting clients: all $((ROUNDS * WAITING)) waiting ones got their policy"

# Every connection ends one way or another, and none stays (the status
# request asking is the one connected).
counts() {
	client --status | sed -n 's/^clients: \([0-9]*\) connected.*; \([0-9]*\) accepted, \([0-9]*\) policies handed out, \([0-9]*\) without policy, \([0-9]*\) status requests$/\1 \2 \3 \4 \5/p;
		s/^dropped: .* \([0-9]*\) vanished, \([0-9]*\) unidentified, .* \([0-9]*\) over the client limit,.*/\1 \2 \3/p' | tr '\n' ' '
}
wait_until 100 sh -c "'$WIRE' --socket '$SOCK' --status | grep -q '^clients: 1 connected'" ||
	fail "clients left connected: $(client --status | grep '^clients:')"
read -r conn acc handed nopol stat vanished unident busy <<<"$(counts)"
[ -n "$busy" ] || fail "status lines not understood: $(client --status | grep -E '^(clients|dropped):')"
hellos=$((ROUNDS * (MANY + WAITING + EXITING)))
ended=$((handed + nopol + vanished + unident + busy))
# The status request asking is counted already.  A client that leaves with
# its answer unread is counted as handed and as vanished (its socket says
# ECONNRESET): hence at least, not exactly.
[ $((acc - stat)) = $hellos ] && [ $ended -ge $hellos ] ||
	fail "$hellos clients said HELLO, $((acc - stat)) accepted besides status, $ended ended: handed $handed, no policy $nopol, vanished $vanished, unidentified $unident, refused $busy"
pass "all $hellos accepted and ended: $handed handed, $vanished vanished, $unident unidentified, $busy refused; none left connected"

# SIGTERM with a burst on its way: the worker is stopped and joined.
client --many $MANY --vanish >/dev/null 2>&1 &
vpid=$!
sleep 0.05
stop_daemon
rc=$?
wait "$vpid"
[ $rc = 0 ] || fail "pmallocd exit status $rc when stopped amid a burst: $(tail -n 5 "$T/daemon.log")"
pass "SIGTERM amid a burst: exit 0"
