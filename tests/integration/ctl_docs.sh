#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The files around the programs: man pages format without a warning and
# their example policy files pass pmallocctl check; the journal catalog
# compiles and explains all ten MESSAGE_IDs (and journalctl -x fills in
# the fields); the systemd units verify and keep the hardening they promise.
. "$(dirname "$0")/lib.sh"

# Man pages: groff with every warning, and man(1) at a few widths.
command -v groff >/dev/null || skip "groff not installed"
for page in pmallocd.8 pmallocctl.8 pmalloc.conf.5 pmalloc.3 pmalloc.7; do
	f=$SRC/man/$page
	[ -f "$f" ] || fail "man/$page missing"
	groff -man -Tutf8 -ww -z "$f" 2>"$T/groff.err" || fail "groff $page: $(cat "$T/groff.err")"
	[ ! -s "$T/groff.err" ] || fail "groff warns on $page: $(cat "$T/groff.err")"
	if command -v man >/dev/null; then
		for w in 60 80 132; do
			MANWIDTH=$w man --warnings -l "$f" >/dev/null 2>"$T/man.err"
			[ ! -s "$T/man.err" ] || fail "man warns on $page at width $w: $(cat "$T/man.err")"
		done
	fi
	head -n 5 "$f" | grep -q '^\.TH ' || fail "$page: no .TH near the top"
done
pass "man pages format without warnings"

# The example policies of pmalloc.conf(5) are valid.
if [ -x "$B/pmallocctl" ]; then
	awk -v dir="$T" '
		/^\.EX$/ { n++; out = dir "/example" n ".conf"; inex = 1; next }
		/^\.EE$/ { inex = 0; next }
		inex { gsub(/\\-/, "-"); print > out }' "$SRC/man/pmalloc.conf.5"
	found=0
	for ex in "$T"/example*.conf; do
		grep -q '^version = 1;' "$ex" || continue
		found=$((found + 1))
		"$B/pmallocctl" check "$ex" >"$T/out" 2>&1 || fail "pmalloc.conf(5) example refused: $(cat "$T/out")"
	done
	[ $found -ge 2 ] || fail "expected at least 2 example files in pmalloc.conf(5), found $found"
	pass "the $found examples of pmalloc.conf(5) pass pmallocctl check"
fi

# The catalog, compiled into a scratch root.
cat=$SRC/systemd/pmalloc.catalog
[ -f "$cat" ] || fail "systemd/pmalloc.catalog missing"
# The MESSAGE_IDs: the one table the shim, pmallocd and pmallocctl include.
ids=$(sed -n 's/^#define MID_[A-Z]* *"\([0-9a-f]\{32\}\)".*/\1/p' "$MSGID_H")
[ "$(wc -w <<<"$ids")" = 11 ] || fail "$MSGID_H: expected 11 MESSAGE_IDs: $ids"
for id in $ids; do
	grep -q "^\.B $id\$" "$SRC/man/pmallocd.8" || fail "pmallocd(8) does not list MESSAGE_ID $id"
done
if command -v journalctl >/dev/null; then
	root=$T/root
	mkdir -p "$root/usr/lib/systemd/catalog"
	cp "$cat" "$root/usr/lib/systemd/catalog/"
	journalctl --root="$root" --update-catalog 2>"$T/err" || fail "--update-catalog: $(cat "$T/err")"
	[ ! -s "$T/err" ] || fail "--update-catalog warns: $(cat "$T/err")"
	journalctl --root="$root" --list-catalog >"$T/list" 2>&1 || fail "--list-catalog: $(cat "$T/list")"
	[ "$(wc -l <"$T/list")" = 11 ] || fail "catalog: expected 11 entries: $(cat "$T/list")"
	for id in $ids; do
		grep -q "^$id pmalloc: [A-Z]" "$T/list" || fail "catalog lacks $id: $(cat "$T/list")"
		journalctl --root="$root" --dump-catalog "$id" >"$T/entry" 2>&1 || fail "--dump-catalog $id"
		for h in Subject: 'Defined-By: pmalloc' Support: Documentation:; do
			grep -q "^$h" "$T/entry" || fail "catalog entry $id lacks $h"
		done
		grep -q '@[A-Z_]*@' "$T/entry" || fail "catalog entry $id names no field"
	done
	journalctl --root="$root" --dump-catalog "$MID_VIOLATION" >"$T/entry"
	for w in '"enforce"' '"audit"' SIGSEGV @PMALLOC_POOL@ @PMALLOC_POLICY@ @OBJECT_PID@ @PMALLOC_EXE@ \
		'pmallocctl violations --pid @OBJECT_PID@' 'systemctl reload pmallocd'; do
		grep -qF -- "$w" "$T/entry" || fail "violation catalog entry does not mention $w"
	done
	pass "catalog: eleven entries compile"

	# journalctl -x fills in the fields, with the scratch catalog mounted
	# over the system's in a private mount namespace (nothing else changes).
	if [ "$(id -u)" = 0 ] && [ -d /var/lib/systemd/catalog ] && command -v unshare >/dev/null &&
		command -v gcc >/dev/null && unshare -m true 2>/dev/null; then
		journald_ensure
		gcc -std=gnu11 -O1 -Wall -Wextra -Werror -o "$T/inject" "$SRC/tests/progs/journal_inject.c" -ldl ||
			fail "cannot build journal_inject"
		pid=$((5000000 + RANDOM * 100))
		"$T/inject" MESSAGE_ID=$MID_VIOLATION PRIORITY=2 OBJECT_PID=$pid \
			MESSAGE="catalog test" PMALLOC_POLICY=demo PMALLOC_POOL=config PMALLOC_MODE=enforce \
			PMALLOC_ADDRESS=0x7f0000001010 PMALLOC_EXE=/usr/bin/pmalloc-demo || fail "inject"
		journal_sync
		unshare -m sh -c 'mount --bind "$1/var/lib/systemd/catalog" /var/lib/systemd/catalog &&
			journalctl -x --no-pager OBJECT_PID="$2"' sh "$root" "$pid" >"$T/x" 2>&1 ||
			fail "journalctl -x: $(cat "$T/x")"
		grep -q "Subject: Write to protected memory in process $pid (pool config)" "$T/x" &&
			grep -q "Process $pid (/usr/bin/pmalloc-demo) wrote to address 0x7f0000001010," "$T/x" &&
			grep -q 'The policy.s mode is enforce\.' "$T/x" || fail "journalctl -x: $(cat "$T/x")"
		pass "journalctl -x explains a violation with its fields"
	fi
else
	echo "note: journalctl missing: catalog not compiled"
fi

# The units: what the service must keep, and systemd's own verification.
svc=$SRC/systemd/pmallocd.service sock=$SRC/systemd/pmallocd.socket
[ -f "$svc" ] && [ -f "$sock" ] || fail "systemd units missing"
for kv in Type=notify ExecStart=@SBINDIR@/pmallocd 'ExecReload=/bin/sh -c "kill -HUP ${MAINPID}"' \
	Restart=on-failure RuntimeDirectory=pmalloc ProtectSystem=strict ProtectHome=read-only \
	NoNewPrivileges=yes PrivateTmp=yes PrivateDevices=yes ProtectKernelTunables=yes \
	ProtectKernelModules=yes ProtectKernelLogs=yes ProtectControlGroups=yes \
	RestrictAddressFamilies=AF_UNIX RestrictNamespaces=yes LockPersonality=yes \
	MemoryDenyWriteExecute=yes RestrictRealtime=yes SystemCallArchitectures=native \
	'CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SETUID CAP_SETGID' MemoryMax=256M; do
	grep -qxF "$kv" "$svc" || fail "pmallocd.service lacks $kv"
done
grep -q '^SystemCallFilter=@system-service' "$svc" || fail "pmallocd.service lacks SystemCallFilter=@system-service"
grep -qE '^(ProtectProc=invisible|ProcSubset=pid)' "$svc" && fail "pmallocd.service hides /proc/PID, which pmallocd reads"
for kv in ListenSequentialPacket=/run/pmalloc/pmallocd.sock SocketMode=0666 PassCredentials=yes; do
	grep -qxF "$kv" "$sock" || fail "pmallocd.socket lacks $kv"
done
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$T/units" "$T/sbin"
	printf '#!/bin/sh\n' >"$T/sbin/pmallocd"
	chmod +x "$T/sbin/pmallocd"
	# As make install writes them.
	for f in "$svc" "$sock"; do sed "s|@SBINDIR@|$T/sbin|g" "$f" >"$T/units/$(basename "$f")"; done
	(cd "$T/units" && systemd-analyze verify --man=no ./pmallocd.service ./pmallocd.socket) >"$T/v" 2>&1 ||
		fail "systemd-analyze verify: $(cat "$T/v")"
	[ ! -s "$T/v" ] || fail "systemd-analyze verify warns: $(cat "$T/v")"
	pass "units verify"
else
	echo "note: systemd-analyze missing: units not verified"
fi
