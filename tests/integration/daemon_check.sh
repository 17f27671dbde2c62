# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_check.sh - pmallocd --check: exit 0 on a good file; FILE:LINE:
# message and exit 1 on a bad one; the ownership rule; a daemon that
# cannot read its policy does not start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

# check FILE -> output in $out, status in $rc
check() { out=$("$PMALLOCD" --check --config "$1" 2>&1); rc=$?; }

std_conf "$CONF"
check "$CONF"
[ $rc = 0 ] || fail "good file: exit $rc: $out"
[ -z "$out" ] || fail "good file: unexpected output: $out"
pass "good file: exit 0, silent"

check "$SRC/conf/pmalloc.conf"
if [ "$(stat -c %u "$SRC/conf/pmalloc.conf")" = 0 ] && [ $((0$(stat -c %a "$SRC/conf/pmalloc.conf") & 022)) = 0 ]; then
	[ $rc = 0 ] || fail "shipped conf/pmalloc.conf: exit $rc: $out"
	pass "the shipped conf/pmalloc.conf passes"
fi

# A policy whose compiled image would not fit in one message (300 sites of
# 240 bytes: ~85 KiB of image from a 75 KiB file) is refused at load, naming
# the policy's line, not at hand-out.
f235=$(printf 'f%.0s' $(seq 235))
{
	printf 'version = 1;\npolicies = (\n  { name = "huge"; match = { exe = [ "*/x" ]; };\n    pools = ( { name = "p"; sites = [ '
	for i in $(seq 300); do printf '"%s_%03d", ' "$f235" "$i"; done
	printf '"last" ]; } ); }\n);\n'
} | write_conf "$T/huge.conf"
check "$T/huge.conf"
[ $rc = 1 ] || fail "huge policy: exit $rc, want 1: $out"
[ "$out" = "$T/huge.conf:3: policy \"huge\" is too large to hand out (its image exceeds 65504 bytes)" ] ||
	fail "huge policy: $out"
pass "a policy too large to hand out is refused at load: $out"

# A syntax error on line 4: the message starts with exactly FILE:4:.
write_conf "$T/syntax.conf" <<'EOF2'
version = 1;
daemon = {
  report_burst = 5;
  report_interval_s = = 3;
};
EOF2
check "$T/syntax.conf"
[ $rc = 1 ] || fail "syntax error: exit $rc, want 1"
case $out in "$T/syntax.conf:4: "?*) ;; *) fail "syntax error: want '$T/syntax.conf:4: ...', got: $out" ;; esac
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "syntax error: more than one line: $out"
pass "syntax error: $out"

# A semantic error (unknown key) on line 3.
write_conf "$T/key.conf" <<'EOF2'
version = 1;
daemon = {
  report_brust = 5;
};
EOF2
check "$T/key.conf"
[ $rc = 1 ] || fail "unknown key: exit $rc, want 1"
case $out in "$T/key.conf:3: "*report_brust*) ;; *) fail "unknown key: want '$T/key.conf:3: ... report_brust ...', got: $out" ;; esac
pass "unknown key: $out"

check "$T/missing.conf"
[ $rc = 1 ] || fail "missing file: exit $rc"
[ "$out" = "$T/missing.conf: cannot open: No such file or directory" ] || fail "missing file: $out"
pass "missing file: $out"

# Ownership: root refuses a file others could have written.
std_conf "$T/writable.conf"
chmod 0664 "$T/writable.conf"
check "$T/writable.conf"
[ $rc = 1 ] || fail "group-writable file: exit $rc"
[ "$out" = "$T/writable.conf: refused: writable by group or others (mode 0664)" ] || fail "group-writable: $out"
pass "group-writable file refused: $out"

std_conf "$T/owned.conf"
chown 65534 "$T/owned.conf"
check "$T/owned.conf"
[ $rc = 1 ] || fail "file owned by nobody: exit $rc"
[ "$out" = "$T/owned.conf: refused: owned by uid 65534, not by root" ] || fail "owned by nobody: $out"
pass "file not owned by root refused: $out"

# The daemon itself does not start on a bad file, and says why in the journal.
journald_ensure
"$PMALLOCD" --config "$T/key.conf" --socket "$SOCK" >"$T/bad-start.log" 2>&1 &
JPID=$!
wait "$JPID" && fail "daemon started on a bad file"
[ -e "$SOCK" ] && fail "daemon bound its socket with a bad file"
e=$(jentries MESSAGE_ID=$MID_POLICY)
[ -n "$e" ] || fail "no journal entry for the refused file"
expect_field "$e" PRIORITY 3
case $(printf '%s\n' "$e" | jfield MESSAGE) in *"$T/key.conf:3: "*) ;; *) fail "entry lacks FILE:LINE: $e" ;; esac
pass "a bad file stops the start, logged at priority 3 with FILE:LINE"
exit 0
