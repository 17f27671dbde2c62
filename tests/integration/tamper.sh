#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tamper.sh - nothing writable in the shim decides whether a write into
# protected memory is let through.  tests/progs/api_tamper overwrites, one
# forked run per target word and value, the shim's .data/.bss, its TLS,
# the pool structs and the side tables (span owners, the object's record,
# its call site's entry), then lets the kernel write into its protected
# object (read(2)) and writes into it itself: every run must die by a
# signal with the kernel's write refused (its header comment says which
# words and values).  Once under an enforce policy file (no daemon; the
# object comes from malloc() at a policy site), once with the public pool
# API and no policy, and with the pool API beside an audit and a learn
# policy's pool.
#
# Then the victim of issue 20 (tests/progs/api_tamper_reload): a program
# that parses its configuration, is protected at on-call:poll, then reloads
# it from the same sites and writes into the reloaded copy.  Each row of
# the issue's table (one write, or three, as an attacker would make it,
# after the first protect) must leave the reloaded copy protected at the
# next trigger, or kill the process with a report, or be refused (the word
# is read-only now); then a sample of the systematic sweep (every word of
# the shim's .data/.bss, TLS and the metadata it maps, set to 0, 1,
# all-ones, the address of attacker memory, 2, 3, the guard's token as an
# attacker can make it, and a pointer to a copy, in attacker memory, of what
# the word points to): no silent write-through, and every kill by the shim
# in the journal (the program plays journald).
# TAMPER_PART=rows|sweep|api runs that part alone (make tamper runs the
# sweep and api_tamper side by side).
# TAMPER_FULL=1 (make tamper) sweeps every word instead of the sample, and
# runs api_tamper beside an audit policy too; the rows are make check's.
#
# Thousands of enforced writes: each report would be a journal entry, so
# the journal is hidden in a private mount namespace (as e2e_nojournal.sh
# does) and the reports go to a file.
# Root and unshare -m are needed for that; the script runs itself again in
# the new namespace.
if [ -z "${E2E_PRIVATE_NS:-}" ]; then
	[ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null ||
		{ echo "skipped: needs root and unshare -m (to hide the journal)"; exit 77; }
	E2E_PRIVATE_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/e2e_lib.sh"

# Under make check-sanitize the shim's UBSan can see a word corrupted here on
# purpose (a pointer set to 1 is misaligned) before the kernel does: its
# report must end the run by a signal (SIGABRT), as the fault would, not by
# exit(1).  No effect on a build without UBSan.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}abort_on_error=1

private_journal_dir
part() { [ -z "${TAMPER_PART:-}" ] || [ "$TAMPER_PART" = "$1" ]; }
PROG=$B/progs/api_tamper
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
RELOAD=$B/progs/api_tamper_reload
[ -x "$RELOAD" ] || fail "$RELOAD is missing: run make check"

# reload_conf PROTECTION [MORE POOL SETTINGS]
reload_conf() {
	printf '%s\n' 'version = 1;' 'policies = (' \
		'  { name = "reload"; match = { exe = [ "*/api_tamper_reload" ]; }; mode = "enforce";' \
		"    protection = \"$1\";" \
		"    pools = ( { name = \"config\"; sites = [ \"parse_config\" ]; protect = [ \"on-call:poll\" ]; ${2:-} } ); }" \
		');'
}
reload_conf seal >"$T/reload.conf"
reload_conf mprotect 'max_bytes = 1048576;' >"$T/reload_cap.conf"
if part rows; then
if [ -z "${TAMPER_FULL:-}" ]; then
	for row in site_route site_armed max_bytes capped_used dirty regions region span_cursor pool_lock_owner \
		mseal fills table rules client_fd arena_size prog_segv; do
		conf=$T/reload.conf
		case $row in max_bytes | capped_used) conf=$T/reload_cap.conf ;; esac
		PMALLOC_CONF=$conf "$RELOAD" row $row >"$T/out" 2>"$T/err" ||
			fail "row $row: $(cat "$T/out"; tail -n 5 "$T/err")"
		pass "$(cat "$T/out")"
	done
fi
# Issue 27's table, rows 1-4 and 7: one write each, with the value an
# attacker chooses (the guard's token as she can make it, a fake region or
# free run shaped as the shim's in her memory, the program's own jump
# buffer, the thread's own id, a flag set, a magic or unit head zeroed).
# Each must be killed with a report or stopped at the hand-out, and every
# kill must reach the journal: the program plays journald (a socket at its
# path, in this namespace's private /run/systemd/journal).  The rows of the
# arena's hand-out run under protection = "mprotect", the store before the
# next trigger: under "seal" the kernel refuses to reopen the memory
# anyway, and a protect would notice the span lists.  And a row make tamper
# found: the lock of the handler's installation set to "held" (by thread 1,
# by the thread itself) made the next protect wait for ever.
reload_conf mprotect >"$T/reload_mprotect.conf"
for row in busy_token active_region next_unit free_runs walk_env report_owner entry_busy pool_magic unit_head \
	install_lock install_lock_self; do
	conf=$T/reload.conf
	case $row in next_unit | free_runs) conf=$T/reload_mprotect.conf ;; esac
	TAMPER_JOURNAL=1 PMALLOC_CONF=$conf "$RELOAD" row $row >"$T/out" 2>"$T/err" ||
		fail "row $row: $(cat "$T/out"; tail -n 5 "$T/err")"
	pass "$(cat "$T/out")"
done
fi
if part sweep; then
words=150
[ -n "${TAMPER_FULL:-}" ] && words=0     # every word
# TAMPER_SHARDS=N (make tamper): the sweep split over N processes, each in a
# mount namespace of its own with its own fake journald; their figures summed.
shards=${TAMPER_SHARDS:-1}
for k in $(seq 0 $((shards - 1))); do
	unshare -m --propagation private bash -c 'mount -t tmpfs -o mode=0755 pmalloc-e2e "$1" && shift && exec "$@"' \
		sweep "$JOURNAL_DIR" env TAMPER_SHARD=$k/$shards TAMPER_JOURNAL=1 PMALLOC_CONF="$T/reload.conf" \
		"$RELOAD" sweep $words >"$T/sweep.$k" 2>"$T/sweep-err.$k" &
done
wait
# Every shard said, its failures in full, before any fails the test.
failed=
for k in $(seq 0 $((shards - 1))); do
	if grep -q 'all held$' "$T/sweep.$k"; then
		pass "sweep $k/$shards: $(tr '\n' ' ' <"$T/sweep.$k" | sed 's/api_tamper_reload: //g')"
	else
		echo "sweep $k/$shards FAILED: $(cat "$T/sweep.$k"; tail -n 5 "$T/sweep-err.$k")"
		failed="$failed $k"
	fi
done
[ -z "$failed" ] || fail "sweep: shards$failed of $shards failed (above)"
if [ "$shards" -gt 1 ]; then
	# The shards' words, runs and outcomes added up.
	sed -n 's/^api_tamper_reload: \([0-9]*\) words tried of [0-9]* .*, \([0-9]*\) runs$/words \1\nruns \2/p
		s/^api_tamper_reload:   kills by the shim not in the journal: \([0-9]*\)$/unjournaled \1/p
		s/^api_tamper_reload:   \([a-zA-Z (),-]*\): \([0-9]*\) (.*$/\1@\2/p' "$T"/sweep.[0-9]* |
		awk -F'@| ' '/@/ { split($0, kv, "@"); sum[kv[1]] += kv[2]; if (!(kv[1] in at)) at[kv[1]] = ++n; next }
			{ sum[$1] += $2; if (!($1 in at)) at[$1] = ++n }
			END { for (k in at) line[at[k]] = k ": " sum[k]; for (i = 1; i <= n; i++) printf "%s; ", line[i] }' >"$T/out"
	pass "sweep, all shards: $(cat "$T/out")"
fi
fi

if part api; then
cat >"$T/enforce.conf" <<'EOF'
version = 1;
policies = (
  { name = "tamper"; match = { exe = [ "*/api_tamper" ]; }; mode = "enforce";
    pools = ( { name = "secrets"; sites = [ "make_secret" ]; protect = [ "manual" ]; } ); }
);
EOF

# tampered MODE CONF: every run of api_tamper MODE died.
tampered() {
	local rc
	TAMPER_JOURNAL=1 PMALLOC_CONF=$2 "$PROG" "$1" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 0 ] || fail "api_tamper $1 (exit $rc): $(head -n 200 "$T/out"; tail -n 5 "$T/err")"
	grep -q '^api_tamper: [0-9]* runs (.*): all died$' "$T/out" || fail "api_tamper $1: $(cat "$T/out")"
	grep -q '^api_tamper: [0-9]* killed at the store, every one in the journal$' "$T/out" ||
		fail "api_tamper $1: $(cat "$T/out")"
	# The runs were enforced by the shim, not killed some other way.
	grep -q '; policy "tamper"; enforce: killed by SIGSEGV$\|; enforce: killed by SIGSEGV$' "$T/err" ||
		fail "api_tamper $1: no enforce report: $(head -n 3 "$T/err")"
	pass "$1: $(tr '\n' ' ' <"$T/out")"
}

# Rows the sweeps found (issue 27): the site table's pointer forged with no
# policy (the pool API alone) took the fault handler's report down with it,
# the kill silent; so did the armed state's pointer, read-only now armed or
# not (api_tamper checks it); the report lock's owner forged (1, an
# address) made a loaded machine's run hang for seconds before the lock was
# taken over.  Each killed at the store with its report.
for row in site_table+0 report_owner+0; do
	TAMPER_ONLY=$row TAMPER_JOURNAL=1 PMALLOC_CONF=/nonexistent/pmalloc-test.conf "$PROG" api >"$T/out" 2>"$T/err" ||
		fail "row $row (api): $(cat "$T/out"; tail -n 5 "$T/err")"
	grep -q '^api_tamper: [1-9][0-9]* killed at the store, every one in the journal$' "$T/out" ||
		fail "row $row (api): $(cat "$T/out")"
	pass "row $row (api): $(grep 'killed at the store' "$T/out" | sed 's/^api_tamper: //')"
done

# api_tamper in its three ways (some 3,000 forked runs each); beside a
# learn policy only in make check, beside an audit one too in make tamper.
tampered policy "$T/enforce.conf"
[ "$(grep -c 'write to protected pool "secrets" .*; policy "tamper"; enforce: killed by SIGSEGV$' "$T/err")" -gt 0 ] ||
	fail "policy: the object was not in pool \"secrets\": $(head -n 3 "$T/err")"
tampered api /nonexistent/pmalloc-test.conf
grep -q 'policy "' "$T/err" && fail "api: a policy applied: $(grep -m1 'policy "' "$T/err")"

# The pool API beside an audit, then a learn policy's pool: the API pool
# is enforced, also when a span's owner is made to name the policy's pool.
beside="audit learn"
[ -z "${TAMPER_FULL:-}" ] && beside=learn
for mode in $beside; do
	sed "s/mode = \"enforce\";/mode = \"$mode\";/" "$T/enforce.conf" >"$T/$mode.conf"
	tampered api-beside "$T/$mode.conf"
	grep -q 'audit: write allowed$' "$T/err" && fail "api-beside $mode: a write was allowed: $(grep -m1 'audit: write allowed$' "$T/err")"
done

# Learn mode's writable words, each forged in 20 fresh processes: a forked
# run's periodic flush thread starts at once and races the store.  With the
# learn state's pointer forged it read through it and the process died in
# the shim before its kill was reported: one fresh process in six, once in
# the 3,000 runs above (a make check in four or five).  The state and its
# tables' pointers are in a read-only page now; these are what is left.
runs=0
for w in n_ctx tick lost marks named n_named named_seal marks_sent unsent flusher flush_epoch wait_flush \
	wait_flush_due learn_lock flush_lock; do
	for i in $(seq 1 20); do
		TAMPER_ONLY=$w+0 TAMPER_JOURNAL=1 PMALLOC_CONF=$T/learn.conf "$PROG" api-beside >"$T/out" 2>"$T/err" ||
			fail "learn word $w (fresh run $i): $(cat "$T/out"; tail -n 5 "$T/err")"
		runs=$((runs + $(sed -n 's/^api_tamper: \([0-9]*\) runs (.*/\1/p' "$T/out")))
	done
done
[ "$runs" -ge 400 ] || fail "the learn words were tried in $runs runs only (renamed?)"
pass "learn mode's writable words, each in 20 fresh processes: $runs runs, every kill in the journal"
fi
exit 0
