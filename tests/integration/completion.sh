#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# completion.sh - the bash completions make install ships: commands,
# options per command, preload's actions, pmallocd's options, loaded the
# way bash-completion loads them.
. "$(dirname "$0")/lib.sh"

bc=/usr/share/bash-completion/bash_completion
[ -f "$bc" ] || skip "bash-completion not installed"
out=$(bash -c '
	source "$1"; source "$2/completion/pmallocctl.bash"; source "$2/completion/pmallocd.bash"
	t() { local f=$1; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}; COMPREPLY=(); $f; echo "$*|${COMPREPLY[*]}"; }
	t _pmallocctl pmallocctl ""
	t _pmallocctl pmallocctl vi
	t _pmallocctl pmallocctl violations --f
	t _pmallocctl pmallocctl violations --since ""
	t _pmallocctl pmallocctl status --
	t _pmallocctl pmallocctl preload ""
	t _pmallocctl pmallocctl preload enable --r
	t _pmallocd pmallocd --c
' _ "$bc" "$SRC" 2>&1) || fail "completion failed: $out"
want='pmallocctl |check status violations learn exercise propose ready learn-flush sites protect preload
pmallocctl vi|violations
pmallocctl violations --f|--follow --full --file
pmallocctl violations --since |today yesterday now -1h -10min -1d
pmallocctl status --|--socket --json --pid --help
pmallocctl preload |enable disable status
pmallocctl preload enable --r|--root
pmallocd --c|--config --check'
[ "$out" = "$want" ] || fail "completions:
$out
expected:
$want"
pass "bash completion of pmallocctl and pmallocd"
exit 0
