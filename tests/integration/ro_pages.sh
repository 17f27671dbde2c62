#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ro_pages.sh - the one list of the shim's read-only pages (shim/sys/ro.c)
# holds every one: each data object of libpmalloc_shim.so declared
# RO_PAGE-aligned and RO_PAGE-sized (a page of state made read-only, by the
# rule of os.h) is registered at start-up, so a page added without its
# ro_register is caught here.  The count the shim says under
# PMALLOC_DEBUG (the list's own page apart) must equal the count of such
# objects among the library's symbols.  ro.c's freezing itself, on real
# 4 KiB and simulated 64 KiB pages, is unit/test_ro.c's.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
command -v nm >/dev/null && command -v readelf >/dev/null || skip "no nm or readelf (binutils)"
[ -x /bin/true ] || skip "no /bin/true"
# RO_PAGE is the size of ro.c's list, which has its page to itself.
page=$(nm -S "$SHIM" | awk '$3 ~ /^[bd]$/ && $4 == "list" { print $2 }')
[ -n "$page" ] || fail "no ro.c list in $SHIM's symbols"
page=$((16#$page))
# Aligned to the page by its own declaration: an object of whole pages that
# merely lands on a page boundary (reload.c's gen_region, 4 KiB) is none.
aligned=$(for o in $(find "$B/pic" -name '*.o'); do readelf -SW "$o"; done |
	awk -v page="$page" '{ for (i = 1; i < NF; i++) if ($i ~ /^\.(bss|data)\./ && $NF >= page) {
		sub(/^\.(bss|data)(\.rel)?(\.local)?\./, "", $i); print $i } }')
[ -n "$aligned" ] || fail "no page-aligned section in the objects of $B/pic"
pages=$(nm -S "$SHIM" | while read -r addr size kind name; do
	case $kind in b | B | d | D) ;; *) continue ;; esac
	[ -n "$name" ] || continue
	a=$((16#$addr)); s=$((16#$size))
	[ "$s" -gt 0 ] && [ $((a % page)) -eq 0 ] && [ $((s % page)) -eq 0 ] &&
		printf '%s\n' "$aligned" | grep -qx "$name" && echo "$name"
done)
n_pages=$(printf '%s\n' "$pages" | grep -c .)
[ "$n_pages" -ge 10 ] || fail "only $n_pages page-aligned objects found in $SHIM: $(echo $pages)"

PMALLOC_DEBUG=1 PMALLOC_SOCKET=$T/none.sock PMALLOC_CONF=$T/none.conf LD_PRELOAD=$SHIM /bin/true 2>"$T/err" ||
	fail "/bin/true under the shim: $(cat "$T/err")"
listed=$(sed -n 's/.*read-only pages: \([0-9]*\) listed.*/\1/p' "$T/err")
[ -n "$listed" ] || fail "the shim did not say how many read-only pages it listed: $(cat "$T/err")"
grep -q "cannot be made read-only" "$T/err" && fail "a listed page cannot be read-only here: $(cat "$T/err")"
[ $((listed + 1)) -eq "$n_pages" ] ||
	fail "$listed pages listed (and the list's own), $n_pages in the library: $(echo $pages)"
pass "all $n_pages read-only pages of the shim are in the one list ($listed and the list's own)"
