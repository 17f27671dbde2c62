#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_policy_image.sh - the policy a process runs under exists in its memory
# once, as the image pmallocd compiled (or the shim compiled from the file,
# with the same code), in read-only pages: no copy of it is left writable, a
# write to it kills the process, and under protection = "seal" (where the
# kernel has mseal) it cannot be made writable again.
. "$(dirname "$0")/e2e_lib.sh"

PROBE=$B/progs/image_probe
[ -x "$PROBE" ] || fail "$PROBE not built"
journald_ensure

conf() {
	cat <<EOF2
version = 1;
policies = (
  {
    name = "probe";
    match = { exe = [ "*/image_probe" ]; };
    protection = "$1";
    pools = (
      { name = "config"; sites = [ "main", "image_probe:+0x10" ]; wrappers = [ "xmalloc" ];
        protect = [ "on-call:listen", "after:1h" ]; max_bytes = 65536; },
      { name = "rest"; sites = [ "scan" ]; protect = [ "manual" ]; }
    );
  }
);
EOF2
}

# The images in the probe's memory: exactly one, read-only, the policy's.
one_ro_image() {
	local where=$1
	grep -c '^image ' "$T/out" | grep -qx 1 || fail "$where: want exactly one policy image in memory: $(cat "$T/out" "$T/err")"
	grep -Eq '^image 0x[0-9a-f]+ r--p policy=probe pools=2$' "$T/out" ||
		fail "$where: the image is not read-only: $(cat "$T/out")"
}

# From the policy file (no daemon): compiled in the process.
conf mprotect >"$T/file.conf"
E2E_CONF=$T/file.conf hardened "$T/out" "$T/err" "$PROBE" list || fail "probe: $(cat "$T/out" "$T/err")"
one_ro_image "policy file"
pass "from the policy file: one image in memory, read-only"

E2E_CONF=$T/file.conf hardened "$T/out" "$T/err" "$PROBE" write
rc=$?
[ $rc = 139 ] || fail "a write to the image: exit $rc, want 139 (SIGSEGV): $(cat "$T/out" "$T/err")"
! grep -q '^written' "$T/out" || fail "the image was written"
pass "a write to the image kills the process (SIGSEGV)"

# From pmallocd: the image it compiled at load, validated and copied.
conf mprotect | write_conf "$CONF"
start_daemon
hardened "$T/out" "$T/err" "$PROBE" list || fail "probe: $(cat "$T/out" "$T/err")"
one_ro_image "from pmallocd"
hardened "$T/out" "$T/err" "$PROBE" mprotect || fail "probe: $(cat "$T/out" "$T/err")"
grep -qx 'mprotect=ok' "$T/out" || fail "protection mprotect: $(cat "$T/out")"
pass "from pmallocd: one image in memory, read-only (not sealed under protection = \"mprotect\")"
stop_daemon || fail "pmallocd exit status $?"

conf seal | write_conf "$CONF"
start_daemon
hardened "$T/out" "$T/err" "$PROBE" mprotect || fail "probe: $(cat "$T/out" "$T/err")"
one_ro_image "sealed"
if grep -qx 'mseal=yes' "$T/out"; then
	grep -qx 'mprotect=EPERM' "$T/out" || fail "protection seal: the image could be made writable: $(cat "$T/out")"
	pass "protection = \"seal\": the image cannot be made writable again (EPERM)"
else
	pass "protection = \"seal\": this kernel has no mseal(2); the image stays read-only"
fi
stop_daemon || fail "pmallocd exit status $?"
exit 0
