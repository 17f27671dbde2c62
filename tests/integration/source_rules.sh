#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# source_rules.sh - the rules of the tree that a reader relies on, checked
# on the sources themselves: nothing names the team's contract file (its
# name is built below, so that this file does not hold it either: the
# README, ARCHITECTURE.md, HACKING.md, doc/ and the man pages are the
# documentation); the MESSAGE_IDs are
# defined once
# (common/proto/msgid.h); the shim's kernel calls for memory, signals,
# threads and clocks, and its raw system calls, are made in shim/sys/os.c
# only (the rule is stated in os.c's opening comment); no source file of
# shim/, daemon/ or common/ is over 1,000 lines.
. "$(dirname "$0")/lib.sh"

cd "$SRC" || fail "cannot enter $SRC"
dirs="README.md ARCHITECTURE.md HACKING.md doc Makefile mk shim common daemon include man conf systemd completion debian tests"

contract=SPEC; contract=$contract.md
hits=$(grep -rIlF "$contract" $dirs 2>/dev/null)
[ -z "$hits" ] || fail "files naming $contract: $hits"
pass "nothing names $contract"

ids=$(sed -n 's/^#define MID_[A-Z]* *"\([0-9a-f]\{32\}\)".*/\1/p' common/proto/msgid.h)
[ "$(wc -w <<<"$ids")" = 11 ] || fail "common/proto/msgid.h: expected 11 MESSAGE_IDs: $ids"
for id in $ids; do
	other=$(grep -rl --include='*.[ch]' "\"$id\"" common shim daemon include | grep -v '^common/proto/msgid\.h$')
	[ -z "$other" ] || fail "MESSAGE_ID $id defined outside common/proto/msgid.h: $other"
done
pass "the eleven MESSAGE_IDs are defined in common/proto/msgid.h only"

# The layer table is written once (mk/layers.mk) and ARCHITECTURE.md quotes
# it as make reads it.
lists=$(make -s --no-print-directory print-layers) || fail "make print-layers failed"
[ -n "$lists" ] || fail "make print-layers printed nothing"
while IFS= read -r line; do
	grep -qxF "$line" ARCHITECTURE.md || fail "ARCHITECTURE.md does not quote mk/layers.mk's: $line"
done <<<"$lists"
pass "ARCHITECTURE.md quotes the one layer table, mk/layers.mk"

# Calls, not mentions: comments are dropped first (gcc's preprocessor,
# without expanding includes or macros), once for the checks below.
shim_c=$(find shim -name '*.c' | sort)
mkdir -p "$T/code"
for f in $shim_c; do
	mkdir -p "$T/code/$(dirname "$f")"
	gcc -fpreprocessed -dD -E -P "$f" >"$T/code/$f" 2>/dev/null || fail "cannot read $f"
done
# (An interposer's definition, PMALLOC_EXPORT, is named for the call it
# stands in for; it is not a call.)
bad=$(cd "$T/code" && grep -nrE --exclude=os.c '\b(syscall|mmap|munmap|mprotect|mremap|madvise|mseal|membarrier|sigaltstack|__sigaction|rt_sigprocmask|tgkill|tkill|gettid|sched_yield|clock_gettime|clock_nanosleep|nanosleep|usleep)[[:space:]]*\(' shim |
	grep -v PMALLOC_EXPORT)
[ -z "$bad" ] || fail "a kernel call that belongs in shim/sys/os.c: $bad"
pass "the shim's memory, signal, thread and clock calls are in shim/sys/os.c only"

# The re-entrancy guard is set in guard.h only (shim_busy_enter/leave).
bad=$(cd "$T/code" && grep -nrE 'shim_busy[[:space:]]*(=[^=]|\+\+|--)' shim)
[ -z "$bad" ] || fail "shim_busy set outside guard.h: $bad"
pass "shim_busy is set through shim/sys/guard.h only"

# No two files of shim/ or daemon/ (each with common/) import each other,
# nor in a longer circle: a.c including b.h where b.c exists (in any folder
# of the same tree) is an edge a -> b.  (The calls and the ranks are make
# check-layers' to check.)
for d in "shim common" "daemon common"; do
	declare -A has_c=()
	for f in $(find $d -name '*.c' -printf '%f\n'); do has_c[${f%.c}]=1; done
	edges=$(grep -rE --include='*.c' '^#include "[a-z_]*\.h"' $d | while IFS=: read -r f inc; do
		b=${f##*/}; b=${b%.c}
		h=${inc#*\"}; h=${h%%.h\"*}
		[ "$h" != "$b" ] && [ -n "${has_c[$h]:-}" ] && echo "$b $h"
	done)
	unset has_c
	loops=$(tsort <<<"$edges" 2>&1 >/dev/null)
	[ -z "$loops" ] || fail "$d: files that import each other: $loops"
done
pass "no import circles in shim/, daemon/ and common/"

# The rooms of ARCHITECTURE.md name every source file of shim/, common/ and
# daemon/ (by its name, in its folder's row), and every .c file opens with
# a comment.
src_dirs=$(ls -d shim common daemon 2>/dev/null)
layout=$(sed -n '/^## The rooms$/,/^## /p' ARCHITECTURE.md)
[ -n "$layout" ] || fail "ARCHITECTURE.md has no section \"The rooms\""
for f in $(find $src_dirs -name '*.[ch]' | sort); do
	n=${f##*/}
	case $n in *.h) [ -f "${f%.h}.c" ] && continue ;; esac   # named with its .c
	[[ $layout == *"\`$n\`"* || $layout == *"\`${n%.*}.c\`/\`$n\`"* ]] ||
		fail "ARCHITECTURE.md, The rooms, does not name $f"
done
for f in $(find $src_dirs -name '*.c'); do
	first=; IFS= read -r first <"$f"
	[[ $first == '/*'* ]] || fail "$f does not open with a comment"
done
pass "ARCHITECTURE.md names every source file; every .c file opens with a comment"

# No room grows past 1,000 lines: a file that does is split by its
# concerns (ARCHITECTURE.md names each room).
# (The tracked files; outside a git checkout, every one.)
files=$(git ls-files -- 'shim/*.[ch]' 'daemon/*.[ch]' 'common/*.[ch]' 2>/dev/null) ||
	files=$(find shim daemon common -name '*.[ch]')
[ -n "$files" ] || fail "no source files found in shim/, daemon/, common/"
big=$(wc -l $files | awk '$2 != "total" && $1 > 1000 { printf "%s (%d lines) ", $2, $1 }')
[ -z "$big" ] || fail "files over 1,000 lines, to split by concern: $big"
pass "no .c or .h file of shim/, daemon/ or common/ is over 1,000 lines"

# The test scripts take the MESSAGE_IDs from lib.sh ($MID_*, read from
# msgid.h), never write one out.
for id in $ids; do
	other=$(grep -l "$id" tests/integration/*.sh)
	[ -z "$other" ] || fail "MESSAGE_ID $id written out in $other (use lib.sh's \$MID_*)"
done
pass "no test script writes a MESSAGE_ID out"
