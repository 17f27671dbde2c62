# SPDX-License-Identifier: GPL-2.0-or-later
# interpose_hostile_elf.sh - the shim reads the symbol tables of the files a
# process was started from; those files may be anyone's and may lie.  A
# program whose section headers or symbol table are corrupt still loads
# (ld.so reads program headers only), and must run under a policy exactly as
# it does without one: no crash, no hang, its sites simply unresolved.  The
# intact copy of the same program is the control: its site is protected.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/ip_static
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v python3 >/dev/null || skip "python3 not installed"
export PMALLOC_SOCKET=$T/no-daemon.sock
export PMALLOC_CONF=$T/pmalloc.conf
cat >"$PMALLOC_CONF" <<'EOF'
version = 1;
policies = (
  { name = "elf"; match = { exe = [ "*/ip_static" ]; };
    pools = ( { name = "secrets"; sites = [ "make_secret" ];
                protect = [ "on-call:listen" ]; max_bytes = 16777216; } ); }
);
EOF

# mangle KIND DIR: a copy of ip_static in DIR, corrupted as KIND says.
mangle() {
	mkdir -p "$2" && cp "$PROG" "$2/ip_static" && python3 - "$1" "$2/ip_static" <<'EOF'
import struct, sys
kind, path = sys.argv[1], sys.argv[2]
b = bytearray(open(path, 'rb').read())
shoff, = struct.unpack_from('<Q', b, 0x28)
shnum, shstrndx = struct.unpack_from('<HH', b, 0x3c)
def sh(i): return shoff + i * 64
secs = [struct.unpack_from('<IIQQQQIIQQ', b, sh(i)) for i in range(shnum)]
symtab = next(i for i, s in enumerate(secs) if s[1] == 2)      # SHT_SYMTAB
strtab = secs[symtab][6]                                        # sh_link
if kind == 'shoff-past-end':
    struct.pack_into('<Q', b, 0x28, len(b) + 4096)
elif kind == 'shnum-huge':
    struct.pack_into('<H', b, 0x3c, 0xffff)
elif kind == 'symtab-offset':
    struct.pack_into('<Q', b, sh(symtab) + 24, (1 << 63) - 8)
elif kind == 'symtab-size':
    struct.pack_into('<Q', b, sh(symtab) + 32, (1 << 64) - 24)
elif kind == 'link-out-of-range':
    struct.pack_into('<I', b, sh(symtab) + 40, 0xfffffff0)
elif kind == 'strtab-unterminated':
    off, size = secs[strtab][4], secs[strtab][5]
    b[off + size - 1] = ord('x')
elif kind == 'names-out-of-range':
    off, size = secs[symtab][4], secs[symtab][5]
    for o in range(off, off + size, 24):
        struct.pack_into('<I', b, o, 0x7fffffff)
elif kind == 'entsize-zero':
    struct.pack_into('<Q', b, sh(symtab) + 56, 0)
elif kind != 'intact':
    sys.exit('unknown kind ' + kind)
open(path, 'wb').write(b)
EOF
}

mangle intact "$T/intact" || fail "cannot copy $PROG"
LD_PRELOAD=$SHIM "$T/intact/ip_static" >"$T/out" 2>"$T/err" || fail "intact copy failed: $(cat "$T/err")"
grep -q 'after listen: secret protected 1' "$T/out" || fail "control: site not protected: $(cat "$T/out")"

for kind in shoff-past-end shnum-huge symtab-offset symtab-size link-out-of-range \
	strtab-unterminated names-out-of-range entsize-zero; do
	mangle "$kind" "$T/$kind" || fail "$kind: cannot make the file"
	"$T/$kind/ip_static" >"$T/plain" 2>&1 || fail "$kind: does not even run without the shim"
	rc=0
	timeout 20 env LD_PRELOAD="$SHIM" "$T/$kind/ip_static" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 0 ] || fail "$kind: exit $rc under the shim: $(cat "$T/err")"
	[ ! -s "$T/err" ] || fail "$kind: the shim spoke without PMALLOC_DEBUG: $(cat "$T/err")"
	grep -q 'after listen: secret protected 0' "$T/out" || fail "$kind: a site was read from a corrupt table: $(cat "$T/out")"
	grep -q '^secret is secret-0123456789$' "$T/out" || fail "$kind: output differs: $(cat "$T/out")"
done
pass "8 kinds of corrupt symbol tables: the program runs as without the shim, its site unresolved"
