#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pmallocctl's command line: --help and --version on stdout with exit 0; a
# missing or unknown command gives the usage on stderr and exit 2; words
# from the command line are echoed escaped.
. "$(dirname "$0")/lib.sh"

[ -x "$ctl" ] || skip "pmallocctl not built"

for args in --help -h; do
	run $args
	[ "$(rc)" = 0 ] || fail "$args: exit $(rc)"
	head -n 1 "$T/out" | grep -q '^Usage: pmallocctl ' || fail "$args: $(head -n 1 "$T/out")"
	for cmd in check status violations propose learn-flush sites protect preload; do
		grep -q "^  $cmd " "$T/out" || fail "$args: no $cmd in usage"
	done
	[ ! -s "$T/err" ] || fail "$args: stderr: $(cat "$T/err")"
done
# A command's --help is its own: its usage line and options, no other command.
for cmd in check status violations propose learn-flush sites protect preload; do
	for h in --help -h; do
		run $cmd $h
		[ "$(rc)" = 0 ] || fail "$cmd $h: exit $(rc)"
		head -n 1 "$T/out" | grep -q "^Usage: pmallocctl $cmd" || fail "$cmd $h: $(head -n 1 "$T/out")"
		for other in check status violations propose learn-flush sites protect preload; do
			[ $other = $cmd ] && continue
			grep -q "^Usage: pmallocctl $other\|^  $other " "$T/out" && fail "$cmd $h shows $other: $(cat "$T/out")"
		done
		grep -q '^Exit status: ' "$T/out" || fail "$cmd $h: no exit statuses"
		[ ! -s "$T/err" ] || fail "$cmd $h: stderr: $(cat "$T/err")"
	done
done
run violations --help
for opt in --pid --policy --since --until --lines --follow --json --directory --file; do
	grep -q -- "$opt" "$T/out" || fail "violations --help lacks $opt"
done
run --version
[ "$(rc)" = 0 ] && grep -qxE 'pmallocctl [0-9]+\.[0-9]+(\.[0-9]+)?' "$T/out" || fail "--version: $(cat "$T/out")"
if [ -x "$B/pmallocd" ]; then
	"$B/pmallocd" --version >"$T/out" 2>"$T/err"
	[ $? = 0 ] && grep -qxE 'pmallocd [0-9]+\.[0-9]+(\.[0-9]+)?' "$T/out" || fail "pmallocd --version: $(cat "$T/out" "$T/err")"
	[ "$(cat "$T/out")" = "$("$ctl" --version | sed 's/pmallocctl/pmallocd/')" ] || fail "versions differ"
	"$B/pmallocd" --frobnicate >"$T/out" 2>"$T/err"; r=$?
	[ $r = 2 ] || fail "pmallocd with a bad option: exit $r, expected 2 (as pmallocctl)"
	"$B/pmallocd" extra >"$T/out" 2>"$T/err"; r=$?
	[ $r = 2 ] || fail "pmallocd with an extra word: exit $r, expected 2"
fi
pass "--help, COMMAND --help, --version (pmallocctl and pmallocd); pmallocd's usage errors exit 2"

run
[ "$(rc)" = 2 ] && [ ! -s "$T/out" ] && [ "$(head -n 1 "$T/err")" = "pmallocctl: no command given" ] &&
	grep -q '^Usage: pmallocctl ' "$T/err" || fail "no command: exit $(rc): $(cat "$T/err")"
run frobnicate --json
[ "$(rc)" = 2 ] && [ ! -s "$T/out" ] && [ "$(head -n 1 "$T/err")" = "pmallocctl: unknown command 'frobnicate'" ] &&
	grep -q '^Usage: pmallocctl ' "$T/err" || fail "unknown command: exit $(rc): $(cat "$T/err")"
run --frobnicate
[ "$(rc)" = 2 ] && [ "$(head -n 1 "$T/err")" = "pmallocctl: unknown option '--frobnicate'" ] ||
	fail "unknown global option: exit $(rc): $(cat "$T/err")"
run violations -x
[ "$(rc)" = 2 ] && [ "$(head -n 1 "$T/err")" = "pmallocctl: unknown option '-x'" ] ||
	fail "unknown short option: exit $(rc): $(cat "$T/err")"
run status --socket
[ "$(rc)" = 2 ] && [ "$(head -n 1 "$T/err")" = "pmallocctl: missing argument to option '--socket'" ] ||
	fail "missing argument: exit $(rc): $(cat "$T/err")"
# Every command says a missing value as such (propose once said "unknown option").
for cmd in "check --frob" "status --socket" "violations --since" "propose --exe" "preload enable x --root" "protect 1 p --socket"; do
	set -- $cmd
	opt=${!#}
	run "$@"
	case $opt in
	--frob) want="pmallocctl: unknown option '--frob'" ;;
	*) want="pmallocctl: missing argument to option '$opt'" ;;
	esac
	[ "$(rc)" = 2 ] && [ "$(head -n 1 "$T/err")" = "$want" ] ||
		fail "$cmd: exit $(rc): $(cat "$T/err")"
done
# Options before or after a command's operands, as each --help shows them
# (learn UNIT --output FILE was once refused: its options stopped at UNIT).
if [ "$(id -u)" = 0 ] && [ -d /etc/systemd/system ]; then
	unit=pmalloc-clitest-$$.service
	printf '[Service]\nExecStart=/bin/true\n' >/etc/systemd/system/$unit
	rm_unit() { rm -f /etc/systemd/system/$unit; }
	at_exit rm_unit
	run learn $unit --output "$T/after.conf"
	[ "$(rc)" = 0 ] || fail "learn UNIT --output FILE: exit $(rc): $(cat "$T/err")"
	run learn --output "$T/before.conf" $unit
	[ "$(rc)" = 0 ] || fail "learn --output FILE UNIT: exit $(rc): $(cat "$T/err")"
	grep -qF "exe = [ \"$(readlink -f /bin/true)\"" "$T/after.conf" || fail "learn UNIT --output: $(cat "$T/after.conf")"
	cmp -s "$T/after.conf" "$T/before.conf" || fail "the two orders wrote different policies"
	run learn $unit --output "$T/x.conf" extra
	[ "$(rc)" = 2 ] && grep -q "unexpected argument 'extra'" "$T/err" || fail "learn UNIT extra: exit $(rc): $(cat "$T/err")"
	pass "learn UNIT --output FILE and learn --output FILE UNIT write the same policy"
fi
for order in "learn-flush 1 --socket $T/none.sock" "learn-flush --socket $T/none.sock 1" \
	"protect 1 p --socket $T/none.sock" "protect --socket $T/none.sock 1 p"; do
	run $order
	[ "$(rc)" = 3 ] || fail "$order: exit $(rc), not 3 (pmallocd not running): $(cat "$T/err")"
done
run $'\e]0;title\a'
[ "$(rc)" = 2 ] && [ "$(head -n 1 "$T/err")" = "pmallocctl: unknown command '\\x1b]0;title\\x07'" ] ||
	fail "escaped command: $(head -n 1 "$T/err" | od -c)"
pass "usage errors: exit 2, usage on stderr"
