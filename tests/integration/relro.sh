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
# Every word the loader writes an entry point into (a JUMP_SLOT or GLOB_DAT
# relocation: libc's functions the shim calls), and every relocated word
# that points into the shim's code (its constructors, the tables of
# function pointers it was compiled with), lies inside GNU_RELRO: read-only
# once the loader is done.  The entry points the shim looks up itself at
# start-up (REAL(), dlsym RTLD_NEXT: it exports the same names) are in a
# page made read-only then, as is the heap's table (heap_page, compiled
# with its functions' addresses): both checked at run time below.
readelf -lW "$SHIM" | awk '$1 == "GNU_RELRO" { print "relro", $3, $6 } $1 == "LOAD" && $8 == "E" { print "text", $3, $6 }' >"$T/segs"
nm -S "$SHIM" | awk '$4 == "heap_page" { print "ro", $1, $2 }' >>"$T/segs"
readelf -rW "$SHIM" | awk -v segs="$T/segs" '
	function num(h) { h = tolower(h); sub(/^0x/, "", h); v = 0
		for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
		return v }
	BEGIN { while ((getline l < segs) > 0) { split(l, f, " ")
		lo = num(f[2]); len = num(f[3])
		if (f[1] == "relro") { rlo = lo; rhi = lo + len } else if (f[1] == "text") { tlo = lo; thi = lo + len }
		else { plo = lo; phi = lo + len } } }
	$3 ~ /JUMP_SLOT|GLOB_DAT/ { n++; o = num($1); if (o < rlo || o >= rhi) print $1, $3, $5 }
	$3 ~ /RELATIVE/ { o = num($1); a = num($4)
		if ((o < rlo || o >= rhi) && (o < plo || o >= phi) && a >= tlo && a < thi) print $1, $3, $4 }
	END { if (!n || !rhi || !thi || !phi) print "none", "read", "(no relocation or segment found)" }' >"$T/outside"
[ ! -s "$T/outside" ] || fail "relocated code pointers outside GNU_RELRO (offset, type, target): $(tr '\n' ' ' <"$T/outside")"
pass "the shim is linked with BIND_NOW and GNU_RELRO; every entry point the loader writes, and every relocated pointer into its code, lies inside GNU_RELRO (or the heap's table, read-only from start-up)"

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
	# The last round's "ready" must not pass for this one's: the program
	# opens its output only once the fifo has a writer (below).
	rm -f "$T/out" "$T/err"
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
