# SPDX-License-Identifier: GPL-2.0-or-later
# interpose_stripped.sh - sites in code without a symbol table.
#
# ip_static's secret is allocated by make_secret(), a static function that
# only .symtab names.  Stripped, the same program can still be hardened:
#   - by offset: "ip_static:+0xOFF", OFF taken from a fault report of the
#     unstripped build (function+0xN) and the function's address (nm); the
#     last of 100 offset sites in the object too (a proposal pins hundreds);
#   - pinned to its build-id ("ip_static@ID:+0xOFF"): another build is never
#     routed by the rule, and PMALLOC_DEBUG says why;
#   - by name, from separate debug information: .gnu_debuglink beside the
#     file or in its .debug/ folder, and /usr/lib/debug/.build-id/ (as root).
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/ip_static
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
for tool in nm objcopy strip readelf; do
	command -v $tool >/dev/null || skip "$tool (binutils) not installed"
done
export PMALLOC_SOCKET=$T/no-daemon.sock PMALLOC_CONF=$T/pmalloc.conf
policy() {
	cat >"$PMALLOC_CONF" <<EOF
version = 1;
policies = (
  { name = "stripped"; match = { exe = [ "*/ip_static" ]; };
    pools = ( { name = "secrets"; sites = [ "$1" ];
                protect = [ "on-call:listen" ]; max_bytes = 16777216; } ); }
);
EOF
}
# protected DIR [ENV...]: 1 or 0, the secret's state after listen.
protected() {
	local dir=$1; shift
	env "$@" LD_PRELOAD="$SHIM" "$dir/ip_static" >"$T/out" 2>"$T/err" || fail "$dir/ip_static failed: $(cat "$T/err")"
	sed -n 's/^after listen: secret protected \([01]\),.*/\1/p' "$T/out"
}

# The offset of make_secret's allocation call, as a report names it.
mkdir -p "$T/full" && cp "$PROG" "$T/full/"
policy make_secret
rc=0; LD_PRELOAD=$SHIM "$T/full/ip_static" write >/dev/null 2>"$T/report" || rc=$?
[ $rc = 139 ] || fail "unstripped write: exit $rc, expected death by SIGSEGV: $(cat "$T/report")"
n=$(sed -n 's/.*allocated at make_secret+\(0x[0-9a-f]*\);.*/\1/p' "$T/report")
[ -n "$n" ] || fail "no site in the report: $(cat "$T/report")"
fn=$(nm "$PROG" | awk '$3 == "make_secret" { print $1 }')
[ -n "$fn" ] || fail "nm finds no make_secret"
off=$(printf '0x%x' $((0x$fn + n)))
id=$(readelf -n "$PROG" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
[ -n "$id" ] || fail "ip_static has no build-id"

mkdir -p "$T/stripped"
strip --strip-all -o "$T/stripped/ip_static" "$PROG"
nm "$T/stripped/ip_static" 2>/dev/null | grep -q make_secret && fail "strip left make_secret"

policy make_secret
[ "$(protected "$T/stripped")" = 0 ] || fail "stripped: a name that no table holds was routed"
policy "ip_static:+$off"
[ "$(protected "$T/stripped")" = 1 ] || fail "stripped: offset site ip_static:+$off not protected"
policy "ip_static@$id:+$off"
[ "$(protected "$T/stripped")" = 1 ] || fail "stripped: pinned offset site not protected"
pass "stripped program: the offset site +$off (from a report) protects the secret, pinned or not"

# A proposal pins hundreds of calls in one object: each is routed, the
# last of 100 too (99 offsets before it where no call returns).
decoys=
for i in $(seq 99); do decoys+="ip_static:+$(printf '0x%x' $((0x11 + 2 * i)))\", \""; done
policy "${decoys}ip_static:+$off"
[ "$(protected "$T/stripped")" = 1 ] || fail "stripped: the 100th offset site in one object not protected"
pass "100 offset sites in one object: the last one protects the secret"

# Another build (a different build-id) is never routed by a pinned rule.
other=$(printf '%s' "$id" | tr '0-9a-f' '1-9a-f0')
policy "ip_static@$other:+$off"
[ "$(protected "$T/stripped")" = 0 ] || fail "a rule pinned to another build-id was routed"
protected "$T/stripped" PMALLOC_DEBUG=1 >/dev/null
grep -q "ip_static@$other:+$off\": .*ip_static has build-id $id: not routed" "$T/err" ||
	fail "the mismatch is not said: $(cat "$T/err")"
pass "a rule pinned to another build-id routes nothing, and says why"

# Separate debug information, through .gnu_debuglink beside the file.
mkdir -p "$T/linked"
objcopy --only-keep-debug "$PROG" "$T/linked/ip_static.debug"
strip --strip-all -o "$T/linked/ip_static" "$PROG"
objcopy --add-gnu-debuglink="$T/linked/ip_static.debug" "$T/linked/ip_static"
policy make_secret
[ "$(protected "$T/linked")" = 1 ] || fail "make_secret not found through .gnu_debuglink"
# A debug file of another build (its build-id changed) is not believed.
python3 - "$T/linked/ip_static.debug" "$id" <<'EOF'
import sys
path, bid = sys.argv[1], bytes.fromhex(sys.argv[2])
b = open(path, 'rb').read()
assert b.count(bid) == 1
open(path, 'wb').write(b.replace(bid, bytes(x ^ 0xff for x in bid)))
EOF
[ "$(protected "$T/linked")" = 0 ] || fail "a debug file of another build-id was used"
pass "static functions of a stripped program, from its .gnu_debuglink file (checked)"

# The same link's file in the program's .debug/ folder (the shim looks at
# each such folder once per process: this one exists).
mkdir -p "$T/dotdebug/.debug"
objcopy --only-keep-debug "$PROG" "$T/dotdebug/.debug/ip_static.debug"
strip --strip-all -o "$T/dotdebug/ip_static" "$PROG"
objcopy --add-gnu-debuglink="$T/dotdebug/.debug/ip_static.debug" "$T/dotdebug/ip_static"
[ "$(protected "$T/dotdebug")" = 1 ] || fail "make_secret not found through .debug/ip_static.debug"
pass "static functions of a stripped program, from its .gnu_debuglink file in .debug/"

# By build-id under /usr/lib/debug (root only: it is the system's folder).
if [ "$(id -u)" = 0 ]; then
	dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	if [ -e "$dbg" ]; then
		pass "skipped the build-id folder check: $dbg exists already"
	else
		rm_dbg() { rm -f "$dbg"; rmdir "$(dirname "$dbg")" 2>/dev/null; true; }
		at_exit rm_dbg
		mkdir -p "$(dirname "$dbg")"
		objcopy --only-keep-debug "$PROG" "$dbg"
		[ "$(protected "$T/stripped")" = 1 ] || fail "make_secret not found through $dbg"
		pass "static functions of a stripped program, from /usr/lib/debug/.build-id/"
	fi
fi
