#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# demo_plain.sh - make demo's output into a file (or a pipe) is plain text:
# no terminal escape sequences, the headings still there.
. "$(dirname "$0")/lib.sh"

[ -x "$B/progs/pmalloc-demo" ] && [ -x "$B/pmallocd" ] || skip "the demo's programs are not built"
"$SRC/tests/demo" "$B" >"$T/demo.out" 2>&1 </dev/null || fail "the demo failed: $(tail -n 20 "$T/demo.out")"
grep -q $'\e' "$T/demo.out" && fail "escape sequences in the demo's output: $(grep -n $'\e' "$T/demo.out" | od -c | head)"
grep -qx '== 1. The pool API: build a configuration, protect it, then a stray write' "$T/demo.out" ||
	fail "no plain heading: $(head -n 3 "$T/demo.out")"
pass "make demo writes plain text to a file"
exit 0
