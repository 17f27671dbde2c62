#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# docs_once.sh - every topic lives in one document, for its reader: a
# sample of distinctive phrases, one of each document's topics, stands
# exactly once across README.md, ARCHITECTURE.md, HACKING.md, doc/*.md,
# tests/README and the manual pages (a second copy is a topic said twice,
# and drifts); the README is a start page (200 lines at most, make demo and
# make check in its first 40), its links lead to files that exist; and
# tests/README names every integration script.  (The man pages' formatting
# is ctl_docs.sh's.)  When a topic moves, its phrase moves with it here.
. "$(dirname "$0")/lib.sh"

cd "$SRC" || fail "cannot enter $SRC"
docs=$(ls README.md ARCHITECTURE.md HACKING.md doc/*.md tests/README man/*.[0-9] 2>/dev/null)

# PHRASE|the document it belongs to
phrases='
A pre-forking server'"'"'s worker|README.md
A week is a sensible|README.md
pmallocctl preload disable nginx && sudo systemctl daemon-reload|README.md
pmallocctl propose --exe /usr/sbin/nginx --mode audit|README.md
## The trip of a policy|ARCHITECTURE.md
## The trip of a violation|ARCHITECTURE.md
## The read-only rule|ARCHITECTURE.md
The shim binds to nothing of the program it runs in|ARCHITECTURE.md
Overwriting the shim'"'"'s own memory does not switch protection off|doc/threat-model.md
Threads that block every signal|doc/threat-model.md
What a violation entry names comes from the kernel|doc/threat-model.md
whole runs can be twice as slow|doc/figures.md
Tamper sweep|doc/figures.md
Below the target of this release|doc/figures.md
Every step of `make install` stops it when it fails|HACKING.md
replays every corpus file once|HACKING.md
seed corpora are|HACKING.md
Two libraries carry the API.|man/pmalloc.3
The rule is split at its last colon.|man/pmalloc.conf.5
A process can still send false reports about itself|man/pmallocd.8
Forged entries are shown, marked, in every output mode|man/pmallocctl.8
audit mode they succeed and are reported|man/pmalloc.7
'
n=0
while IFS='|' read -r phrase home; do
	[ -n "$phrase" ] || continue
	n=$((n + 1))
	where=$(grep -cF -- "$phrase" $docs | grep -v ':0$')
	count=$(grep -oF -- "$phrase" $docs | wc -l)
	[ "$count" = 1 ] || fail "\"$phrase\" stands $count times (once, in $home): $(echo $where)"
	[ "${where%%:*}" = "$home" ] || fail "\"$phrase\" is in ${where%%:*}, not in $home"
done <<<"$phrases"
[ $n -ge 15 ] || fail "only $n phrases sampled"
pass "$n distinctive phrases, each in one document only"

lines=$(wc -l <README.md)
[ "$lines" -le 200 ] || fail "README.md has $lines lines (a start page: 200 at most)"
head -n 40 README.md | grep -q 'make demo' || fail "make demo is not in README.md's first 40 lines"
head -n 40 README.md | grep -q 'make check' || fail "make check is not in README.md's first 40 lines"
pass "README.md: $lines lines, make demo and make check in its first 40"

# Every relative link of the Markdown documents leads to a file.
for f in README.md ARCHITECTURE.md HACKING.md doc/*.md; do
	[ -f "$f" ] || continue
	for link in $(grep -o '](\([^)#:]*\)\(#[^)]*\)\?)' "$f" | sed 's/^](\([^)#]*\).*/\1/'); do
		[ -e "$(dirname "$f")/$link" ] || fail "$f links to $link, which does not exist"
	done
done
pass "the documents' links lead to files"

# tests/README's table names every integration test.
for t in tests/integration/*.sh; do
	n=${t##*/}
	case $n in *_lib.sh | lib.sh) continue ;; esac
	grep -qE "(^|[ /,])${n//./\\.}([ ,;]|$)" tests/README || fail "tests/README does not name $n"
done
pass "tests/README names every integration test"
