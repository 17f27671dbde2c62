#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# install.sh - make install / uninstall as a distribution package uses them:
# the multiarch library directory, versioned SONAMEs and their links, the
# unit and catalog directories systemd.pc names, a program built and run
# against the installed pool library with pkg-config (it exports no
# interposer), a failing step failing the install, a distribution's
# -D_FORTIFY_SOURCE=3 and WERROR=1 accepted, and uninstall leaving nothing.
. "$(dirname "$0")/lib.sh"

command -v pkg-config >/dev/null || skip "pkg-config not installed"
root=$T/root
make -s -j"$(nproc)" -C "$SRC" B="$B_USR" install DESTDIR="$root" PREFIX=/usr >"$T/install.log" 2>&1 ||
	fail "make install failed: $(tail -n 20 "$T/install.log")"

ma=$(${CC:-cc} -print-multiarch 2>/dev/null)
libdir=/usr/lib${ma:+/$ma}
for l in libpmalloc_shim libpmalloc; do
	[ -f "$root$libdir/$l.so.0.1" ] && [ ! -L "$root$libdir/$l.so.0.1" ] ||
		fail "no $l.so.0.1 in $root$libdir: $(ls -l "$root$libdir" 2>&1)"
	[ "$(readlink "$root$libdir/$l.so.0")" = "$l.so.0.1" ] || fail "$l.so.0 does not link to $l.so.0.1"
	[ "$(readlink "$root$libdir/$l.so")" = "$l.so.0" ] || fail "$l.so does not link to $l.so.0"
	soname=$(readelf -d "$root$libdir/$l.so.0.1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ "$soname" = "$l.so.0" ] || fail "$l: SONAME '$soname', expected $l.so.0"
done
pass "libraries in $libdir with SONAME .so.0 and the links .so.0 and .so"

exports=$(nm -D --defined-only "$root$libdir/libpmalloc.so.0.1" | awk '{print $3}')
for s in malloc free fork execve listen sigaction prctl; do
	grep -qx "$s" <<<"$exports" && fail "libpmalloc.so exports $s (interposer)"
done
grep -qx pmalloc_create_pool <<<"$exports" || fail "libpmalloc.so lacks pmalloc_create_pool"
pass "libpmalloc.so exports the pool API and no interposer"

unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null) || unitdir=/usr/lib/systemd/system
catdir=$(pkg-config --variable=catalogdir systemd 2>/dev/null) || catdir=/usr/lib/systemd/catalog
for f in "$unitdir/pmallocd.service" "$unitdir/pmallocd.socket" "$catdir/pmalloc.catalog" \
	/usr/sbin/pmallocd /usr/bin/pmallocctl /usr/include/pmalloc.h /etc/pmalloc.conf \
	/usr/share/man/man8/pmallocctl.8 /usr/share/man/man5/pmalloc.conf.5 \
	/usr/share/man/man3/pmalloc.3 /usr/share/man/man7/pmalloc.7 \
	/usr/share/bash-completion/completions/pmallocctl; do
	[ -s "$root$f" ] || fail "make install did not install $f"
done
grep -qx 'ExecStart=/usr/sbin/pmallocd' "$root$unitdir/pmallocd.service" ||
	fail "pmallocd.service: $(grep ExecStart "$root$unitdir/pmallocd.service")"
pass "units in $unitdir, catalog in $catdir, programs, man pages, completion"

# A program built against the installed pool library, found by pkg-config.
export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$root$libdir/pkgconfig
flags=$(pkg-config --cflags --libs pmalloc) || fail "pkg-config --cflags --libs pmalloc failed"
cat >"$T/prog.c" <<'C'
#include <pmalloc.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	struct pmalloc_pool *p = pmalloc_create_pool();
	char *s = pstrdup(p, "installed");
	pmalloc_protect_pool(p);
	printf("%s %d\n", s, pmalloc_is_protected(s));
	pmalloc_destroy_pool(p);
	return 0;
}
C
${CC:-cc} -o "$T/prog" "$T/prog.c" $flags 2>"$T/cc.log" || fail "cannot build with '$flags': $(cat "$T/cc.log")"
out=$(LD_LIBRARY_PATH=$root$libdir "$T/prog") || fail "prog failed: $out"
[ "$out" = "installed 1" ] || fail "prog printed '$out'"
readelf -d "$T/prog" | grep -q 'NEEDED.*\[libpmalloc.so.0\]' || fail "prog does not need libpmalloc.so.0"
shim=$(pkg-config --variable=shim pmalloc)
case $shim in "$libdir/libpmalloc_shim.so.0" | "$root$libdir/libpmalloc_shim.so.0") ;;
*) fail "pkg-config --variable=shim pmalloc: $shim" ;; esac
pass "a program built with pkg-config against the install runs; the pc names the shim $shim"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

# What pmallocctl preload writes names the installed shim.
mkdir -p "$T/sys"
"$root/usr/bin/pmallocctl" preload enable demo.service --root "$T/sys" >/dev/null 2>&1 ||
	fail "pmallocctl preload enable failed"
grep -qx "Environment=LD_PRELOAD=$libdir/libpmalloc_shim.so.0" "$T/sys/etc/systemd/system/demo.service.d/pmalloc.conf" ||
	fail "drop-in: $(cat "$T/sys/etc/systemd/system/demo.service.d/pmalloc.conf")"
pass "the installed pmallocctl preloads the installed shim"

# A step that fails fails the install (here: the unit directory is a file).
bad=$T/bad; mkdir -p "$bad$(dirname "$unitdir")"; : >"$bad$unitdir"
make -s -C "$SRC" B="$B_USR" install DESTDIR="$bad" PREFIX=/usr >"$T/bad.log" 2>&1 &&
	fail "make install succeeded with its unit directory a file"
pass "a failing install step fails make install"

# A distribution's flags: -D_FORTIFY_SOURCE=3 with warnings as errors.  (A
# make of its own: not the variables of the make that runs the tests.)
unset MAKEFLAGS MFLAGS MAKELEVEL WERROR
make -s -C "$SRC" B="$T/b" CPPFLAGS=-D_FORTIFY_SOURCE=3 WERROR=1 "$T/b/pic/shim/sys/os.o" >"$T/f.log" 2>&1 ||
	fail "CPPFLAGS=-D_FORTIFY_SOURCE=3 WERROR=1 does not build: $(cat "$T/f.log")"
cmd=$(make -s -n -B -C "$SRC" B="$T/b" CPPFLAGS=-D_FORTIFY_SOURCE=3 "$T/b/pic/shim/sys/os.o" | grep -- ' -c ')
grep -q -- '-D_FORTIFY_SOURCE=2' <<<"$cmd" && fail "-D_FORTIFY_SOURCE=2 still given: $cmd"
grep -q -- '-Werror' <<<"$cmd" && fail "-Werror given without WERROR=1: $cmd"
pass "CPPFLAGS=-D_FORTIFY_SOURCE=3 replaces the default; -Werror only with WERROR=1"

# As "systemctl enable pmallocd.socket" leaves it: uninstall removes the link too.
unit=$(find "$root" -name pmallocd.socket -type f | head -n 1)
[ -n "$unit" ] || fail "no pmallocd.socket installed"
mkdir -p "$root/etc/systemd/system/sockets.target.wants"
ln -s "${unit#"$root"}" "$root/etc/systemd/system/sockets.target.wants/pmallocd.socket"
make -s -C "$SRC" B="$B_USR" uninstall DESTDIR="$root" PREFIX=/usr >"$T/un.log" 2>&1 ||
	fail "make uninstall failed: $(cat "$T/un.log")"
left=$(find "$root" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
grep -q 'removed the enable link .*sockets.target.wants/pmallocd.socket' "$T/un.log" ||
	fail "make uninstall did not say it removed the enable link: $(cat "$T/un.log")"
pass "make uninstall removes every file it installed, and the socket's enable link"
exit 0
