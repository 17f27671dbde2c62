#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# load_heap.sh - the shim loads its policy (a file's parse and compile, or
# pmallocd's image) and arms it before main without leaving anything in the
# program's heap: the load is in the shim's own memory (scratch.c), arming's
# working copy of the rules too, the ELF files' buffers in the shim's .bss.
# Freed from the heap, that work left holes at its bottom which a server's
# request buffers then split and merged at every request (nginx: 180
# instructions a request).  A policy of 600 sites (its image near the largest pmallocd hands out), each way: no free
# chunk below the heap's top at main, and no block of the load outliving it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/heap_at_main
[ -x "$PROG" ] || fail "heap_at_main is missing: run make check"

CONF=$T/big.conf
{
	printf 'version = 1;\npolicies = ( { name = "big"; match = { exe = [ "*/heap_at_main" ]; };\n'
	printf '  pools = ( { name = "p"; protect = [ "on-call:listen" ]; sites = [\n'
	for i in $(seq 599); do printf '    "no_such_function_with_a_long_name_%d",\n' "$i"; done
	printf '    "main" ]; } ); } );\n'
} >"$CONF"
"$B/pmallocctl" check "$CONF" >"$T/check" 2>&1 || fail "the policy does not check: $(cat "$T/check")"

holes() { # LABEL OUTPUT
	local h
	h=$(sed -n 's/^arena [0-9]* inuse [0-9]* holes \([0-9]*\)$/\1/p' "$2")
	[ -n "$h" ] || fail "$1: no heap figures: $(cat "$2")"
	[ "$h" -lt 1024 ] || fail "$1: $h bytes of holes in the program's heap at main: $(cat "$2")"
	! grep -q 'outlive it' "$T/err" || fail "$1: $(grep 'outlive it' "$T/err")"
	pass "$1: $(cat "$2")"
}

PMALLOC_DEBUG=1 PMALLOC_SOCKET=$T/none.sock PMALLOC_CONF=$CONF LD_PRELOAD=$SHIM "$PROG" >"$T/out" 2>"$T/err" ||
	fail "heap_at_main: $(cat "$T/out" "$T/err")"
grep -q 'policy "big" .*applies to' "$T/err" || fail "the file's policy not applied: $(head -5 "$T/err")"
holes "the policy from the file" "$T/out"

start_daemon
PMALLOC_DEBUG=1 PMALLOC_SOCKET=$SOCK LD_PRELOAD=$SHIM "$PROG" >"$T/out" 2>"$T/err" ||
	fail "heap_at_main: $(cat "$T/out" "$T/err")"
grep -q 'policy "big" .*from pmallocd' "$T/err" || fail "pmallocd's policy not applied: $(head -5 "$T/err")"
holes "the policy from pmallocd" "$T/out"
stop_daemon || fail "pmallocd: $(tail -5 "$T/daemon.log")"
