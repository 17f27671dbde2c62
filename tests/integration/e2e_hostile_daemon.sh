#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_hostile_daemon.sh - the shim's side of the handshake takes the answer
# on the socket as hostile input: whatever a peer at PMALLOC_SOCKET sends
# back to the HELLO (a packet over the protocol's 64 KiB limit, one too
# short for a header, a header whose length lies, bytes that are no
# message, or no answer at all before the peer closes), the program runs,
# says under PMALLOC_DEBUG why it has no answer, and takes its policy from
# the file as it would with no daemon: pmalloc-demo's attack is stopped
# (SIGSEGV) by the file's policy each time.  The answer is read in a
# buffer of its own size (client.c peeks at its length first), so the
# oversized packet checks that path too.
. "$(dirname "$0")/e2e_lib.sh"

command -v python3 >/dev/null || skip "python3 not installed (the fake peer)"
journald_ensure
DEMO=$(readlink -f "$DEMO")
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
"$B/pmallocd" --check --config "$CONF" >"$T/check" 2>&1 || fail "config refused: $(cat "$T/check")"

MODES="oversized short lying garbage silent"
SOCK=$T/fake.sock
cat >"$T/fake.py" <<'PY'
import os, socket, struct, sys
path, modes = sys.argv[1], sys.argv[2:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(8)
print("ready", flush=True)
def header(kind, length):
    return struct.pack("<IHHII", 0x31414D50, 2, kind, length, 0)
for mode in modes:
    c, _ = s.accept()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    c.recv(4096)                                   # the HELLO
    if mode == "oversized":                        # PMW_POLICY, 70,000 bytes
        c.send(header(2, 70000) + bytes(70000 - 16))
    elif mode == "short":
        c.send(b"PMA1\x02\x00")
    elif mode == "lying":                          # says 4096 bytes, is 64
        c.send(header(2, 4096) + bytes(48))
    elif mode == "garbage":
        c.send(os.urandom(300))
    c.close()                                      # "silent": no answer
PY
coproc FAKE { exec python3 "$T/fake.py" "$SOCK" $MODES; }
FAKE_KEEP=$FAKE_PID
stop_fake() { kill "$FAKE_KEEP" 2>/dev/null; true; }
at_exit_first stop_fake
read -r -t 10 line <&"${FAKE[0]}" && [ "$line" = ready ] || fail "the fake peer did not start"

for mode in $MODES; do
	E2E_CONF=$CONF E2E_DEBUG=1 hardened "$T/out" "$T/err" "$DEMO" attack
	rc=$?
	[ $rc = 139 ] || fail "$mode: exit $rc, want 139 (protected by the file's policy): $(cat "$T/err")"
	case $mode in silent) why="Connection reset by peer" ;; *) why="Protocol error" ;; esac
	grep -qx "pmalloc\[$HPID\]: no answer from pmallocd at $SOCK: $why; reading the policy file" "$T/err" ||
		fail "$mode: not refused as \"$why\": $(grep -v site "$T/err")"
	grep -q "policy \"demo\" .*applies to $DEMO\$" "$T/err" ||
		fail "$mode: the file's policy was not taken: $(grep -v site "$T/err")"
	pass "$mode answer: refused ($why), the file's policy armed, the attack stopped"
done
exit 0
