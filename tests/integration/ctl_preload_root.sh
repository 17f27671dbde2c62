#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ctl_preload_root.sh - pmallocctl preload enable|disable|status --root DIR
# never writes or removes anything outside DIR, whatever links the owner of
# the tree put there: a link out at every component of the drop-in's path
# (etc, etc/systemd, etc/systemd/system, UNIT.d, pmalloc.conf itself),
# absolute and relative, and links at the unit file, an EnvironmentFile= and
# /etc/ld.so.preload.  Outside DIR stands a tree with its own
# etc/systemd/system/demo.service.d/pmalloc.conf, a victim file of that
# name, and a directory that must stay empty; after every command the whole
# outside tree is byte for byte what it was.  Links resolve as if DIR were
# "/": what lands inside DIR is where the image's own links lead.
. "$(dirname "$0")/lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
out=$T/outside
mkdir -p "$out/etc/systemd/system/demo.service.d" "$out/empty"
echo 'victim: root must not replace or remove me' >"$out/pmalloc.conf"
echo 'victim unit drop-in' >"$out/etc/systemd/system/demo.service.d/pmalloc.conf"
printf '[Service]\nExecStart=/bin/true\n' >"$out/etc/systemd/system/demo.service"
echo 'LD_PRELOAD=/outside.so' >"$out/envfile"
echo '/outside/libpmalloc_shim.so.0' >"$out/ld.so.preload"
snapshot() { (cd "$out" && find . -printf '%p %y %m %l\n' | sort && find . -type f -exec sha256sum {} + | sort); }
snapshot >"$T/before"
lib=/usr/lib/libpmalloc_shim.so.0

# Each case builds a fresh root with one kind of link; "$out" is absolute
# (escapes unless resolved in the root), "../.." style relative links climb.
cases=(
	"etc -> $out/etc"
	"etc -> ../outside/etc"
	"etc/systemd -> $out/etc/systemd"
	"etc/systemd -> ../../outside/etc/systemd"
	"etc/systemd/system -> $out/etc/systemd/system"
	"etc/systemd/system -> ../../../outside/etc/systemd/system"
	"etc/systemd/system/demo.service.d -> $out/etc/systemd/system/demo.service.d"
	"etc/systemd/system/demo.service.d -> $out/empty"
	"etc/systemd/system/demo.service.d -> ../../../../outside/empty"
	"etc/systemd/system/demo.service.d/pmalloc.conf -> $out/pmalloc.conf"
	"etc/systemd/system/demo.service.d/pmalloc.conf -> ../../../../../outside/pmalloc.conf"
	"etc/systemd/system/demo.service -> $out/etc/systemd/system/demo.service"
	"etc/ld.so.preload -> $out/ld.so.preload"
	"etc/envfile -> $out/envfile"
)
n=0
for c in "${cases[@]}"; do
	link=${c%% -> *} target=${c#* -> }
	root=$T/root$n; n=$((n + 1))
	mkdir -p "$root/$(dirname "$link")"
	# The outside tree sits beside the roots: relative links climb to it.
	ln -s "$target" "$root/$link"
	[ -e "$root/etc/systemd/system/demo.service" ] || [ -L "$root/etc/systemd/system/demo.service" ] ||
		{ mkdir -p "$root/etc/systemd/system" 2>/dev/null; printf '[Service]\nExecStart=/bin/true\nEnvironmentFile=-/etc/envfile\n' \
			>"$root/etc/systemd/system/demo.service" 2>/dev/null; }
	for action in enable status disable; do
		"$ctl" preload $action demo --root "$root" --library "$lib" >"$T/log" 2>&1; rc=$?
		# Status may say "not preloaded" (1); nothing may crash or misuse (2+).
		[ $rc -le 1 ] || fail "$c: preload $action: exit $rc: $(cat "$T/log")"
		snapshot >"$T/after"
		diff "$T/before" "$T/after" >"$T/diff" || fail "$c: preload $action changed the outside tree: $(cat "$T/diff")"
	done
	pass "link $c: enable, status, disable left the outside as it was"
done
# A link out of the root that leads nowhere inside it is an error said,
# not a write elsewhere; where the image has that path, the link leads there.
root=$T/root0
"$ctl" preload enable demo --root "$root" --library "$lib" >"$T/log" 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^pmallocctl: cannot write $root/etc/systemd/system/demo.service.d/pmalloc.conf: No such file or directory" "$T/log" ||
	fail "enable under a dangling etc link: exit $rc: $(cat "$T/log")"
mkdir -p "$root$out/etc"
"$ctl" preload enable demo --root "$root" --library "$lib" >"$T/log" 2>&1 || fail "enable under an absolute etc link: $(cat "$T/log")"
[ -f "$root$out/etc/systemd/system/demo.service.d/pmalloc.conf" ] ||
	fail "the drop-in is not where the link leads inside the root: $(find "$root" | head)"
snapshot >"$T/after"
diff "$T/before" "$T/after" >/dev/null || fail "the outside tree changed"
pass "an absolute link is followed inside the root, as the image's own system would; dangling there: refused"

# DIR itself: a link (a user's "DIR -> /" would make root write the host's
# drop-ins), a path through a link, or a tree another user owns: refused,
# with the reason, and nothing written anywhere.
ln -s "$out" "$T/rootlink"
mkdir -p "$T/real/etc" && ln -s "$T/real" "$T/via"
for r in "$T/rootlink" "$T/via/etc"; do
	"$ctl" preload enable demo --root "$r" --library "$lib" >"$T/log" 2>&1 && fail "--root $r (a link) accepted"
	grep -q 'symbolic link' "$T/log" || fail "--root $r: $(cat "$T/log")"
done
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$T/theirs/etc/systemd/system"
	chown -R 65534:65534 "$T/theirs"
	"$ctl" preload enable demo --root "$T/theirs" --library "$lib" >"$T/log" 2>&1 &&
		fail "--root owned by another user accepted"
	grep -q 'owned by another user' "$T/log" || fail "--root theirs: $(cat "$T/log")"
	[ -z "$(find "$T/theirs" -name pmalloc.conf)" ] || fail "wrote into another user's tree"
fi
snapshot >"$T/after"
diff "$T/before" "$T/after" >/dev/null || fail "the outside tree changed"
pass "--root that is a link, passes through one, or is another user's: refused with the reason"
exit 0
