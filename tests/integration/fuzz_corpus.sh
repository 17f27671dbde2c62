#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The fuzzers' corpora as regression tests: every file under tests/fuzz/NAME/
# goes once through the libFuzzer harness NAME (built with ASan and UBSan by
# make check), so an input that once crashed a parser or decoder, or broke
# the policy print->parse round trip, stays fixed.  make fuzz does the
# fuzzing itself.
. "$(dirname "$0")/lib.sh"

n_names=0
for dir in "$SRC"/tests/fuzz/*/; do
	name=$(basename "$dir")
	bin=$B/fuzz/$name
	[ -x "$bin" ] || fail "harness $name not built (make check builds $bin)"
	files=("$dir"*)
	[ -e "${files[0]}" ] || fail "corpus tests/fuzz/$name is empty"
	# Files, not the directory: libFuzzer then runs each once and stops.
	"$bin" -runs=1 "${files[@]}" >"$T/$name.log" 2>&1 ||
		fail "$name: $(grep 'Running:' "$T/$name.log" | tail -n 1)
$(grep -E 'ERROR|SUMMARY|runtime error|round trip|refused' "$T/$name.log" | head -n 8)"
	ran=$(grep -c '^Executed ' "$T/$name.log")
	[ "$ran" -eq "${#files[@]}" ] || fail "$name: ran $ran of ${#files[@]} inputs"
	n_names=$((n_names + 1))
	pass "$name: ${#files[@]} inputs"
done
[ "$n_names" -ge 3 ] || fail "only $n_names corpora under tests/fuzz"
