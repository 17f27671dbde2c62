#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# audit_kwrite.sh - the kernel as the writer into protected pool memory
# (kwrite_audit: read, readv, accept4, epoll_wait, poll, recv, recvmsg into
# buffers protected at listen()).  Audit: every call succeeds as it would
# without the shim, the data is where the program expects it; the first
# kernel write of the site (read) is reported on stderr naming the call,
# the later ones counted (once per site and process) and said at exit.  Enforce: the first
# call fails with EFAULT (the data stays unread), as before.  Then a read
# begun in another thread before the trigger and answered after it
# (kwrite_wait): made again through the bounce buffer.
. "$(dirname "$0")/e2e_lib.sh"

KW=$(readlink -f "$B/progs/kwrite_audit")
[ -x "$KW" ] || fail "$KW not built"
policy() {
	cat <<EOC
version = 1;
daemon = { report_burst = 100; report_interval_s = 3600; };
policies = ( { name = "kw"; match = { exe = [ "*/kwrite_audit" ]; }; mode = "$1";
  pools = ( { name = "config"; sites = [ "make_config" ]; protect = [ "on-call:listen" ]; } ); } );
EOC
}
policy audit >"$T/audit.conf"
policy enforce >"$T/enforce.conf"

E2E_CONF=$T/audit.conf hardened "$T/out" "$T/err" "$KW" || fail "audit: exit $?: $(cat "$T/out" "$T/err")"
pid=$HPID
[ "$(cat "$T/out")" = 'read: 9
buf: pipe data
readv: 8
vbuf: vect ored
accept4: 0
peer: 127.0.0.1 len 16
epoll_wait: 1
event: data 77
poll: 1
revents: POLLIN
recv: 3
buf: soc
recvmsg: 3
vbuf: ket' ] || fail "audit: stdout: $(cat "$T/out")"
grep -Eq "^pmalloc\[$pid\]: write to protected pool \"config\" at 0x[0-9a-f]+: offset [0-9]+ in [0-9]+-byte object 0x[0-9a-f]+ allocated at make_config\+0x[0-9a-f]+; ip 0x[0-9a-f]+ \(kwrite_audit\+0x[0-9a-f]+\) by the kernel in read\(2\); policy \"kw\"; audit: write allowed$" "$T/err" ||
	fail "audit: no report of the kernel's write in read: $(cat "$T/err")"
[ "$(grep -c 'audit: write allowed$' "$T/err")" = 1 ] || fail "audit: want one report (once per site): $(cat "$T/err")"
grep -Eq "^pmalloc\[$pid\]: audit: [1-9][0-9]* later writes of 1 sites reported once were let through unreported" "$T/err" ||
	fail "audit: the later writes not counted: $(cat "$T/err")"
pass "audit: read, readv, accept4, epoll_wait, poll, recv, recvmsg into protected memory succeed; the site reported once (read), the rest counted"

# The same record reaches pmallocd and its journal entry names the call, in
# a field and in MESSAGE as on stderr.  (Through the daemon: the shim's own
# entries never wait for a busy journald, which may drop a burst.)
journald_ensure
write_conf "$CONF" <"$T/audit.conf"
start_daemon
hardened "$T/out" "$T/err" "$KW" || fail "audit under pmallocd: exit $?: $(cat "$T/out" "$T/err")"
pid=$HPID
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid PMALLOC_KERNEL_CALL=read) ||
	fail "audit: no journal entry naming read: $(jnow MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid)"
e=$(printf '%s\n' "$e" | head -n 1)
expect_field "$e" PMALLOC_MODE audit
expect_field "$e" _PID "$DPID"
printf '%s\n' "$e" | jfield MESSAGE |
	grep -Eq "^pmalloc: PID $pid \(.*/kwrite_audit\) wrote to protected pool "'\\"config\\" of policy \\"kw\\"'" at 0x[0-9a-f]+ \(offset [0-9]+ in [0-9]+-byte object allocated at make_config\+0x[0-9a-f]+\), ip 0x[0-9a-f]+( in [^ ]+)? by the kernel in read\(2\); write allowed \(audit\)$" ||
	fail "audit: MESSAGE of the read entry: $(printf '%s\n' "$e" | jfield MESSAGE)"
stop_daemon || fail "pmallocd: exit status $?"
pass "audit: pmallocd's entry of a kernel write names the call (PMALLOC_KERNEL_CALL, MESSAGE)"

E2E_CONF=$T/enforce.conf hardened "$T/out" "$T/err" "$KW"
rc=$?
[ $rc = 4 ] || fail "enforce: exit $rc, want 4: $(cat "$T/out" "$T/err")"
[ "$(head -n 2 "$T/out")" = 'read: -1 Bad address
buf: ' ] || fail "enforce: stdout: $(cat "$T/out")"
[ ! -s "$T/err" ] || fail "enforce: stderr: $(cat "$T/err")"
pass "enforce: a kernel write into protected memory fails with EFAULT, nothing reported"

# A read begun before the trigger, in another thread, whose data comes
# after it (kwrite_wait): its buffer was not protected when the call began
# (the interposed read's fast path); the kernel's copy fails, and the shim
# makes the call again through its bounce buffer.
KWW=$(readlink -f "$B/progs/kwrite_wait")
sed 's|\*/kwrite_audit|*/kwrite_wait|' "$T/audit.conf" >"$T/wait-audit.conf"
sed 's|\*/kwrite_audit|*/kwrite_wait|' "$T/enforce.conf" >"$T/wait-enforce.conf"
E2E_CONF=$T/wait-audit.conf hardened "$T/out" "$T/err" "$KWW" || fail "wait, audit: exit $?: $(cat "$T/out" "$T/err")"
[ "$(cat "$T/out")" = 'read: 9
buf: late data' ] || fail "wait, audit: stdout: $(cat "$T/out")"
grep -q 'by the kernel in read(2); policy "kw"; audit: write allowed$' "$T/err" ||
	fail "wait, audit: no report of the kernel's write in read: $(cat "$T/err")"
E2E_CONF=$T/wait-enforce.conf hardened "$T/out" "$T/err" "$KWW" || fail "wait, enforce: exit $?: $(cat "$T/out" "$T/err")"
[ "$(cat "$T/out")" = 'read: -1 Bad address
buf: ' ] || fail "wait, enforce: stdout: $(cat "$T/out")"
pass "a read begun before the trigger and answered after it: made again through the bounce buffer (audit: succeeds, reported; enforce: EFAULT)"
exit 0
