# SPDX-License-Identifier: GPL-2.0-or-later
# servers_lib.sh - helpers the server tests share (learn_servers.sh,
# lifecycle_servers.sh): sourced after lib.sh, never run alone.  Owns no
# server and starts nothing.  Sets SHIM, INJECT (the attacker,
# liblearn_inject.so) and ctl, and skips without curl.

SHIM=$B/libpmalloc_shim.so
INJECT=$B/progs/liblearn_inject.so
ctl=$B/pmallocctl
[ -f "$INJECT" ] || fail "$INJECT is missing: run make check"
command -v curl >/dev/null || skip "curl not installed"

# TEXT read backwards: liblearn_inject.so takes its needle so, that the
# variable itself (which a server may copy) does not match.
reverse() { local s=$1 r= i; for ((i = ${#s} - 1; i >= 0; i--)); do r+=${s:i:1}; done; printf %s "$r"; }

# Is SITE (a violation's "FUNCTION+0xOFF" or "OBJECT+0xOFF") a site of the
# proposal FILE: by function name, or by offset in its object?
proposed() { # SITE FILE
	local name=${1%+0x*} off=${1##*+0x}
	grep -q "\"[^\"]*:$name\"" "$2" || grep -Eq "\"$name(@[0-9a-f]+)?:\\+0x$off\"" "$2"
}
