#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ctl_preload.sh - pmallocctl preload enable|disable|status UNIT --root DIR:
# the drop-in's exact content, naming the runtime library by its SONAME
# path by default, systemd-analyze verify loading it (its Environment=
# reaches the unit), status before and after with the effective
# environment, composition with an LD_PRELOAD the unit already sets (the
# shim first), refusal where the drop-in could not win (a later drop-in,
# EnvironmentFile=, UnsetEnvironment=), disable leaving nothing, and unit
# names that could climb out of the drop-in directory refused.
. "$(dirname "$0")/lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
root=$T/root
units=$root/etc/systemd/system
mkdir -p "$units" "$root/bin"
cp /bin/true "$root/bin/true"
# A service of the image; no default dependencies, so verify needs no targets.
printf '[Unit]\nDefaultDependencies=no\n[Service]\nExecStart=/bin/true\n' >"$units/demo.service"
lib=/opt/pmalloc/libpmalloc_shim.so

"$ctl" preload status demo --root "$root" >"$T/out" 2>&1; rc=$?
[ $rc = 1 ] && [ "$(head -n 1 "$T/out")" = "demo.service: no drop-in" ] &&
	[ "$(tail -n 1 "$T/out")" = "demo.service: not preloaded" ] || fail "status before: exit $rc: $(cat "$T/out")"

# The default library is the runtime library by its SONAME, which the
# runtime package ships: never the development link libpmalloc_shim.so.
"$ctl" preload enable demo --root "$root" >"$T/out" 2>&1 || fail "enable (default library): $(cat "$T/out")"
grep -qE '^Environment=LD_PRELOAD=/.*/libpmalloc_shim\.so\.0$' "$units/demo.service.d/pmalloc.conf" ||
	fail "the default drop-in does not name the SONAME: $(grep LD_PRELOAD "$units/demo.service.d/pmalloc.conf")"
"$ctl" --help >/dev/null
"$ctl" preload --help | grep -q 'libpmalloc_shim\.so\.0' || fail "preload --help does not name the SONAME path"
pass "the default drop-in names $(sed -n 's/^Environment=LD_PRELOAD=//p' "$units/demo.service.d/pmalloc.conf")"
"$ctl" preload disable demo --root "$root" >/dev/null 2>&1 || fail "disable (default library)"

"$ctl" preload enable demo --root "$root/" --library "$lib" >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] || fail "enable: exit $rc: $(cat "$T/out" "$T/err")"
dropin=$units/demo.service.d/pmalloc.conf
[ -f "$dropin" ] || fail "no drop-in at $dropin"
cat >"$T/want" <<WANT
# Written by "pmallocctl preload enable demo.service"; "pmallocctl preload disable demo.service" removes it.
# Every process of the unit loads the pmalloc shim; pmallocd (or
# /etc/pmalloc.conf) decides what it protects: see pmallocctl(8).
[Unit]
Wants=pmallocd.service
After=pmallocd.service
[Service]
Environment=LD_PRELOAD=$lib
WANT
diff "$T/want" "$dropin" >"$T/diff" || fail "drop-in content: $(cat "$T/diff")"
[ "$(stat -c %a "$dropin")" = 644 ] || fail "drop-in mode $(stat -c %a "$dropin")"
grep -q "does not exist" "$T/err" || fail "no warning about the missing library: $(cat "$T/err")"
pass "enable writes the drop-in: $(tail -n 1 "$dropin")"
# Again, unchanged: the file is left as it is (systemd would see a new one
# as changed on disk and warn until daemon-reload).
before=$(stat -c '%i %Y.%y' "$dropin")
"$ctl" preload enable demo --root "$root/" --library "$lib" >"$T/out" 2>"$T/err" || fail "enable again: $(cat "$T/out" "$T/err")"
[ "$(stat -c '%i %Y.%y' "$dropin")" = "$before" ] || fail "enable again rewrote the unchanged drop-in"
diff "$T/want" "$dropin" >"$T/diff" || fail "drop-in content after enable again: $(cat "$T/diff")"
pass "enable again: the unchanged drop-in is left as it is"

"$ctl" preload status demo.service --root "$root" >"$T/out" 2>&1; rc=$?
# The library is missing in this root: status says the unit runs unprotected.
[ $rc = 1 ] && grep -qxF "demo.service: preloaded: LD_PRELOAD=$lib ($dropin)" "$T/out" &&
	grep -qxF "demo.service: but $root$lib does not exist: the unit runs unprotected" "$T/out" ||
	fail "status after, library missing: exit $rc: $(cat "$T/out")"
mkdir -p "$root/opt/pmalloc"; cp "$B/libpmalloc_shim.so" "$root$lib"
"$ctl" preload status demo.service --root "$root" >"$T/out" 2>&1; rc=$?
[ $rc = 0 ] && grep -qxF "demo.service: preloaded: LD_PRELOAD=$lib ($dropin)" "$T/out" &&
	grep -qxF "Environment=LD_PRELOAD=$lib" "$T/out" || fail "status after: exit $rc: $(cat "$T/out")"
pass "status: $(grep -v '^ ' "$T/out" | tr '\n' '|')"

if command -v systemd-analyze >/dev/null; then
	SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --root="$root" demo.service >"$T/verify" 2>&1; rc=$?
	[ $rc = 0 ] || fail "systemd-analyze verify: exit $rc: $(grep -v '^\s' "$T/verify" | tail -n 20)"
	grep -qF "DropIn Path: $dropin" "$T/verify" || fail "verify did not load the drop-in"
	grep -qE "^\s+Environment: LD_PRELOAD=$lib\$" "$T/verify" ||
		fail "the unit's environment lacks LD_PRELOAD: $(grep Environment "$T/verify")"
	systemd-analyze verify --root="$root" demo.service >"$T/verify" 2>&1
	[ ! -s "$T/verify" ] || fail "systemd-analyze verify complains: $(cat "$T/verify")"
	pass "systemd-analyze verify loads the drop-in, silently; the unit gets Environment=LD_PRELOAD=$lib"
fi

"$ctl" preload disable demo --root "$root" >"$T/out" 2>&1; rc=$?
[ $rc = 0 ] && [ ! -e "$dropin" ] && [ ! -e "$units/demo.service.d" ] ||
	fail "disable: exit $rc: $(cat "$T/out"); left: $(ls -la "$units")"
"$ctl" preload disable demo --root "$root" >/dev/null 2>&1 || fail "a second disable fails"
"$ctl" preload status demo --root "$root" >/dev/null 2>&1 && fail "status after disable says preloaded"
pass "disable removes the drop-in and its directory; again is no error"

# Another drop-in of the admin's in the same directory stays.
mkdir -p "$units/demo.service.d"; echo '[Service]' >"$units/demo.service.d/local.conf"
"$ctl" preload enable demo --root "$root" --library "$lib" >/dev/null 2>&1 || fail "enable beside local.conf"
"$ctl" preload disable demo --root "$root" >/dev/null 2>&1 || fail "disable beside local.conf"
[ -f "$units/demo.service.d/local.conf" ] || fail "disable removed the admin's drop-in"
pass "disable leaves the admin's own drop-ins"

# An LD_PRELOAD the unit already sets: the shim first, then the unit's own;
# status shows the effective environment; disable gives the unit its own back.
printf '[Unit]\nDefaultDependencies=no\n[Service]\nExecStart=/bin/true\nUser=nobody\nEnvironment=A=1 "LD_PRELOAD=/usr/lib/libone.so:/usr/lib/libtwo.so"\n' \
	>"$units/own.service"
"$ctl" preload enable own --root "$root" --library "$lib" >"$T/out" 2>&1 || fail "enable own: $(cat "$T/out")"
want="Environment=\"LD_PRELOAD=$lib /usr/lib/libone.so /usr/lib/libtwo.so\""
grep -qxF "$want" "$units/own.service.d/pmalloc.conf" ||
	fail "composed drop-in: $(cat "$units/own.service.d/pmalloc.conf")"
grep -qF "the unit's own from $root/etc/systemd/system/own.service" "$T/out" || fail "enable does not say it composed: $(cat "$T/out")"
"$ctl" preload status own --root "$root" >"$T/out" 2>&1 || fail "status own: $(cat "$T/out")"
grep -qxF "Environment=A=1 \"LD_PRELOAD=$lib /usr/lib/libone.so /usr/lib/libtwo.so\"" "$T/out" ||
	fail "status does not show the effective environment: $(cat "$T/out")"
grep -qxF "own.service: starts as nobody" "$T/out" || fail "status does not say the unit's user: $(cat "$T/out")"
if command -v systemd-analyze >/dev/null; then
	SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --root="$root" own.service >"$T/verify" 2>&1 ||
		fail "verify own: $(tail -n 5 "$T/verify")"
	grep -qE "^\s+Environment: .*LD_PRELOAD=$lib /usr/lib/libone.so /usr/lib/libtwo.so" "$T/verify" ||
		fail "systemd reads another environment: $(grep Environment "$T/verify")"
fi
# Again: the shim is not added twice.
"$ctl" preload enable own --root "$root" --library "$lib" >/dev/null 2>&1 || fail "enable own again"
grep -qxF "$want" "$units/own.service.d/pmalloc.conf" || fail "enable again: $(grep LD_PRELOAD "$units/own.service.d/pmalloc.conf")"
"$ctl" preload disable own --root "$root" >/dev/null 2>&1 || fail "disable own"
"$ctl" preload status own --root "$root" >"$T/out" 2>&1 && fail "status own after disable: $(cat "$T/out")"
grep -qxF 'Environment=A=1 LD_PRELOAD=/usr/lib/libone.so:/usr/lib/libtwo.so' "$T/out" || fail "status own after disable: $(cat "$T/out")"
pass "composes with the unit's LD_PRELOAD (shim first, once), says its User=; disable gives the unit its own back"

# Where the drop-in cannot win, enable refuses, says which file, writes nothing.
printf '[Service]\nExecStart=/bin/true\n' >"$units/late.service"
mkdir -p "$units/late.service.d"; printf '[Service]\nEnvironment=LD_PRELOAD=/x.so\n' >"$units/late.service.d/zz-local.conf"
printf 'LD_PRELOAD=/y.so\n' >"$root/etc/envfile"
printf '[Service]\nExecStart=/bin/true\nEnvironmentFile=-/etc/envfile\n' >"$units/envf.service"
printf '[Service]\nExecStart=/bin/true\nUnsetEnvironment=LD_PRELOAD\n' >"$units/unset.service"
for u in late envf unset; do
	"$ctl" preload enable $u --root "$root" --library "$lib" >"$T/out" 2>&1; rc=$?
	[ $rc = 1 ] || fail "enable $u: exit $rc: $(cat "$T/out")"
	[ ! -e "$units/$u.service.d/pmalloc.conf" ] || fail "enable $u wrote a drop-in"
	grep -q "^pmallocctl: cannot preload $u.service: $root/etc/systemd/system/" "$T/out" || fail "enable $u: $(cat "$T/out")"
done
pass "refused where it could not win: $(cat "$T/out")"

for bad in ../../x "a/b" "" "sys.target" "-.slice" $'x\ny'; do
	"$ctl" preload enable "$bad" --root "$root" --library "$lib" >"$T/out" 2>&1; rc=$?
	[ $rc = 2 ] || fail "unit '$bad': exit $rc: $(cat "$T/out")"
done
[ -z "$(find "$root" -name pmalloc.conf)" ] || fail "a refused unit name wrote a drop-in: $(find "$root" -name pmalloc.conf)"
"$ctl" preload enable demo --root "$root" --library 'rel/lib.so' >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "a relative --library: exit $rc"
"$ctl" preload frob demo >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "unknown action: exit $rc"
pass "unit names outside systemd's rules, non-process units, relative libraries, unknown actions: exit 2"
exit 0
