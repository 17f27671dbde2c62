#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/deb/install.sh DEBDIR - the packages built by "make deb" on this
# machine, as an administrator would use them: install libpmalloc0 and
# pmalloc (never libpmalloc-dev, so libpmalloc_shim.so, the development
# link, is absent), "pmallocctl preload enable" a test service, and show its
# program protected.  Then purge both and leave the machine as found.
#
# Where systemd is PID 1 the unit is started and stopped with systemctl.
# Where it is not (a container), the unit cannot run: then systemd-analyze
# verify loads the unit with its drop-in, and the unit's program is started
# by hand with exactly the environment the unit files give it ("pmallocctl
# preload status" prints it); what was shown each way is said.
# Runs as root (dpkg).  "make deb-install-check" runs it.
set -u
debdir=${1:?usage: tests/deb/install.sh DEBDIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }
[ "$(id -u)" = 0 ] || fail "run as root (dpkg -i)"
ls "$debdir"/libpmalloc0_*.deb "$debdir"/pmalloc_*.deb >/dev/null || fail "no packages in $debdir: make deb"
demo=$src/build/progs/pmalloc-demo
[ -x "$demo" ] || fail "$demo not built: make build/progs/pmalloc-demo"
for p in libpmalloc0 pmalloc libpmalloc-dev; do
	dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q 'installed' &&
		fail "$p is installed already, and this check installs and purges the packages itself:" \
			"run 'apt-get purge libpmalloc0 pmalloc libpmalloc-dev' first (your /etc/pmalloc.conf" \
			"goes with it: copy it aside), then make deb-install-check again"
done
[ ! -e /etc/pmalloc.conf ] || fail "/etc/pmalloc.conf exists already (the check purges what it installs):" \
	"move it aside (mv /etc/pmalloc.conf /etc/pmalloc.conf.keep), run the check, then move it back"

T=$(mktemp -d /tmp/pmalloc-deb.XXXXXX)
unit=pmalloc-debtest.service
rcd=
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -n "${systemd_up:-}" ] && systemctl stop $unit 2>/dev/null
	command -v pmallocctl >/dev/null && pmallocctl preload disable $unit >/dev/null 2>&1
	rm -f /etc/systemd/system/$unit
	dpkg --purge pmalloc libpmalloc0 >"$T/purge.log" 2>&1 || cat "$T/purge.log"
	[ -n "$rcd" ] && rm -f /usr/sbin/policy-rc.d
	[ -n "${systemd_up:-}" ] && systemctl daemon-reload
	rm -rf "$T"
	local left
	left=$(dpkg-query -W -f='${Package} ${Status}\n' libpmalloc0 pmalloc 2>/dev/null | grep -v not-installed
		ls -d /etc/pmalloc.conf /etc/systemd/system/*/pmallocd.* /etc/systemd/system/$unit* \
			/usr/lib/*/libpmalloc* /usr/sbin/pmallocd /usr/bin/pmallocctl 2>/dev/null)
	[ -z "$left" ] && echo "ok: purged; nothing of the packages is left" || { echo "FAIL: left after purge: $left"; exit 1; }
}
trap cleanup EXIT
# No server starts system-wide while dpkg runs (only if no such file is there).
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && rcd=1
fi
systemd_up=
[ -d /run/systemd/system ] && systemd_up=1

dpkg -i "$debdir"/libpmalloc0_*.deb "$debdir"/pmalloc_*.deb >"$T/install.log" 2>&1 || fail "dpkg -i: $(cat "$T/install.log")"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
soname=/usr/lib/$multiarch/libpmalloc_shim.so.0
[ -e "$soname" ] || fail "$soname not installed"
[ ! -e "/usr/lib/$multiarch/libpmalloc_shim.so" ] || fail "the development link is there without libpmalloc-dev"
dpkg-query -W -f='${Status}' libpmalloc-dev 2>/dev/null | grep -q installed && fail "libpmalloc-dev got installed"
[ -f /etc/pmalloc.conf ] || fail "no /etc/pmalloc.conf"
pmallocctl check /etc/pmalloc.conf >/dev/null || fail "the shipped policy does not pass check"
pass "installed libpmalloc0 and pmalloc, not libpmalloc-dev: $soname is there, libpmalloc_shim.so is not"

# The service: the demo program, whose shipped policy ("demo") protects its
# configuration at listen(); "attack" then overwrites it, as a bug would.
mkdir -p "$T/bin"; cp "$demo" "$T/bin/pmalloc-demo"; chmod 755 "$T" "$T/bin"
printf '[Unit]\nDescription=pmalloc package test\n[Service]\nType=oneshot\nExecStart=%s attack\n' \
	"$T/bin/pmalloc-demo" >/etc/systemd/system/$unit
pmallocctl preload enable $unit >"$T/out" 2>&1 || fail "preload enable: $(cat "$T/out")"
dropin=/etc/systemd/system/$unit.d/pmalloc.conf
grep -qxF "Environment=LD_PRELOAD=$soname" "$dropin" || fail "drop-in: $(cat "$dropin")"
pmallocctl preload status $unit >"$T/status" 2>&1 || fail "preload status: $(cat "$T/status")"
env_line=$(grep '^Environment=' "$T/status")
[ "$env_line" = "Environment=LD_PRELOAD=$soname" ] || fail "effective environment: $env_line"
pass "preload enable $unit: $(head -n 1 "$T/out"); status: $env_line"

SYSTEMD_LOG_LEVEL=debug systemd-analyze verify $unit >"$T/verify" 2>&1
grep -qE "^\s+Environment: LD_PRELOAD=$soname\$" "$T/verify" ||
	fail "systemd does not read LD_PRELOAD from the drop-in: $(grep -E 'Environment|DropIn' "$T/verify")"
pass "systemd-analyze verify: the unit's Environment is LD_PRELOAD=$soname (from $dropin)"

if [ -n "$systemd_up" ]; then
	systemctl daemon-reload
	systemctl start $unit; rc=$?
	[ $rc != 0 ] || fail "the unit's attack was not stopped"
	result=$(systemctl show -p Result --value $unit)
	[ "$result" = signal ] || fail "the unit ended with Result=$result"
	pass "systemctl start $unit: the program died by a signal at its write (Result=$result)"
else
	echo "note: systemd is not PID 1 here: the unit itself cannot be started; its program is started with its environment instead"
fi

# The unit's environment, exactly: nothing else from this shell.  Where
# the default socket is someone else's (a pmallocd with another policy runs
# there: not ours to stop), the run without a daemon names a socket nobody
# listens on, so that the shim reads /etc/pmalloc.conf as it would.
nodaemon=
if [ -S /run/pmalloc/pmallocd.sock ]; then
	nodaemon=PMALLOC_SOCKET=$T/nobody.sock
	echo "note: another pmallocd answers on /run/pmalloc/pmallocd.sock: the run without a daemon adds $nodaemon"
fi
run_unit_env() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ${env_line#Environment=} "$@"; }
"$T/bin/pmalloc-demo" attack >"$T/plain" 2>&1; rc=$?
[ $rc = 0 ] || fail "without the shim the attack should go through: exit $rc: $(cat "$T/plain")"
run_unit_env $nodaemon "$T/bin/pmalloc-demo" >"$T/ok" 2>&1 || fail "the program under the unit's environment fails: $(cat "$T/ok")"
run_unit_env $nodaemon "$T/bin/pmalloc-demo" attack >"$T/attack" 2>&1; rc=$?
[ $rc = 139 ] || fail "attack under the unit's environment: exit $rc, not SIGSEGV: $(cat "$T/attack")"
grep -q 'write to protected pool "config".*policy "demo"; enforce: killed by SIGSEGV' "$T/attack" || fail "no report: $(cat "$T/attack")"
pass "the unit's program, with the unit's environment and no daemon: the attack dies by SIGSEGV: $(grep -m1 'write to protected' "$T/attack")"

# The packaged pmallocd on a socket of its own hands the policy out and
# logs the violation to the journal.
/usr/sbin/pmallocd --config /etc/pmalloc.conf --socket "$T/pmallocd.sock" >"$T/pmallocd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$T/pmallocd.sock" ] && break; sleep 0.05; done
[ -S "$T/pmallocd.sock" ] || fail "pmallocd did not start: $(cat "$T/pmallocd.log")"
run_unit_env PMALLOC_SOCKET="$T/pmallocd.sock" "$T/bin/pmalloc-demo" attack >"$T/attack2" 2>&1; rc=$?
[ $rc = 139 ] || fail "attack with pmallocd: exit $rc: $(cat "$T/attack2")"
journalctl --sync 2>/dev/null
for _ in $(seq 40); do
	journalctl -q -o cat _PID=${pids[0]} PMALLOC_EXE="$T/bin/pmalloc-demo" \
		MESSAGE_ID=7df8f2fd7e8542c19da1343c00501acc >"$T/journal" 2>/dev/null
	[ -s "$T/journal" ] && break; sleep 0.1
done
[ -s "$T/journal" ] || fail "no violation entry from pmallocd (pid ${pids[0]}) in the journal"
pass "with the packaged pmallocd: the attack dies by SIGSEGV, journal: $(head -n 1 "$T/journal")"

pmallocctl preload disable $unit >/dev/null || fail "preload disable"
[ ! -e "$dropin" ] || fail "disable left $dropin"
exit 0
