#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fleet_journal_remote.sh - violations of many machines in one place through
# systemd's own transport: two simulated hosts (distinct machine ids and
# host names, each a journal file of its own) send with
# systemd-journal-upload over loopback http to a systemd-journal-remote of
# ours (a private port, its output under $T), and pmallocctl violations
# --directory (and --file) lists both, each with its host.
. "$(dirname "$0")/lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
remote=/lib/systemd/systemd-journal-remote upload=/lib/systemd/systemd-journal-upload
[ -x "$remote" ] || remote=/usr/lib/systemd/systemd-journal-remote
[ -x "$upload" ] || upload=/usr/lib/systemd/systemd-journal-upload
[ -x "$remote" ] && [ -x "$upload" ] || skip "systemd-journal-remote not installed"
command -v curl >/dev/null || skip "curl not installed"

# Each host's journal: one violation entry, written by journal-remote from
# the journal export format (as that host's journald would have stored it).
now=$(date +%s%N); now=${now%???}
pol=fleet$$
for h in 1 2; do
	# Host 1's entry as its pmallocd writes it (journald's trusted fields);
	# host 2's by nobody that may: shown as forged.
	writer=
	[ $h = 1 ] && writer="_PID=77 _UID=0 _COMM=pmallocd _EXE=/usr/sbin/pmallocd"
	mid=$(printf '%032x' $(( 0xf1ee7000 + h + RANDOM * 16 )))
	echo "$mid" >"$T/mid$h"
	# shellcheck disable=SC2086
	printf '%s\n' "__REALTIME_TIMESTAMP=$((now + h))" "__MONOTONIC_TIMESTAMP=$h" "_BOOT_ID=$mid" \
		"_MACHINE_ID=$mid" "_HOSTNAME=web$h.example" \
		MESSAGE_ID=$MID_VIOLATION PRIORITY=2 "OBJECT_PID=$((4000 + h))" \
		"MESSAGE=pmalloc: PID $((4000 + h)) wrote to protected pool \"config\"" \
		"PMALLOC_POLICY=$pol" PMALLOC_POOL=config PMALLOC_MODE=enforce \
		PMALLOC_EXE=/usr/sbin/nginx OBJECT_SYSTEMD_UNIT=nginx.service $writer "" >"$T/host$h.export"
	"$remote" --output="$T/host$h.journal" "$T/host$h.export" >"$T/mk$h.log" 2>&1 ||
		fail "cannot write host $h's journal: $(cat "$T/mk$h.log")"
done

# The collector, on a free private port of loopback.
mkdir -p "$T/collected"
rpid=
stop_remote() { [ -n "$rpid" ] && kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null; rpid=; }
at_exit stop_remote
listening() { curl -s -o /dev/null "http://127.0.0.1:$port/"; }
for try in 1 2 3 4 5; do
	port=$(( 20000 + RANDOM % 30000 ))
	"$remote" --listen-http="127.0.0.1:$port" --output="$T/collected/all.journal" --split-mode=none \
		>"$T/remote.log" 2>&1 &
	rpid=$!
	if wait_until 100 listening; then break; fi
	stop_remote
	port=
done
[ -n "$port" ] || fail "systemd-journal-remote did not listen: $(cat "$T/remote.log")"

for h in 1 2; do
	timeout 60 "$upload" --url="http://127.0.0.1:$port" --file="$T/host$h.journal" --follow=no \
		>"$T/up$h.log" 2>&1 || fail "systemd-journal-upload of host $h failed: $(cat "$T/up$h.log")"
done
stop_remote                       # closes its journal files
ls "$T/collected"/*.journal >/dev/null 2>&1 || fail "journal-remote wrote nothing: $(cat "$T/remote.log")"
pass "two hosts uploaded over http to journal-remote on 127.0.0.1:$port"

"$ctl" violations --directory "$T/collected" --policy "$pol" >"$T/out" 2>"$T/err" ||
	fail "violations --directory: exit $?: $(cat "$T/err")"
head -n 1 "$T/out" | grep -q '^TIME  *HOST  *PID ' || fail "no HOST column: $(head -n 1 "$T/out")"
for h in 1 2; do
	by=FORGED
	[ $h = 1 ] && by=pmallocd
	grep -qE "^[0-9-]+ [0-9:]+  +web$h\.example  +$((4000 + h))  +$by  +/usr/sbin/nginx  +$pol " "$T/out" ||
		fail "host $h missing: $(cat "$T/out")"
done
[ "$(wc -l <"$T/out")" = 3 ] || fail "expected a header and two rows: $(cat "$T/out")"
pass "violations --directory lists both hosts: $(tail -n 2 "$T/out" | cut -c 1-60 | tr '\n' '|')"

"$ctl" violations --file "$(ls "$T/collected"/*.journal | head -n 1)" --policy "$pol" --json >"$T/json" ||
	fail "violations --file --json failed"
for h in 1 2; do
	grep -q "\"_MACHINE_ID\":\"$(cat "$T/mid$h")\".*\"_HOSTNAME\":\"web$h.example\"\|\"_HOSTNAME\":\"web$h.example\".*\"_MACHINE_ID\":\"$(cat "$T/mid$h")\"" "$T/json" ||
		fail "--json lacks host $h's machine id and name: $(cat "$T/json")"
done
grep -q '"OBJECT_SYSTEMD_UNIT":"nginx.service"' "$T/json" || fail "--json lacks OBJECT_SYSTEMD_UNIT"
pass "violations --file --json gives each entry's _MACHINE_ID and _HOSTNAME"
exit 0
