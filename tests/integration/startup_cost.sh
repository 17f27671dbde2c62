# SPDX-License-Identifier: GPL-2.0-or-later
# startup_cost.sh - what arming a policy costs a process, in the work that
# makes its start-up slower (make bench times python3; here the counts that
# time is made of, exact, with no timing asserted):
# - the call-site table: a site's home slot is among the table's first 4
#   pages, written when the table is mapped, so a program's first 64 sites
#   take no page fault (with homes over all 16 pages they took 20 or so,
#   two a page: the zero page mapped by malloc's read, then copied);
# - the policy file is read in one read(2);
# - the state and its image, and the rules, get no mapping of their own
#   (they fit the page of the pointer to them);
# - no read-only page is made writable again before main but the heap's
#   table (the fault handler's decisions are written before they are
#   locked, not locked, opened and locked again);
# - arming's freezes of adjacent pages are one mprotect (ro.h), so the
#   start-up makes few calls.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/site_pages
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
export PMALLOC_SOCKET=$T/no-daemon.sock PMALLOC_CONF=$T/pmalloc.conf
cat >"$PMALLOC_CONF" <<'CONF'
version = 1;
policies = ( { name = "sites"; match = { exe = [ "*/site_pages" ]; };
  pools = ( { name = "p"; sites = [ "main" ]; } ); } );
CONF

out=$(LD_PRELOAD=$SHIM "$PROG") || fail "site_pages failed: $out"
faults=$(printf '%s\n' "$out" | sed -n 's/^64 sites: \([0-9]*\) page faults$/\1/p')
[ -n "$faults" ] || fail "no fault count: $out"
[ "$faults" -le 4 ] || fail "64 new call sites took $faults page faults under an armed policy (at most 4)"
pass "64 new call sites: $faults page faults"

command -v strace >/dev/null || skip "strace not installed"
strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
strace -qq -E LD_PRELOAD="$SHIM" -e trace=openat,read,close,mmap,mprotect,write -o "$T/strace" \
	"$PROG" >"$T/out" 2>"$T/err" || fail "site_pages under strace failed: $(cat "$T/err")"
# From the policy file's open to main's first line: the shim's start-up.
sed -n "\\|openat(.*\"$PMALLOC_CONF\"|,/^write(1, \"main/p" "$T/strace" >"$T/startup"
grep -q '^write(1, "main' "$T/startup" || fail "no start-up in the trace: $(cat "$T/strace")"
fd=$(sed -n '1s/.*) = \([0-9]*\)$/\1/p' "$T/startup")
[ -n "$fd" ] || fail "the policy file was not opened: $(head -n 1 "$T/startup")"
reads=$(sed -n "/^close($fd)/q;/^read($fd, /p" "$T/startup" | wc -l)
[ "$reads" -eq 1 ] || fail "the policy file was read in $reads read(2) calls: $(grep "^read($fd, " "$T/startup")"
pass "the policy file read in one read(2)"
# No page mapped for the state nor for the rules' read-only copy
# (resolve_rules.c's freeze_rules: rules on the heap were one overflow away
# from routing nothing): each fits the read-only page of the pointer to it.
pages=$(grep -c '^mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)' "$T/startup")
[ "$pages" -eq 0 ] || fail "a page mapped for the state or the rules: $(grep '^mmap(NULL, 4096,' "$T/startup")"
pass "no mapping of its own for the state or the rules"
# Each "mprotect(A, L, PROT_READ|PROT_WRITE)" later followed by
# "mprotect(A, L, PROT_READ)": a read-only page opened and locked again.
reopened=$(awk '
	/^mprotect\(.*, PROT_READ\|PROT_WRITE\)/ { split($0, a, /[(,]/); rw[a[2] "," a[3]] = 1; next }
	/^mprotect\(.*, PROT_READ\)/ { split($0, a, /[(,]/); k = a[2] "," a[3]; if (k in rw) { n++; delete rw[k] } }
	END { print n + 0 }' "$T/startup")
# Round 3 keeps more decision state read-only, written while the program
# starts, each write a checked open and lock: the heap's table (free()'s
# pool check), the pools' caps, and the site table's filter of the
# policy's code as the rules resolve (twice here).  At most four.
[ "$reopened" -le 4 ] || fail "$reopened read-only pages made writable again at start-up (at most 4): $(grep '^mprotect' "$T/startup")"
pass "$reopened read-only pages made writable again at start-up"
# Each mprotect costs some 3.8 us here whatever its length: arming's first
# freezes of pages side by side (the arena's map, the fault handler's two
# pages, the pools' table, the filter, the rules, the state pointer, the
# learn and reload states) go in one call (ro.h's held freezes; the pages
# frozen before arming are linked apart, the Makefile's SHIM_EARLY_SRCS),
# the filter is not opened while its first close is put off, and the
# program's signal actions are not opened before their first close.  16
# calls before; 10; 8; 6 (issue 29).
calls=$(grep -c '^mprotect(' "$T/startup")
[ "$calls" -le 6 ] || fail "$calls mprotect(2) calls at start-up (at most 6): $(grep '^mprotect' "$T/startup")"
pass "$calls mprotect(2) calls at start-up"
