# lazy_symbols.sh - a policy costs a process only the symbol tables it
# needs.  Before main the shim locates every loaded object's table (files
# are opened only then: later the program may be chrooted or sandboxed) and
# reads the program's, whose function the rule names; the check for rules
# that name nothing stops there.  Another object's table is read at the
# first allocation made from its code, once; an object that never
# allocates is never read.  A rule that names nothing has every table read
# before main, and is still reported; one for an object not loaded yet, none.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/ip_static
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
export PMALLOC_SOCKET=$T/no-daemon.sock PMALLOC_CONF=$T/pmalloc.conf
policy() {
	cat >"$PMALLOC_CONF" <<EOF
version = 1;
policies = ( { name = "lazy"; match = { exe = [ "*/ip_static" ]; };
  pools = ( { name = "secrets"; sites = [ $1 ]; protect = [ "on-call:listen" ]; } ); } );
EOF
}
run() {
	PMALLOC_DEBUG=1 LD_PRELOAD=$SHIM "$PROG" >"$T/out" 2>"$T/err" || fail "ip_static failed: $(cat "$T/err")"
	grep -q '^after listen: secret protected 1,' "$T/out" || fail "secret not protected: $(cat "$T/out" "$T/err")"
	sed -n 's/.*: [0-9]* symbols of \(.*\) located, to be read when needed$/\1/p' "$T/err" | sort >"$T/located"
	sed -n 's/.*: reading the [0-9]* symbols of \(.*\)$/\1/p' "$T/err" | sort >"$T/read"
}

policy '"make_secret"'
run
grep -q '/ip_static$' "$T/located" || fail "the program's table was not located: $(cat "$T/err")"
[ "$(grep -c . "$T/located")" -ge 3 ] || fail "fewer objects located than loaded: $(cat "$T/located")"
! grep -q libpmalloc_shim "$T/located" || fail "the shim's own table was located"
[ -z "$(uniq -d "$T/read")" ] || fail "a table was read twice: $(uniq -d "$T/read")"
# The program's table is read before main: before the shim's first word on
# an allocation site.
first_read=$(grep -n 'reading the [0-9]* symbols of .*/ip_static$' "$T/err" | head -n 1 | cut -d: -f1)
first_site=$(grep -n 'allocation site ' "$T/err" | head -n 1 | cut -d: -f1)
[ -n "$first_read" ] && [ -n "$first_site" ] && [ "$first_read" -lt "$first_site" ] ||
	fail "the program's table was not read before its first site was decided: $(cat "$T/err")"
unread=$(comm -23 "$T/located" "$T/read")
[ -n "$unread" ] || fail "every located table was read, even of objects that never allocate: $(cat "$T/read")"
# An object none of whose names holds a rule's first characters is not
# walked at all (one search of its names): libc's names hold no
# "make_secret", the program's do.
grep -q 'no name in .*/libc[.-].* can match a rule: its [0-9]* symbols not walked$' "$T/err" ||
	fail "libc's table was walked for a name it does not hold: $(cat "$T/err")"
! grep -q 'no name in .*/ip_static can match' "$T/err" || fail "the program's table was skipped: $(cat "$T/err")"
pass "only the tables needed are read, once each (located: $(grep -c . "$T/located"), read: $(grep -c . "$T/read"))"

policy '"make_secret", "no_such_function_xyz"'
run
grep -q 'site rule "no_such_function_xyz" matches no function' "$T/err" || fail "the unmatched rule was not reported: $(cat "$T/err")"
cmp -s "$T/located" "$T/read" || fail "a rule naming nothing left tables unread: $(comm -23 "$T/located" "$T/read")"
pass "a rule that names nothing has every table read before main, and is reported"

# A rule for an object not loaded at start-up (a plugin dlopen'ed later)
# names nothing yet, and is said so; but it can name none of the loaded
# objects, so their tables are not read for it.
policy '"make_secret", "libnot_loaded_yet.so:plugin_alloc"'
run
grep -q 'site rule "libnot_loaded_yet.so:plugin_alloc" matches no function' "$T/err" ||
	fail "the rule for an object not loaded was not reported: $(cat "$T/err")"
[ -n "$(comm -23 "$T/located" "$T/read")" ] ||
	fail "a rule for an object not loaded had every table read: $(cat "$T/read")"
pass "a rule for an object not loaded yet has no table read for it"
