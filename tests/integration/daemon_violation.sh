# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_violation.sh - a violation report (PMW_REPORT, built as the shim
# builds it) becomes a journal entry with every field of pmallocd(8), the
# daemon's own symbols, and the kernel's pid: a forked child sharing its
# parent's connection is logged as itself.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

journald_ensure
std_conf "$CONF"
# A second policy for a copy of wire_client owned by uid 1, run as nobody.
mkdir "$T/u1"
cp "$WIRE" "$T/u1/wire_client"
chown 1:1 "$T/u1/wire_client"
chmod 0755 "$T/u1" "$T/u1/wire_client"
sed -i 's|^);$|  , { name = "other"; match = { exe = [ "*/u1/wire_client" ]; uid = [ 65534 ]; };\n      pools = ( { name = "p"; sites = [ "x" ]; } ); }\n);|' "$CONF"
start_daemon

# Where wire_client's functions are, as the daemon should resolve them.
sym_addr() { nm "$WIRE" | awk -v s="$1" '$3 == s { print $1 }'; }
a=$(sym_addr wire_fault_site); b=$(sym_addr wire_alloc_site)
[ -n "$a" ] && [ -n "$b" ] || fail "wire_client has no symbols"
fault_off=$(printf '0x%x' $((0x$a + 4)))
site_off=$(printf '0x%x' $((0x$b + 4)))
[ -n "$fault_off" ] && [ -n "$site_off" ] || fail "wire_client has no symbols"
build_id=$(readelf -n "$WIRE" | sed -n 's/.*Build ID: //p')

out=$(client --report 1) || fail "wire_client: $out"
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
e=$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid)
[ "$(printf '%s\n' "$e" | grep -c .)" = 1 ] || fail "want one violation entry for PID $cpid, got: $e"
expect_field "$e" PRIORITY 2
expect_field "$e" OBJECT_PID "$cpid"
expect_field "$e" PMALLOC_POLICY demo
expect_field "$e" PMALLOC_POOL config
expect_field "$e" PMALLOC_MODE enforce
expect_field "$e" PMALLOC_ADDRESS 0x7f0000001008
expect_field "$e" PMALLOC_OFFSET 8
expect_field "$e" PMALLOC_OBJECT_SIZE 32
expect_field "$e" PMALLOC_OBJECT_SITE "wire_alloc_site+0x4 (wire_client+$site_off)"
expect_field "$e" PMALLOC_FAULT_SYMBOL "wire_fault_site+0x4"
expect_field "$e" PMALLOC_EXE "$WIRE"
expect_field "$e" PMALLOC_EXE_SOURCE kernel
expect_field "$e" PMALLOC_GENERATION 1
ip=$(printf '%s\n' "$e" | jfield PMALLOC_FAULT_IP)
case $ip in 0x[0-9a-f]*) ;; *) fail "PMALLOC_FAULT_IP not hex: $ip" ;; esac
bt=$(printf '%s\n' "$e" | jfield PMALLOC_BACKTRACE)
case $bt in
"$WIRE+$fault_off (wire_fault_site+0x4) [$build_id] < $WIRE+0x"*" (build_report+0x1) [$build_id] < "*libc.so.6+0x*" (printf) ["*"]") ;;
*) fail "PMALLOC_BACKTRACE: $bt" ;;
esac
expect_field "$e" MESSAGE "pmalloc: PID $cpid ($WIRE) wrote to protected pool \\\"config\\\" of policy \\\"demo\\\" at 0x7f0000001008 (offset 8 in 32-byte object allocated at wire_alloc_site+0x4), ip $ip in wire_fault_site+0x4; process killed (enforce)"
pass "violation entry: priority 2 and every pmallocd(8) field, symbols resolved by the daemon"

out=$(client --report 1 --mode audit --policy "" --pool "api pool")
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
e=$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid)
expect_field "$e" PRIORITY 4
expect_field "$e" PMALLOC_MODE audit
expect_field "$e" PMALLOC_POLICY ""
expect_field "$e" PMALLOC_POOL "api pool"
case $(printf '%s\n' "$e" | jfield MESSAGE) in
*'wrote to protected pool \"api pool\" at 0x7f0000001008'*"; write allowed (audit)") ;;
*) fail "audit MESSAGE: $e" ;;
esac
pass "audit mode: priority 4, PMALLOC_MODE=audit"

# A kernel write (the shim's kwrite.c): the call named, escaped like every
# string of a report.
out=$(client --report 1 --mode audit --kernel-call $'recv\nPMALLOC_MODE=enforce')
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
e=$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid)
expect_field "$e" PMALLOC_KERNEL_CALL 'recv\\x0aPMALLOC_MODE=enforce'
expect_field "$e" PMALLOC_MODE audit
case $(printf '%s\n' "$e" | jfield MESSAGE) in
*"in wire_fault_site+0x4 by the kernel in recv\\\\x0aPMALLOC_MODE=enforce(2); write allowed (audit)") ;;
*) fail "kernel-write MESSAGE: $(printf '%s\n' "$e" | jfield MESSAGE)" ;;
esac
pass "a kernel write: PMALLOC_KERNEL_CALL and MESSAGE name the call, escaped"

# A forked child reports on its parent's connection: logged as the child.
out=$(client --fork-report) || fail "fork: $out"
ppid_=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
child=$(printf '%s\n' "$out" | sed -n 's/^child=//p')
[ -n "$child" ] && [ "$child" != "$ppid_" ] || fail "no child pid: $out"
e=$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$child)
[ "$(printf '%s\n' "$e" | grep -c .)" = 1 ] || fail "no entry with OBJECT_PID=$child (the child): $(jentries MESSAGE_ID=$MID_VIOLATION)"
expect_field "$e" PMALLOC_VIA_PID "$ppid_"
expect_field "$e" PMALLOC_EXE "$WIRE"
expect_field "$e" PMALLOC_EXE_SOURCE kernel
[ -z "$(jentries MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$ppid_)" ] || fail "the parent $ppid_ was blamed"
pass "a forked child's report carries the child's OBJECT_PID ($child, parent $ppid_)"

# Symbols come only from files owned by root or by the reporting user: a
# client cannot make the daemon parse another user's file.
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$T/u1/wire_client" --socket "$SOCK" --report 1 --policy other --pool p)
printf '%s\n' "$out" | grep -qx "POLICY generation=1" || fail "as nobody: $out"
cpid=$(printf '%s\n' "$out" | sed -n 's/^pid=//p')
e=$(jwait 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$cpid) || fail "no entry for the report of uid 65534"
expect_field "$e" PMALLOC_FAULT_SYMBOL ""
bt=$(printf '%s\n' "$e" | jfield PMALLOC_BACKTRACE)
case $bt in
"$T/u1/wire_client+$fault_off [$build_id] < "*"libc.so.6+0x"*" (printf) ["*) ;;
*) fail "uid 65534's report: uid 1's file should stay unread, libc (root's) symbolized: $bt" ;;
esac
pass "a file owned by another user is not parsed for symbols (root's libc is)"

status=$(client --status)
printf '%s\n' "$status" | grep -q "^  PID $child  $WIRE  uid 0  forked child of PID $ppid_" || fail "status lacks the child: $status"
pass "status lists the child"

stop_daemon || fail "exit status $?"
exit 0
