#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pmallocctl violations --since/--until TIME against journalctl itself: a
# journal file (systemd-journal-remote, from the export format) holds
# violation entries at known instants, around a fixed day and around now;
# for each TIME form, under three local zones, pmallocctl must accept what
# journalctl accepts, refuse what it refuses, and select the same entries.
. "$(dirname "$0")/lib.sh"

ctl=$B/pmallocctl
[ -x "$ctl" ] || skip "pmallocctl not built"
remote=/lib/systemd/systemd-journal-remote
[ -x "$remote" ] || remote=/usr/lib/systemd/systemd-journal-remote
[ -x "$remote" ] || skip "systemd-journal-remote not installed"
command -v python3 >/dev/null || skip "python3 not installed"
unset COLUMNS

ID=$MID_VIOLATION
# The fixed day: 2025-06-15 12:00:00 UTC, a Sunday; entries every 7.5 min
# from 6 h before to 6 h after, and at +0.25, +0.5, +0.75 s.  Around now:
# every 17 min, 9 days back to 2 days ahead.  Each entry's OBJECT_PID is
# its own.
t0=1749988800
now=$(date +%s)
python3 - "$t0" "$now" "$ID" >"$T/all.export" <<'PY'
import sys
t0, now, mid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
stamps = [t0 * 10**6 + k * 450 * 10**6 for k in range(-48, 49)]
stamps += [t0 * 10**6 + f for f in (250000, 500000, 750000)]
stamps += [now * 10**6 + k * 1020 * 10**6 + 123457 for k in range(-762, 170)]
for i, us in enumerate(sorted(stamps)):
    print(f"__REALTIME_TIMESTAMP={us}\n__MONOTONIC_TIMESTAMP={i + 1}\n"
          f"_BOOT_ID=0123456789abcdef0123456789abcdef\n_MACHINE_ID=0123456789abcdef0123456789abcdef\n"
          f"_HOSTNAME=time.example\nMESSAGE_ID={mid}\nPRIORITY=2\nOBJECT_PID={100000 + i}\n_PID={100000 + i}\n"
          f"MESSAGE=entry {i}\nPMALLOC_POLICY=time\nPMALLOC_POOL=p\nPMALLOC_MODE=enforce\n")
PY
"$remote" --output="$T/time.journal" "$T/all.export" >"$T/mk.log" 2>&1 ||
	fail "cannot write the journal file: $(cat "$T/mk.log")"

# compare OPTION TIME: the same verdict and, when accepted, the same entries
# (-o cat: each entry's MESSAGE names it).
compare() {
	local opt=$1 t=$2 theirs ours rc_j rc_o
	theirs=$(journalctl -q --no-pager --file "$T/time.journal" "$opt" "$t" -o cat MESSAGE_ID=$ID 2>/dev/null)
	rc_j=$?
	ours=$("$ctl" violations --file "$T/time.journal" "$opt" "$t" -o cat 2>"$T/err")
	rc_o=$?
	case "$rc_j/$rc_o" in
	0/0) [ "$theirs" = "$ours" ] ||
		fail "TZ=${TZ-} $opt '$t': journalctl selects $(wc -l <<<"$theirs") entries" \
			"($(head -n 1 <<<"$theirs")...), pmallocctl $(wc -l <<<"$ours") ($(head -n 1 <<<"$ours")...)" ;;
	1/2) ;;
	*) fail "TZ=${TZ-} $opt '$t': journalctl exit $rc_j, pmallocctl exit $rc_o ($(cat "$T/err"))" ;;
	esac
}

day=2025-06-15
today_a=$(date +%a) tomorrow_a=$(date -d tomorrow +%a)
clock=$(date -d '-3 hours' +%H:%M:%S)
forms=(
	"$day 12:00:00" "$day 12:00:00.5" "$day 12:00:00.250001" "$day 12:00:00.2499996"
	"$day 12:00:00.75 UTC" "25-06-15 12:00" "$day" "$day 11:52" "$day 12:00:60" "2025-06-31"
	"Sun $day 12:00:00.5" "sunday $day 11:00" "SUN $day" "Mon $day" "$day 12:00 utc" "$day UTC"
	"$day 14:00 Europe/Berlin" "$day 14:00:00.5 Europe/Berlin" "$day 08:00 America/New_York"
	"$day 07:00 EST" "$day 14:00 CET" "$day 21:00 Asia/Tokyo" "$day 21:00 JST" "$day 14:00 CEST"
	"$day Asia/Tokyo" "today Europe/Berlin" "yesterday Asia/Tokyo" "tomorrow UTC" "today" "yesterday"
	"tomorrow" "yesterday UTC" "now" "-0" "-1h" "-1h30min" "- 5min" "-1d 2h" "-2.5d" "90min ago"
	"1.5h ago" "2 days ago" "+1h" "+1d 3h" "3 hours left" "@$t0" "@$t0.5" "@$((t0 + 900))"
	"@+$t0" "$clock" "$clock.5" "${clock%:*}" "$today_a ${clock%:*}" "$tomorrow_a 00:10"
	"foo" "1h30min" "${day}T12:00" "$day 12:00 Mars/Olympus" "@" "-" "+" "today  UTC" "10:00:00."
	"-100y" "9999-12-31" "1969-12-31" "2024-13-01" "25:00" "-1h UTC" "now UTC" "@$t0 UTC"
	"today PST" "$day 12:00 GMT" "$day 12:00 Etc/GMT-2" "5 parsecs ago" "@1h" "-1w" "-1M" "-1y"
)
for t in "${forms[@]}"; do
	compare --since "$t"
done
# The forms the local zone changes, under two others.
for zone in Asia/Tokyo Europe/Berlin; do
	export TZ=$zone
	for t in "$day 12:00:00.5" "$day 21:00 JST" "$day 14:00 CEST" "$day 14:00 CET" "$day 14:00 Europe/Berlin" \
		"today" "yesterday" "tomorrow" "today UTC" "$clock" "${clock%:*}" "$today_a ${clock%:*}" "-1h"; do
		compare --since "$t"
	done
done
unset TZ
for t in "$day 12:00:00.5" "$day 11:30 Europe/London" "-2d" "yesterday" "@$((t0 + 60))"; do
	compare --until "$t"
done
pass "${#forms[@]} TIME forms, and the local ones under 3 zones: accepted, refused and selecting as journalctl"
