#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# audit_threads.sh - writes to protected pool memory from the places that
# used to lose them, under a policy file (no pmallocd: the shim writes the
# journal itself), checked on stderr, exit status and journal:
#   - a thread that blocks every signal (pthread_sigmask): enforce kills it
#     by SIGSEGV with the report line; audit reports the first write (once
#     per site and process), counts the second and lets the program finish;
#   - a write made with a corrupt frame pointer (the stack walk faults in
#     the handler): the line is there, enforce dies by SIGSEGV and still
#     reaches the journal, audit survives;
#   - 4 threads x 200 writes to one page in audit mode: every byte lands,
#     the site is reported (its first write, and bytes found changed while
#     that write's page was open), the rest counted at exit;
#   - a memset loop in audit mode: the same report lines for 30 calls as
#     for 300 (once per site), the rest counted.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
AT=$(readlink -f "$B/progs/audit_threads")
[ -x "$AT" ] || fail "$AT not built"

policy() {  # MODE BURST
	cat <<EOC
version = 1;
daemon = { report_burst = $2; report_interval_s = 3600; };
policies = ( { name = "at"; match = { exe = [ "*/audit_threads" ]; }; mode = "$1";
  pools = ( { name = "config"; sites = [ "make_config" ]; protect = [ "on-call:listen" ]; } ); } );
EOC
}
policy audit 1000 >"$T/audit.conf"
policy enforce 1000 >"$T/enforce.conf"
policy audit 20 >"$T/audit20.conf"

# Every line of FILE is a report of PID ending TAIL (the program's own
# stores, or bytes found changed after another write's window); their
# number in N_REPORTS.
all_reports() {  # FILE PID TAIL
	local line re
	re='^pmalloc\['$2'\]: write to protected pool "config" at 0x[0-9a-f]+: offset [0-9]+ in [0-9]+-byte object 0x[0-9a-f]+( allocated at [^ ;]+)?; (ip 0x[0-9a-f]+ \([^ )]+\)|ip unknown \(changed while the page was open for another audited write\)); policy "at"; '$3'$'
	N_REPORTS=0
	while IFS= read -r line; do
		[[ $line =~ ^pmalloc\[$2\]:\ audit:\ [0-9]+\ later\ writes ]] && continue
		[[ $line =~ $re ]] || fail "not a report of PID $2 ending \"$3\": $line"
		N_REPORTS=$((N_REPORTS + 1))
	done <"$1"
}

# -- a thread with every signal blocked
E2E_CONF=$T/audit.conf hardened "$T/out" "$T/err" "$AT" blocked || fail "blocked, audit: exit $?: $(cat "$T/out" "$T/err")"
[ "$(cat "$T/out")" = "after the writes: SEcret" ] || fail "blocked, audit: $(cat "$T/out")"
all_reports "$T/err" "$HPID" "audit: write allowed"
[ $N_REPORTS = 1 ] || fail "blocked, audit: want 1 report: $(cat "$T/err")"
grep -q "audit: 1 later writes of 1 sites" "$T/err" || fail "blocked, audit: the second write not counted: $(cat "$T/err")"
pass "audit: a thread blocking every signal has its writes allowed, the first reported, the second counted"

E2E_CONF=$T/enforce.conf hardened "$T/out" "$T/err" "$AT" blocked
rc=$?
[ $rc = 139 ] || fail "blocked, enforce: exit $rc, want 139 (SIGSEGV): $(cat "$T/err")"
all_reports "$T/err" "$HPID" "enforce: killed by SIGSEGV"
[ $N_REPORTS = 1 ] || fail "blocked, enforce: $(cat "$T/err")"
pass "enforce: a thread blocking every signal dies by SIGSEGV with the report line"

# -- a corrupt frame pointer: the walk faults, the report stands
E2E_CONF=$T/enforce.conf hardened "$T/out" "$T/err" "$AT" corrupt-fp
rc=$?
pid=$HPID
[ $rc = 139 ] || fail "corrupt-fp, enforce: exit $rc, want 139: $(cat "$T/err")"
all_reports "$T/err" "$pid" "enforce: killed by SIGSEGV"
[ $N_REPORTS = 1 ] || fail "corrupt-fp, enforce: $(cat "$T/err")"
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) || fail "corrupt-fp: no journal entry for PID $pid"
count_is 1 "$e" || fail "corrupt-fp: entries: $e"
expect_field "$e" PMALLOC_MODE enforce
pass "corrupt frame pointer, enforce: report line, journal entry, SIGSEGV"

E2E_CONF=$T/audit.conf hardened "$T/out" "$T/err" "$AT" corrupt-fp || fail "corrupt-fp, audit: exit $?: $(cat "$T/err")"
[ "$(cat "$T/out")" = "after the write: Xecret" ] || fail "corrupt-fp, audit: $(cat "$T/out")"
all_reports "$T/err" "$HPID" "audit: write allowed"
[ $N_REPORTS = 1 ] || fail "corrupt-fp, audit: $(cat "$T/err")"
pass "corrupt frame pointer, audit: the fault inside the stack walk ends the walk, not the program"

# -- 4 threads x 200 writes into one page
E2E_CONF=$T/audit.conf hardened "$T/out" "$T/err" "$AT" threads 4 200 || fail "threads: exit $?: $(tail -n 3 "$T/err")"
pid=$HPID
[ "$(cat "$T/out")" = "4 threads wrote 800 bytes; 800 are there" ] || fail "threads: $(cat "$T/out")"
all_reports "$T/err" "$pid" "audit: write allowed"
[ $N_REPORTS -ge 1 ] || fail "threads: no report"
others=$(grep -c 'changed while the page was open for another audited write' "$T/err")
jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid >/dev/null || fail "threads: no journal entry"
pass "4 threads x 200 writes: all 800 bytes there; $N_REPORTS stderr reports ($others found by comparison), the rest counted"

# -- a memset loop: once per site
# memset() of 1 KiB is a dozen vector stores: 30 calls and 300 calls give
# the same report lines (the site's first write), the rest counted.
memset_run() {  # CALLS
	E2E_CONF=$T/audit20.conf hardened "$T/out" "$T/err" "$AT" memset "$1" 1 || fail "memset: exit $?: $(tail -n 3 "$T/err")"
	pid=$HPID
	[ "$(cat "$T/out")" = "$1 memsets of 1024 bytes: last byte $(printf "\\$(printf '%03o' $((97 + ($1 - 1) % 26)))")" ] ||
		fail "memset: $(cat "$T/out")"
	grep -v ' more write reports ' "$T/err" >"$T/lines"
	all_reports "$T/lines" "$pid" "audit: write allowed"
	SHOWN=$N_REPORTS
	BYTES=$(wc -c <"$T/err")
}
memset_run 30
shown30=$SHOWN bytes30=$BYTES
memset_run 300
[ "$SHOWN" = "$shown30" ] || fail "memset: $SHOWN report lines for 300 calls, $shown30 for 30: not once per site"
pass "memset loop: $SHOWN lines for 30 and for 300 calls ($bytes30 and $BYTES bytes of stderr)"
exit 0
