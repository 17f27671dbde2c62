#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# api_example.sh - the pool API as someone else's program sees it: install
# into a scratch root, build tests/progs/api_example.c against the installed
# header and pmalloc.pc (libpmalloc: the pool API without interposition;
# nothing from the source tree), run it,
# then run its "attack" and check the death and the report line.
. "$(dirname "$0")/lib.sh"

command -v pkg-config >/dev/null || skip "pkg-config not installed"
root=$T/root
make -s -j"$(nproc)" -C "$SRC" B="$B_USR" install DESTDIR="$root" PREFIX=/usr >"$T/install.log" 2>&1 ||
	fail "make install failed: $(tail -n 20 "$T/install.log")"
[ -f "$root/usr/include/pmalloc.h" ] || fail "no header at $root/usr/include/pmalloc.h"
ma=$(${CC:-cc} -print-multiarch 2>/dev/null); libdir=/usr/lib${ma:+/$ma}
[ -f "$root$libdir/libpmalloc.so" ] || fail "no library at $root$libdir/libpmalloc.so"
pc=$root$libdir/pkgconfig/pmalloc.pc
[ -f "$pc" ] || fail "no pkg-config file at $pc"

export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$root$libdir/pkgconfig
for v in prefix libdir includedir; do
	want=/usr; [ $v = libdir ] && want=$libdir; [ $v = includedir ] && want=/usr/include
	got=$(pkg-config --variable=$v pmalloc) || fail "pkg-config does not know pmalloc"
	# pkg-config may or may not prefix the sysroot to variables: accept both.
	[ "$got" = "$want" ] || [ "$got" = "$root$want" ] ||
		fail "installed pmalloc.pc says $v=$got, expected $want (make install PREFIX=/usr)"
done
flags=$(pkg-config --cflags --libs pmalloc) || fail "pkg-config --cflags --libs pmalloc failed"
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -o "$T/api_example" "$SRC/tests/progs/api_example.c" \
	$flags >"$T/cc.log" 2>&1 || fail "api_example does not build with '$flags': $(cat "$T/cc.log")"

export LD_LIBRARY_PATH=$root$libdir
ulimit -c 0
ldd "$T/api_example" | grep -q "$root$libdir/libpmalloc.so.0" ||
	fail "api_example is not linked to the installed library: $(ldd "$T/api_example")"

"$T/api_example" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 0 ] || fail "api_example exited $rc: $(cat "$T/out" "$T/err")"
[ "$(cat "$T/out")" = "api_example: ok" ] || fail "unexpected output: $(cat "$T/out")"
[ -s "$T/err" ] && fail "unexpected stderr: $(cat "$T/err")"
pass "api_example works against the installed library"

# The inner shell reports the signal itself; its notice is not ours to show.
( "$T/api_example" attack >"$T/out" 2>"$T/err"; exit $? ) 2>/dev/null; rc=$?
[ $rc -eq $((128 + 11)) ] || fail "api_example attack: exit $rc, expected death by SIGSEGV (139): $(cat "$T/out" "$T/err")"
read -r _ _ pid _ obj _ addr _ size < "$T/out" ||
	fail "api_example attack printed no target: $(cat "$T/out")"
offset=$((addr - obj))
usable=$(( (size + 15) / 16 * 16 ))
[ "$(wc -l < "$T/err")" -eq 1 ] || fail "expected one report line, got: $(cat "$T/err")"
line=$(cat "$T/err")
head="pmalloc[$pid]: write to protected pool \"(unnamed)\" at $addr: offset $offset in $usable-byte object $obj allocated at "
case $line in
"$head"*) ;;
*) fail "report line: $line
expected to start: $head" ;;
esac
rest=${line#"$head"}
[[ $rest =~ ^api_example\+0x[0-9a-f]+\;\ ip\ 0x[0-9a-f]+\ \(api_example\+0x[0-9a-f]+\)\;\ enforce:\ killed\ by\ SIGSEGV$ ]] ||
	fail "report line tail: $rest"
pass "api_example attack dies by SIGSEGV with the report: $line"
exit 0
