#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# relro.sh - the shim adds no writable code pointer to a full-RELRO program
# (issue 27, item 4): the library is linked -z relro -z now (readelf:
# BIND_NOW, GNU_RELRO), its cached libc entry points (libc.h's table) and
# the heap's table are read-only pages at run time, and no word of its
# writable data (.data, .bss) points into an executable mapping, read from
# /proc/PID/mem of a full-RELRO program (tests/progs/relro_host) under the
# shim, without a policy and with one armed and protected.  The shim's TLS
# and the metadata it maps hold no function pointer by construction
# (return addresses are keys there, never called), and are not read here.
. "$(dirname "$0")/e2e_lib.sh"

HOST=$B/progs/relro_host
SCAN=$B/progs/relro_scan
for p in "$HOST" "$SCAN"; do [ -x "$p" ] || fail "$p not built"; done

readelf -d "$SHIM" | grep -q '(FLAGS).*BIND_NOW' || fail "the shim is not linked -z now: $(readelf -d "$SHIM" | grep FLAGS)"
readelf -lW "$SHIM" | grep -q 'GNU_RELRO' || fail "the shim has no GNU_RELRO segment"
readelf -d "$HOST" | grep -q '(FLAGS).*BIND_NOW' || fail "relro_host is not a full-RELRO program"
pass "the shim is linked with BIND_NOW and GNU_RELRO"

cat >"$T/relro.conf" <<'EOC'
version = 1;
policies = (
  { name = "relro"; match = { exe = [ "*/relro_host" ]; }; mode = "enforce";
    pools = ( { name = "config"; sites = [ "main" ]; protect = [ "on-call:poll" ]; } ); }
);
EOC

# The mapping of the shim's symbol SYM in PID: its permissions.
perms_of() {  # PID SYM
	local base off a range perms lo hi
	base=$(awk '/libpmalloc_shim\.so/ { split($1, r, "-"); print r[1]; exit }' "/proc/$1/maps")
	off=$(nm "$SHIM" | awk -v s="$2" '$3 == s { print $1; exit }')
	[ -n "$base" ] && [ -n "$off" ] || return 1
	a=$((16#$base + 16#$off))
	while read -r range perms _; do
		lo=$((16#${range%-*})); hi=$((16#${range#*-}))
		[ $a -ge $lo ] && [ $a -lt $hi ] && { echo "$perms"; return 0; }
	done <"/proc/$1/maps"
	return 1
}

for conf in "$NOFILE" "$T/relro.conf"; do
	what="no policy"; [ "$conf" = "$NOFILE" ] || what="a policy armed and protected"
	mkfifo "$T/in.$$"
	LD_PRELOAD=$SHIM PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$conf "$HOST" <"$T/in.$$" >"$T/out" 2>"$T/err" &
	pid=$!
	exec 9>"$T/in.$$"
	wait_until 100 grep -q ready "$T/out" || fail "$what: relro_host did not start: $(cat "$T/err")"
	for sym in libc_ro heap_page; do
		p=$(perms_of $pid $sym) || fail "$what: $sym not found"
		[ "${p:1:1}" = "-" ] || fail "$what: $sym is writable at run time ($p)"
	done
	"$SCAN" $pid libpmalloc_shim.so >"$T/scan" || fail "$what: cannot read relro_host's memory"
	exec 9>&-
	wait $pid
	rm -f "$T/in.$$"
	[ ! -s "$T/scan" ] || fail "$what: writable code pointers in the shim's data (offset, target): $(tr '\n' ' ' <"$T/scan")"
	pass "$what: libc's entry points and the heap's table read-only, no writable code pointer in the shim's .data/.bss"
done
exit 0
