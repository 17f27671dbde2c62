#!/usr/bin/env bash
# ctl_preload.sh - pmallocctl preload enable|disable|status UNIT --root DIR:
# the drop-in's exact content, systemd-analyze verify loading it (its
# Environment= reaches the unit), status before and after, disable leaving
# nothing, and unit names that could climb out of the drop-in directory
# refused.
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
[ $rc = 1 ] && [ "$(cat "$T/out")" = "demo.service: not preloaded" ] || fail "status before: exit $rc: $(cat "$T/out")"

"$ctl" preload enable demo --root "$root/" --library "$lib" >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] || fail "enable: exit $rc: $(cat "$T/out" "$T/err")"
dropin=$units/demo.service.d/pmalloc.conf
[ -f "$dropin" ] || fail "no drop-in at $dropin"
cat >"$T/want" <<WANT
# Written by "pmallocctl preload enable demo.service"; "pmallocctl preload disable demo.service" removes it.
# Every process of the unit loads the pmalloc shim; pmallocd (or
# /etc/pmalloc.conf) decides what it protects: see pmallocctl(8).
[Service]
Environment=LD_PRELOAD=$lib
WANT
diff "$T/want" "$dropin" >"$T/diff" || fail "drop-in content: $(cat "$T/diff")"
[ "$(stat -c %a "$dropin")" = 644 ] || fail "drop-in mode $(stat -c %a "$dropin")"
grep -q "does not exist" "$T/err" || fail "no warning about the missing library: $(cat "$T/err")"
pass "enable writes the drop-in: $(tail -n 1 "$dropin")"

"$ctl" preload status demo.service --root "$root" >"$T/out" 2>&1; rc=$?
[ $rc = 0 ] && [ "$(cat "$T/out")" = "demo.service: preloaded: LD_PRELOAD=$lib ($dropin)" ] ||
	fail "status after: exit $rc: $(cat "$T/out")"
pass "status: $(cat "$T/out")"

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
