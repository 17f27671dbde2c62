# SPDX-License-Identifier: GPL-2.0-or-later
# lazy_symbols.sh - a policy costs a process only the symbol tables it
# needs, and opens only the files of objects that allocate.  Before main
# the shim checks the rules against the exported functions (.dynsym, in
# memory) of the objects they can name, opening no file; a rule that names
# no exported function (a static one: make_secret) has the tables it can
# name read then, the program's first, until it has a match.  Any other
# object's table is located (its files opened) and read at the first
# allocation made from its code, once; an object that never allocates is
# never opened (strace); a program that restricts itself (no_new_privs,
# seccomp) has them read first.  A rule that names nothing has every table
# read before main, and is still reported; one for an object not loaded
# yet, none.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/ip_static
# Preloaded beside the shim: a library the program never calls, so never
# allocates from (glibc's objects are no candidates for these rules: a
# site without an object never fits them, resolve_rules.c).
PLUGIN=$B/progs/libip_plugin.so
[ -e "$PLUGIN" ] || fail "$PLUGIN is missing: run make check"
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v strace >/dev/null || skip "strace not installed"
strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
export PMALLOC_SOCKET=$T/no-daemon.sock PMALLOC_CONF=$T/pmalloc.conf
policy() {
	cat >"$PMALLOC_CONF" <<EOF
version = 1;
policies = ( { name = "lazy"; match = { exe = [ "*/ip_static" ]; };
  pools = ( { name = "secrets"; sites = [ $1 ]; protect = [ "on-call:listen" ]; } ); } );
EOF
}
# The program under strace (its opens, and the shim's words on stderr as
# the writes they are, in order); $T/trace from the policy file's open on:
# what the loader opened before is not the shim's.
run_traced() {
	PMALLOC_DEBUG=1 strace -qq -f -E LD_PRELOAD="$SHIM $PLUGIN" -e trace=openat,write -s 300 -o "$T/strace" \
		"$PROG" >"$T/out" 2>"$T/err" || fail "ip_static failed: $(cat "$T/err")"
	sed -n "\\|openat(.*\"$PMALLOC_CONF\"|,\$p" "$T/strace" >"$T/trace"
	[ -s "$T/trace" ] || fail "no open of the policy file in the trace: $(cat "$T/strace")"
	sed -n 's/.*: \(.*\): its symbols to be read at its first allocation$/\1/p' "$T/err" | sort >"$T/candidates"
	sed -n -e 's/.*: reading the [0-9]* symbols of \(.*\)$/\1/p' \
		-e 's/.*: \(.*\) has only the [0-9]* exported symbols read for the rules$/\1/p' "$T/err" | sort >"$T/read"
}
run() {
	run_traced
	grep -q '^after listen: secret protected 1,' "$T/out" || fail "secret not protected: $(cat "$T/out" "$T/err")"
}
# The build-id path a debug file of object $1 would have.
debug_path() {
	local id; id=$(readelf -n "$1" 2>/dev/null | sed -n 's/^ *Build ID: *//p' | head -n 1)
	[ -n "$id" ] && printf '/usr/lib/debug/.build-id/%s/%s.debug\n' "${id:0:2}" "${id:2}"
}
# An object never read was never opened either: neither its file nor its
# debug file.
never_opened() {
	local o d
	while read -r o; do
		grep -q "openat(.*\"$o\"" "$T/trace" && fail "$o never allocated but was opened: $(grep openat "$T/trace")"
		d=$(debug_path "$o")
		[ -z "$d" ] || ! grep -q "openat(.*\"$d\"" "$T/trace" ||
			fail "$o never allocated but its debug file was opened: $(grep openat "$T/trace")"
	done
}
# The trace's lines after the policy file's open up to the shim's word that
# start-up is over.
before_main() { sed -n -e 1d -e '/rules checked: /q;p' "$T/trace"; }

policy '"make_secret"'
run
grep -q '/ip_static$' "$T/candidates" || fail "the program is not a candidate: $(cat "$T/err")"
grep -q '/libip_plugin.so$' "$T/candidates" || fail "the preloaded library is not a candidate: $(cat "$T/candidates")"
! grep -Eq '/(libc[.-]|ld-linux)' "$T/candidates" || fail "glibc's objects are candidates for a site without an object: $(cat "$T/candidates")"
! grep -q libpmalloc_shim "$T/candidates" || fail "the shim's own table is a candidate"
[ -z "$(uniq -d "$T/read")" ] || fail "a table was read twice: $(uniq -d "$T/read")"
# make_secret is static: the program's table is read before main, before
# the shim's first word on an allocation site; no other file is opened then.
first_read=$(grep -n 'reading the [0-9]* symbols of .*/ip_static$' "$T/err" | head -n 1 | cut -d: -f1)
first_site=$(grep -n 'allocation site ' "$T/err" | head -n 1 | cut -d: -f1)
[ -n "$first_read" ] && [ -n "$first_site" ] && [ "$first_read" -lt "$first_site" ] ||
	fail "the program's table was not read before its first site was decided: $(cat "$T/err")"
before_main | grep -q "openat(.*\"$PROG\"" || fail "the program's file was not opened before main: $(cat "$T/trace")"
[ "$(before_main | grep -c 'openat(.*= [0-9]')" = 1 ] ||
	fail "more than the program's file opened before main: $(before_main | grep openat)"
unread=$(comm -23 "$T/candidates" "$T/read")
[ -n "$unread" ] || fail "every table was read, even of objects that never allocate: $(cat "$T/read")"
never_opened <<<"$unread"
# libc allocates, but no site without an object fits it: neither its file
# nor its debug file is opened.
never_opened < <(ldd "$PROG" | sed -n 's/.*=> \([^ ]*libc\.so\.6\) .*/\1/p')
grep -q 'site make_secret \[0x[0-9a-f]*, 0x[0-9a-f]*) in .*/ip_static -> secrets$' "$T/err" ||
	fail "the program's table was skipped: $(cat "$T/err")"
pass "only the tables needed are read, once each; objects that never allocate are never opened (considered: $(grep -c . "$T/candidates"), read: $(grep -c . "$T/read"))"

# A rule naming an exported function (libc's, its object named without a
# glob) is checked against .dynsym: no file is opened before main; libc's
# table is read when libc allocates.
policy '"libc.so.6:getdelim"'
run_traced
grep -q 'rules checked: 1 of 1 name a function' "$T/err" || fail "the exported function was not found: $(cat "$T/err")"
! before_main | grep -q 'openat(' || fail "a file was opened before main: $(before_main | grep openat)"
! grep -q 'reading the [0-9]* symbols of .*/ip_static$' "$T/err" || fail "the program's table was read for a libc rule"
grep -q 'reading the [0-9]* symbols of .*/libc[.-]' "$T/err" || fail "libc's table was not read when it allocated: $(cat "$T/err")"
never_opened < <(comm -23 "$T/candidates" "$T/read")
pass "a rule naming an exported function opens no file before main"

# Opened at the first allocation, a file may no longer be the object loaded
# (an upgrade renamed another over it): one whose build-id differs is not
# read, the object keeps its exported functions.  A library preloaded from
# $T, replaced before it first allocates: by a copy of itself, its .symtab
# is read; by another build (libip_twin: the same code, another build-id),
# only its .dynsym in memory is.
LATE=$B/progs/late_open
[ -x "$LATE" ] && [ -e "$B/progs/libip_plugin.so" ] || fail "late_open or libip_plugin.so is missing: run make check"
cat >"$PMALLOC_CONF" <<EOF
version = 1;
policies = ( { name = "late"; match = { exe = [ "*/late_open" ]; };
  pools = ( { name = "plug"; sites = [ "libswap.so:plugin_*" ]; } ); } );
EOF
late() {
	cp "$B/progs/libip_plugin.so" "$T/libswap.so"
	cp "$1" "$T/new.so"
	PMALLOC_DEBUG=1 LD_PRELOAD="$SHIM $T/libswap.so" "$LATE" "$T/new.so" "$T/libswap.so" >"$T/out" 2>"$T/err" ||
		fail "late_open failed: $(cat "$T/out" "$T/err")"
	grep -qx 'plugin_init ok' "$T/out" || fail "late_open: $(cat "$T/out" "$T/err")"
	grep -q 'allocation site plugin_init+0x[0-9a-f]* .* -> pool "plug"' "$T/err" ||
		fail "plugin_init was not routed to its pool: $(cat "$T/err")"
}
late "$B/progs/libip_plugin.so"
grep -q "reading the [0-9]* symbols of $T/libswap.so\$" "$T/err" || fail "the same file's .symtab was not read: $(cat "$T/err")"
late "$B/progs/libip_twin.so"
grep -q "$T/libswap.so has only the [0-9]* exported symbols read for the rules\$" "$T/err" &&
	! grep -q "reading the [0-9]* symbols of $T/libswap.so" "$T/err" ||
	fail "a file with another build-id was read as the object's: $(cat "$T/err")"
pass "a file replaced before its object first allocates is read only when its build-id is the object's"

# A program that restricts itself (no_new_privs, then a seccomp filter
# that kills it at any open) before an object first allocates: the shim
# reads the tables still unread when the program asks for no_new_privs
# (prctl), not at that allocation, which the filter would kill.
SANDBOX=$B/progs/sandbox_late
[ -x "$SANDBOX" ] || fail "$SANDBOX is missing: run make check"
cat >"$PMALLOC_CONF" <<EOF
version = 1;
policies = ( { name = "late"; match = { exe = [ "*/sandbox_late" ]; };
  pools = ( { name = "plug"; sites = [ "libip_plugin.so:plugin_*" ]; } ); } );
EOF
PMALLOC_DEBUG=1 LD_PRELOAD="$SHIM $B/progs/libip_plugin.so" "$SANDBOX" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 77 ] && skip "no seccomp filter for this architecture in sandbox_late"
[ $rc = 0 ] || fail "sandbox_late exited $rc (159: killed at an open after its filter): $(cat "$T/out" "$T/err")"
grep -qx 'plugin_init ok' "$T/out" || fail "sandbox_late: $(cat "$T/out" "$T/err")"
grep -q 'allocation site plugin_init+0x[0-9a-f]* .* -> pool "plug"' "$T/err" ||
	fail "plugin_init was not routed to its pool: $(cat "$T/err")"
read_at=$(grep -n 'reading the [0-9]* symbols of .*/libip_plugin.so$' "$T/err" | head -n 1 | cut -d: -f1)
sandboxed_at=$(grep -nx 'sandboxed' "$T/err" | cut -d: -f1)
[ -n "$read_at" ] && [ -n "$sandboxed_at" ] && [ "$read_at" -lt "$sandboxed_at" ] ||
	fail "the plugin's table was not read before the filter: $(cat "$T/err")"
pass "a program that restricts itself has the tables still unread read first, not at its next allocation"

policy '"make_secret", "no_such_function_xyz"'
run
grep -q 'site rule "no_such_function_xyz" matches no function' "$T/err" || fail "the unmatched rule was not reported: $(cat "$T/err")"
cmp -s "$T/candidates" "$T/read" || fail "a rule naming nothing left tables unread: $(comm -23 "$T/candidates" "$T/read")"
pass "a rule that names nothing has every table read before main, and is reported"

# A rule for an object not loaded at start-up (a plugin dlopen'ed later)
# names nothing yet: it waits for its object, and is said so (not as a rule
# that matches nothing); it can name none of the loaded objects, so their
# tables are not read for it.
policy '"make_secret", "libnot_loaded_yet.so:plugin_alloc"'
run
grep -q 'site rule "libnot_loaded_yet.so:plugin_alloc" waits for an object its glob fits' "$T/err" ||
	fail "the rule for an object not loaded was not reported: $(cat "$T/err")"
grep -q 'site rule "libnot_loaded_yet.so:plugin_alloc" matches no function' "$T/err" &&
	fail "the rule for an object not loaded was said to match nothing: $(cat "$T/err")"
[ -n "$(comm -23 "$T/candidates" "$T/read")" ] ||
	fail "a rule for an object not loaded had every table read: $(cat "$T/read")"
pass "a rule for an object not loaded yet has no table read for it"
