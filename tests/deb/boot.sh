#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/deb/boot.sh DEBDIR BOOTDIR - the packages built by "make deb" on a
# clean Debian bookworm booted with systemd as PID 1, as an administrator
# would use them: install libpmalloc0 and pmalloc (never libpmalloc-dev),
# find pmallocd.socket active, "pmallocctl preload enable" a service running
# the demo program, see it protected in "pmallocctl status", make it write
# to its protected configuration (SIGUSR1: "pmalloc-demo serve" does what
# "attack" does) and find it killed and the violation in the journal with
# its policy, pool, allocation site and unit.
#
# The machine: debootstrap (minbase, systemd and the packages' libraries)
# into BOOTDIR/bookworm once, from $DEB_BOOT_MIRROR or debootstrap's default
# mirror; each run boots a fresh copy of it (BOOTDIR/run) with
# systemd-nspawn and removes the copy afterwards, so every run starts from
# the same clean machine.  Commands run inside through nsenter.
# Must never: touch the host's packages, services, journal or network (the
# container has its own systemd and journald, and only a loopback of its
# own), or leave the container running.
# Runs as root.  "make deb-boot-check" runs it (and installs debootstrap and
# systemd-nspawn when missing).
set -u
debdir=${1:?usage: tests/deb/boot.sh DEBDIR BOOTDIR}
bootdir=${2:?usage: tests/deb/boot.sh DEBDIR BOOTDIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }
[ "$(id -u)" = 0 ] || fail "run as root (debootstrap, systemd-nspawn)"
for t in debootstrap systemd-nspawn nsenter; do
	command -v $t >/dev/null || fail "$t not installed: make deb-boot-check installs it"
done
ls "$debdir"/libpmalloc0_*.deb "$debdir"/pmalloc_*.deb >/dev/null || fail "no packages in $debdir: make deb"
demo=$src/build/progs/pmalloc-demo
[ -x "$demo" ] || fail "$demo not built: make build/progs/pmalloc-demo"
mkdir -p "$bootdir"
bootdir=$(cd "$bootdir" && pwd)
image=$bootdir/bookworm
run=$bootdir/run
mark=.pmalloc-debootstrap-done

# The clean machine, made once.  The libraries the packages need are there
# (dpkg -i installs no dependency); the packages are not.
if [ ! -e "$image/$mark" ]; then
	rm -rf "$image" "$image.tmp"
	echo "debootstrap bookworm into $image (once: about 4 minutes, 250 MB)"
	# shellcheck disable=SC2086 # an empty mirror is no argument
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,libconfig9,libdw1,libelf1,libseccomp2 \
		bookworm "$image.tmp" ${DEB_BOOT_MIRROR:-} >"$bootdir/debootstrap.log" 2>&1 ||
		fail "debootstrap: $(tail -n 5 "$bootdir/debootstrap.log")"
	touch "$image.tmp/$mark" && mv "$image.tmp" "$image"
fi
# Debian's nginx for the README's walkthrough, added to the image (also to
# one made before it was wanted), not started: a policy-rc.d that refuses
# while apt runs.
if [ ! -x "$image/usr/sbin/nginx" ]; then
	echo "apt-get install nginx into $image (once)"
	printf '#!/bin/sh\nexit 101\n' >"$image/usr/sbin/policy-rc.d" && chmod 0755 "$image/usr/sbin/policy-rc.d"
	cp /etc/resolv.conf "$image/etc/resolv.conf"
	chroot "$image" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive sh -c \
		'apt-get update && apt-get install -y --no-install-recommends nginx' >"$bootdir/nginx.log" 2>&1
	r=$?
	rm -f "$image/usr/sbin/policy-rc.d"
	[ $r = 0 ] && [ -x "$image/usr/sbin/nginx" ] || fail "apt-get install nginx in the image: $(tail -n 5 "$bootdir/nginx.log")"
fi

nspawn_pid=
leader=
cleanup() {
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		# SIGTERM: nspawn asks the container's systemd to power off.
		kill "$nspawn_pid" 2>/dev/null
		for _ in $(seq 200); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$nspawn_pid" 2>/dev/null && kill -KILL "$nspawn_pid" 2>/dev/null
		wait "$nspawn_pid" 2>/dev/null
	fi
	rm -rf "$run"
}
trap cleanup EXIT

rm -rf "$run"
cp -a "$image" "$run" || fail "cannot copy $image"
mkdir -p "$run/root/debs"
cp "$debdir"/libpmalloc0_*.deb "$debdir"/pmalloc_*.deb "$run/root/debs/"
install -m 0755 "$demo" "$run/usr/local/bin/pmalloc-demo"
# The container's own name; root may log in on its console (not used).
echo pmalloc-boot >"$run/etc/hostname"

systemd-nspawn -q -D "$run" -b --private-network --register=no --keep-unit -M pmalloc-boot >"$bootdir/console.log" 2>&1 </dev/null &
nspawn_pid=$!
# The container's PID 1: a systemd below our systemd-nspawn whose pid in
# its own namespace is 1.
below_nspawn() {
	local p=$1
	while [ "${p:-0}" -gt 1 ]; do
		[ "$p" = "$nspawn_pid" ] && return 0
		p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
	done
	return 1
}
for _ in $(seq 300); do
	for p in $(pgrep -x systemd); do
		grep -qP '^NSpid:\t\d+\t1$' "/proc/$p/status" 2>/dev/null && below_nspawn "$p" && leader=$p && break
	done
	[ -n "$leader" ] && break
	kill -0 "$nspawn_pid" 2>/dev/null || fail "systemd-nspawn exited: $(tail -n 20 "$bootdir/console.log")"
	sleep 0.1
done
[ -n "$leader" ] || fail "no systemd came up in the container: $(tail -n 20 "$bootdir/console.log")"
# inside CMD...: runs CMD inside, as a login shell would, with nothing of ours.
inside() { nsenter -t "$leader" -a -r -w env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
# Its manager's socket first (systemctl cannot wait before it is there).
for _ in $(seq 300); do inside test -S /run/systemd/private && break; sleep 0.1; done
state=$(inside timeout 120 systemctl is-system-running --wait 2>&1)
case $state in
running | degraded) ;;
*) fail "the container's systemd: $state: $(inside systemctl --failed --no-legend 2>&1)" ;;
esac
pass "booted bookworm with systemd as PID 1 (host pid $leader): $state"

inside sh -c 'dpkg -i /root/debs/libpmalloc0_*.deb /root/debs/pmalloc_*.deb' >"$bootdir/install.log" 2>&1 ||
	fail "dpkg -i: $(tail -n 20 "$bootdir/install.log")"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
inside test -e "/usr/lib/$multiarch/libpmalloc_shim.so.0" || fail "libpmalloc_shim.so.0 not installed"
inside test ! -e "/usr/lib/$multiarch/libpmalloc_shim.so" || fail "the development link is there without libpmalloc-dev"
inside dpkg-query -W -f='${Status}' libpmalloc-dev 2>/dev/null | grep -q installed && fail "libpmalloc-dev got installed"
socket_state=$(inside systemctl is-active pmallocd.socket)
[ "$socket_state" = active ] || fail "pmallocd.socket is $socket_state: $(inside systemctl status pmallocd.socket 2>&1)"
pass "installed libpmalloc0 and pmalloc (not libpmalloc-dev); pmallocd.socket is active"

unit=pmalloc-demo.service
printf '[Unit]\nDescription=pmalloc demo service\n[Service]\nExecStart=/usr/local/bin/pmalloc-demo serve\n' \
	>"$run/etc/systemd/system/$unit"
inside pmallocctl preload enable $unit >"$bootdir/out" 2>&1 || fail "preload enable: $(cat "$bootdir/out")"
inside systemctl daemon-reload
inside systemctl start $unit || fail "systemctl start $unit: $(inside systemctl status $unit 2>&1)"
pid=$(inside systemctl show -P MainPID $unit)
[ "${pid:-0}" != 0 ] || fail "$unit has no main process: $(inside systemctl status $unit 2>&1)"
# Ready: pmallocd says its pool is protected (at listen()); only then the
# signal, which before would find the program still starting.
for _ in $(seq 200); do
	inside pmallocctl status >"$bootdir/status" 2>&1
	grep -q 'pool "config": [0-9]* bytes protected' "$bootdir/status" && break
	sleep 0.05
done
protected=$(grep -m1 'pool "config": [0-9]* bytes protected' "$bootdir/status") ||
	fail "pmallocctl status shows no protected pool: $(cat "$bootdir/status")"
grep -q "pmalloc-demo" "$bootdir/status" || fail "pmallocctl status does not name the demo: $(cat "$bootdir/status")"
pass "$unit (pid $pid in the container) preloaded; pmallocctl status:${protected#*:}"

inside systemctl kill -s SIGUSR1 --kill-who=main $unit
for _ in $(seq 200); do
	[ "$(inside systemctl show -P ActiveState $unit)" = active ] || break
	sleep 0.05
done
result=$(inside systemctl show -P Result $unit)
code=$(inside systemctl show -P ExecMainStatus $unit)
case $result in
signal | core-dump) [ "$code" = 11 ] || fail "$unit died by signal $code, not SIGSEGV" ;;
*) fail "$unit ended with Result=$result (status $code): $(inside journalctl -q -u $unit 2>&1 | tail -n 5)" ;;
esac
pass "the write killed it: Result=$result, signal $code (SIGSEGV)"

inside journalctl --sync 2>/dev/null
for _ in $(seq 100); do
	inside journalctl -q -o export MESSAGE_ID=7df8f2fd7e8542c19da1343c00501acc OBJECT_PID="$pid" >"$bootdir/entry" 2>&1
	[ -s "$bootdir/entry" ] && break
	sleep 0.05
done
[ -s "$bootdir/entry" ] || fail "no violation entry of pid $pid in the container's journal"
for want in PMALLOC_POLICY=demo PMALLOC_POOL=config 'PMALLOC_OBJECT_SITE=parse_config+0x' \
	OBJECT_SYSTEMD_UNIT=$unit PMALLOC_MODE=enforce _SYSTEMD_UNIT=pmallocd.service; do
	grep -qa "^$want" "$bootdir/entry" || fail "the violation entry lacks $want: $(grep -a '^PMALLOC_\|^OBJECT_' "$bootdir/entry")"
done
pass "journal: $(grep -am1 '^MESSAGE=' "$bootdir/entry" | cut -c9-) [$(grep -a '^PMALLOC_POLICY=\|^PMALLOC_POOL=\|^PMALLOC_OBJECT_SITE=\|^OBJECT_SYSTEMD_UNIT=' "$bootdir/entry" | tr '\n' ' ' | sed 's/ $//')]"
# pmallocctl violations names the writer by what journald recorded: this
# one came from pmallocd.service, whatever name journald had for it then.
inside pmallocctl violations --no-pager -u $unit -o json >"$bootdir/vio.json" 2>&1 ||
	fail "pmallocctl violations: $(cat "$bootdir/vio.json")"
grep -qE "\"OBJECT_PID\": ?\"$pid\"" "$bootdir/vio.json" || fail "violations -u $unit: $(cat "$bootdir/vio.json")"
grep -qE '"PMALLOCCTL_WRITER": ?"pmallocd"' "$bootdir/vio.json" ||
	fail "violations does not name pmallocd as the writer: $(cat "$bootdir/vio.json")"
pass "pmallocctl violations -u $unit: pid $pid, written by pmallocd"

# The README's "Harden a service", its command lines as they are, on
# Debian's nginx (master as root, workers as www-data), with the loads a
# reader would bring: before step 2 the usual one, before step 4's
# exercise one the learn load never sent (other URLs, 404s).  Each line
# must succeed but step 5's ready, which must say "not ready" for the
# 24 hours not passed.  Then the enforced nginx through systemctl reload
# and a load: still active, the same main process, no violation.
# get N PATH: N requests to the container's nginx, each answered (200 or 404).
get() {
	inside bash -c 'for i in $(seq '"$1"'); do
		exec 3<>/dev/tcp/127.0.0.1/80 || exit 1
		printf "GET '"$2"'$i HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3
		IFS= read -r l <&3 || exit 1; exec 3>&-
		case $l in "HTTP/1.1 200"* | "HTTP/1.1 404"*) ;; *) echo "$l"; exit 1 ;; esac
	done'
}
inside systemctl is-active nginx >/dev/null || inside systemctl start nginx || fail "nginx does not start: $(inside systemctl status nginx 2>&1)"
get 3 /?warm= || fail "nginx does not answer in the container"
since=$(inside date +%s)
step=0 n=0
sed -n '/^## Harden a service/,/^Then watch it/p' "$src/README.md" | sed -n '/^```$/,/^```$/p' | grep -v '^```$' >"$bootdir/readme.sh"
[ "$(grep -vc '^#' "$bootdir/readme.sh")" -ge 10 ] || fail "README's walkthrough not found: $(cat "$bootdir/readme.sh")"
while IFS= read -r line; do
	if [[ $line =~ ^#\ ([0-9])\. ]]; then
		step=${BASH_REMATCH[1]}
		continue
	fi
	[[ $line == "#"* ]] && continue
	if [ "$step" = 2 ] && [[ $line == *exercise* ]]; then
		get 40 /?learn= || fail "step 2: the usual load failed"
	fi
	if [ "$step" = 4 ] && [[ $line == *exercise* ]]; then
		get 20 /index.nginx-debian.html?k= && get 10 /missing- || fail "step 4: the audit load failed"
	fi
	n=$((n + 1))
	rc=0; inside bash -c "$line" >"$bootdir/step.out" 2>&1 </dev/null || rc=$?
	cat "$bootdir/step.out" >>"$bootdir/readme.log"
	if [ "$step" = 5 ]; then
		[ $rc = 1 ] && grep -q '^not ready:' "$bootdir/step.out" && grep -q 'less than 24h00min' "$bootdir/step.out" ||
			fail "step 5, $line: exit $rc (want 1, not ready for the 24 h): $(cat "$bootdir/step.out")"
		continue
	fi
	[ $rc = 0 ] || fail "step $step, $line: exit $rc: $(cat "$bootdir/step.out"; inside systemctl status --no-pager pmallocd nginx 2>&1 | tail -n 30; inside journalctl -q --no-pager -n 30 -u pmallocd -u nginx 2>&1)"
	if [ "$step" = 3 ] && [[ $line == *propose* ]]; then
		grep -q '^    mode = "audit";' "$run/etc/pmalloc.conf" || fail "step 3: the proposal is not in audit mode"
	fi
done <"$bootdir/readme.sh"
grep -q '^    mode = "enforce";' "$run/etc/pmalloc.conf" || fail "after step 6: the policy is not in enforce mode"
sites=$(sed -n '/sites = \[/,/\]/p' "$run/etc/pmalloc.conf" | grep -o '"[^"]*"' | sort -u | grep -c .)
pass "the README's walkthrough on nginx: $n command lines as written, each as it should (ready: not ready, 24 h); enforce with $sites sites"

mpid=$(inside systemctl show -P MainPID nginx)
for _ in $(seq 100); do
	inside pmallocctl status >"$bootdir/status" 2>&1
	grep -q 'bytes protected' "$bootdir/status" && break
	sleep 0.1
done
grep -q 'bytes protected' "$bootdir/status" || fail "the enforced nginx protects nothing: $(cat "$bootdir/status")"
get 20 /?after= || fail "the enforced nginx does not answer"
inside systemctl reload nginx || fail "systemctl reload nginx: $(inside systemctl status nginx 2>&1)"
sleep 1
get 20 /?reloaded= && get 5 /missing-after- || fail "nginx does not answer after systemctl reload: $(inside systemctl status nginx 2>&1)"
[ "$(inside systemctl is-active nginx)" = active ] && [ "$(inside systemctl show -P MainPID nginx)" = "$mpid" ] ||
	fail "nginx after systemctl reload: $(inside systemctl status nginx 2>&1)"
inside journalctl --sync 2>/dev/null
inside journalctl -q -o cat --since "@$since" MESSAGE_ID=7df8f2fd7e8542c19da1343c00501acc PMALLOC_EXE=/usr/sbin/nginx \
	PMALLOC_MODE=enforce >"$bootdir/vio" 2>&1
grep -q . "$bootdir/vio" && fail "violations of nginx in enforce: $(head -n 5 "$bootdir/vio")"
inside grep -q 'exited on signal 11' /var/log/nginx/error.log 2>/dev/null && fail "an nginx process died by SIGSEGV: $(inside grep 'signal 11' /var/log/nginx/error.log)"
pass "the enforced nginx (main PID $mpid) through systemctl reload: active, the same main process, answers, no kill; $(grep -m1 'bytes protected' "$bootdir/status" | sed 's/^ *//')"
exit 0
