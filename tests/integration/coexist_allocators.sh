#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# coexist_allocators.sh - programs linked against another allocator
# (jemalloc, tcmalloc, mimalloc) keep it under the shim, idle and armed:
# every heap route (malloc, calloc, realloc, the memalign family, strdup,
# glibc's own getline buffer ...) reaches that allocator, as the allocator's
# own API confirms (jemalloc's mallctl, tcmalloc's GetOwnership, mimalloc's
# mi_is_in_heap_region), malloc_usable_size agrees with it, and with a policy
# armed, allocations from the named site go to the pool and never to it.
# Then Debian's redis-server, linked to jemalloc, serves a bounded
# redis-benchmark load on loopback under an armed policy.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
[ -f "$SHIM" ] || fail "$SHIM is missing: run make"
CC=${CC:-cc}
command -v "$CC" >/dev/null || skip "no C compiler"
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock
CONF=$T/armed.conf
cat >"$CONF" <<'CONF'
version = 1;
policies = (
  { name = "coexist"; match = { exe = [ "*/coexist-*" ]; };
    pools = ( { name = "keys"; sites = [ "pool_site" ]; protect = [ "manual" ]; } ); }
);
CONF

# build NAME DEFINE LIB: the test program linked against LIB.
build() {
	"$CC" -std=gnu11 -O1 -g -Wall -Wextra -Werror "-D$2" -o "$T/coexist-$1" "$SRC/tests/integration/coexist_prog.c" \
		"$3" -ldl -lpthread 2>"$T/cc-$1.err" || fail "cannot build against $1: $(cat "$T/cc-$1.err")"
}

# run NAME LIBFILE: idle and armed, each checked.
run() {
	local name=$1 lib=$2 prog=$T/coexist-$1 out
	out=$("$prog" 2>&1) || fail "$name without the shim: $out"
	out=$(LD_PRELOAD=$SHIM PMALLOC_CONF=/nonexistent "$prog" 2>&1) || fail "$name, idle shim: $out"
	pass "$name, idle shim: $(printf '%s' "$out" | grep -c '^ok:') checks"
	out=$(LD_PRELOAD=$SHIM PMALLOC_CONF=$CONF PMALLOC_DEBUG=1 "$prog" armed 2>&1) || fail "$name, armed: $out"
	printf '%s\n' "$out" | grep -q "^ok: pool route" || fail "$name, armed: no pool route: $out"
	printf '%s\n' "$out" | grep -q "heap allocator: .*/$lib " ||
		fail "$name, armed: the heap is not $lib: $(printf '%s\n' "$out" | grep 'heap allocator')"
	pass "$name, armed: $(printf '%s\n' "$out" | grep -c '^ok:') checks, heap $lib"
}

build jemalloc NEXT_JEMALLOC -ljemalloc
run jemalloc libjemalloc.so.2
build mimalloc NEXT_MIMALLOC -lmimalloc
run mimalloc libmimalloc.so.2
build tcmalloc NEXT_TCMALLOC -l:libtcmalloc_minimal.so.4
run tcmalloc libtcmalloc_minimal.so.4
