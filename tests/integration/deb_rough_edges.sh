#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# deb_rough_edges.sh - the packaging targets as a newcomer meets them,
# without building a package or touching the machine's:
#   - make deb with a build tool missing changes nothing on the host unless
#     asked (INSTALL_DEPS=1): it prints the apt-get command and the opt-in,
#     and never runs apt-get (a recording stand-in first on PATH);
#   - make deb-install-check's script, where the packages are installed
#     already (a stand-in dpkg-query says so), says what to run first.
. "$(dirname "$0")/lib.sh"

command -v make >/dev/null || skip "make not installed"
mkdir -p "$T/bin" "$T/debs"
printf '#!/bin/sh\necho "apt-get $*" >>"%s"\nexit 0\n' "$T/apt.log" >"$T/bin/apt-get"
printf '#!/bin/sh\necho "install ok installed"\n' >"$T/bin/dpkg-query"
chmod +x "$T/bin/apt-get" "$T/bin/dpkg-query"

PATH=$T/bin:$PATH make --no-print-directory -C "$SRC" deb B="$T/b" DEB_TOOL_FILES=/nonexistent/dpkg-buildpackage \
	>"$T/out" 2>&1 && fail "make deb went on with a tool missing: $(cat "$T/out")"
[ ! -e "$T/apt.log" ] || fail "make deb ran apt-get without INSTALL_DEPS=1: $(cat "$T/apt.log")"
grep -q 'run: sudo apt-get install dpkg-dev' "$T/out" && grep -q 'make deb INSTALL_DEPS=1' "$T/out" ||
	fail "make deb did not say what to run: $(cat "$T/out")"
pass "make deb: a missing tool is said with its command and the opt-in; apt-get not run"

if [ "$(id -u)" = 0 ] && [ -x "$B/progs/pmalloc-demo" ]; then
	: >"$T/debs/libpmalloc0_0.1-1_amd64.deb"
	: >"$T/debs/pmalloc_0.1-1_amd64.deb"
	PATH=$T/bin:$PATH bash "$SRC/tests/deb/install.sh" "$T/debs" >"$T/out" 2>&1 &&
		fail "install.sh went on with the packages installed"
	grep -q "run 'apt-get purge libpmalloc0 pmalloc libpmalloc-dev' first" "$T/out" ||
		fail "install.sh did not say what to do: $(cat "$T/out")"
	pass "deb-install-check with the packages installed says what to run first"
fi

# The library package's removal takes the drop-ins pmallocctl wrote with it
# (services would otherwise preload a file that is gone), never another's.
ctl=$B/pmallocctl
if [ -x "$ctl" ]; then
	r=$T/root
	mkdir -p "$r/etc/systemd/system/other.service.d"
	printf '[Service]\nExecStart=/bin/true\n' >"$r/etc/systemd/system/demo.service"
	printf '[Service]\nEnvironment=LD_PRELOAD=/x.so\n' >"$r/etc/systemd/system/other.service.d/pmalloc.conf"
	"$ctl" preload enable demo --root "$r" --library /usr/lib/libpmalloc_shim.so.0 >"$T/out" 2>&1 ||
		fail "preload enable: $(cat "$T/out")"
	[ -f "$r/etc/systemd/system/demo.service.d/pmalloc.conf" ] || fail "no drop-in written"
	DPKG_ROOT=$r sh "$SRC/debian/libpmalloc0.postrm" remove >"$T/out" 2>&1 || fail "postrm: $(cat "$T/out")"
	[ ! -e "$r/etc/systemd/system/demo.service.d/pmalloc.conf" ] || fail "postrm left pmallocctl's drop-in"
	[ -f "$r/etc/systemd/system/other.service.d/pmalloc.conf" ] || fail "postrm removed a drop-in it did not write"
	grep -q 'removed the preload drop-in of demo.service' "$T/out" || fail "postrm said: $(cat "$T/out")"
	pass "removing libpmalloc0 removes (and says) pmallocctl's drop-ins, and no other"
fi
