#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# host_symbols.sh - the shim binds to nothing of its host.  Besides libc
# the shim imports nothing: libconfig and the unwinder are private copies
# with hidden symbols, so a program's own config_init (lighttpd has one)
# or _Unwind_Backtrace is never called by the shim, and the program never
# gets the shim's copies.
#
# The names that must stay private are worked out here from what the shim
# is built from (its objects' imports that libc does not define, libconfig's
# archive, the unwinder's functions in the shim); build/progs/host_names
# must export every one of them (its list is checked, never stale), each
# aborting loudly if called.  It and Debian's lighttpd (a private config
# on 127.0.0.1, a free port) then run under the shim in the four ways a
# process gets its policy: standalone (no daemon, the policy file),
# pmallocd up (the hand-out), pmallocd stopped (killed, its socket left:
# connection refused, the file), pmallocd hung (SIGSTOP past the hand-out
# wait, the file).
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure                  # the daemon's violation entry is read back
PROG=$B/progs/host_names
[ -x "$PROG" ] || fail "$PROG not built"
LIGHTTPD=/usr/sbin/lighttpd
[ -x "$LIGHTTPD" ] || fail "$LIGHTTPD not installed (make test-deps)"
for t in curl nm; do command -v "$t" >/dev/null || fail "$t not installed"; done
LIBC=$(ldd "$PROG" | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -f "$LIBC" ] || fail "no libc found for $PROG"

# Names no object of the shim may import from anyone but libc, and the
# ones it may: crtbegin's weak hooks (every library has them, libc too);
# in make check-sanitize, the sanitizer's runtime (that build only).
allowed_import() {
	case $1 in
	_ITM_deregisterTMCloneTable | _ITM_registerTMCloneTable | __gmon_start__) return 0 ;;
	_GLOBAL_OFFSET_TABLE_) return 0 ;; # the linker's own
	__ubsan_* | __asan_* | __sanitizer_*) return 0 ;;
	esac
	return 1
}

# ---- The names, from what the shim is built from.
nm -D --defined-only "$LIBC" | awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u >"$T/libc"
objs=$(find "$B/pic" -name '*.o' ! -name standalone.o)
[ -n "$objs" ] || fail "no shim objects under $B/pic"
# shellcheck disable=SC2086
nm -g --defined-only $objs | awk 'NF == 3 { print $3 }' | sort -u >"$T/own"
# shellcheck disable=SC2086
nm -u $objs | awk 'NF == 2 { print $2 }' | sort -u | comm -23 - "$T/own" | comm -23 - "$T/libc" |
	while read -r n; do allowed_import "$n" || echo "$n"; done >"$T/names"
grep -qx config_init "$T/names" || fail "the shim's objects do not call config_init: $(tr '\n' ' ' <"$T/names")"
grep -qx _Unwind_Backtrace "$T/names" || fail "the shim's objects do not call _Unwind_Backtrace"
[ -f "$B/libconfig_private.a" ] || fail "$B/libconfig_private.a not built"
nm -g --defined-only "$B/libconfig_private.a" | awk 'NF == 3 { print $3 }' >>"$T/names"
eh=$(${CC:-cc} -print-file-name=libgcc_eh.a)
[ -f "$eh" ] || fail "libgcc_eh.a not found"
nm "$SHIM" | awk '{ print $NF }' | sort -u >"$T/shim-all"
nm -g --defined-only "$eh" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u | comm -12 - "$T/shim-all" >>"$T/names"
sort -u -o "$T/names" "$T/names"
n_names=$(wc -l <"$T/names")
[ "$n_names" -ge 100 ] || fail "only $n_names names: $(tr '\n' ' ' <"$T/names")"

nm -D --defined-only "$PROG" | awk '{ print $3 }' | sort -u >"$T/prog"
missing=$(comm -23 "$T/names" "$T/prog" | tr '\n' ' ')
[ -z "$missing" ] || fail "tests/progs/host_names.c does not define and export: $missing"
pass "host_names exports all $n_names names the shim keeps private (libconfig's, the unwinder's)"

# ---- The shim's dynamic symbols: none of those names, in or out.
nm -D --undefined-only "$SHIM" | awk '{ print $2 }' >"$T/imports"
bad=
while read -r s; do
	case $s in *@GLIBC_*) continue ;; esac
	allowed_import "${s%@*}" || bad="$bad $s"
done <"$T/imports"
[ -z "$bad" ] || fail "the shim imports from outside libc:$bad"
nm -D --defined-only "$SHIM" | awk '{ print $3 }' | sed 's/@.*//' | sort -u | comm -12 - "$T/names" >"$T/leak"
[ ! -s "$T/leak" ] || fail "the shim exports its private copies: $(tr '\n' ' ' <"$T/leak")"
needed=$(readelf -d "$SHIM" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v -e '^libc\.so\.' -e '^libubsan\.so\.' | tr '\n' ' ')
[ -z "$needed" ] || fail "the shim needs libraries besides libc: $needed"
pass "the shim imports only libc's versioned symbols, needs only libc, exports none of the private names"

# ---- The policies: host_names protected; the shipped file otherwise
# (no lighttpd policy: the shim reads the whole file all the same).
host_policy='  , { name = "host"; match = { exe = [ "*/host_names" ]; }; mode = "enforce";\n      pools = ( { name = "secret"; sites = [ "load_secret" ]; protect = [ "on-call:listen" ]; } ); }\n);'
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
sed -i "s|^);\$|$host_policy|" "$CONF"
write_conf "$T/file.conf" <"$CONF"
grep -q '"host"' "$CONF" || fail "the test policy was not added"

# ---- lighttpd on loopback, a free port, a private config; stopped by pid.
mkdir -p "$T/www"
echo "served under the shim" >"$T/www/index.html"
LPID=
lighttpd_stop() {
	[ -n "$LPID" ] && kill -TERM "$LPID" 2>/dev/null && wait_until 100 test ! -d "/proc/$LPID"
	[ -n "$LPID" ] && kill -KILL "$LPID" 2>/dev/null
	LPID=
	true
}
at_exit lighttpd_stop

# lighttpd_serves WHAT: start it under the shim (daemon socket $SOCK,
# policy file E2E_CONF), fetch a page, stop it; the shim's stderr must
# not show it unprotected by an error.
lighttpd_serves() {
	local what=$1 try port body
	for try in 1 2 3 4 5; do
		port=$((30000 + (RANDOM * 7 + $$ + try) % 30000))
		cat >"$T/lighttpd.conf" <<-EOF
			server.document-root = "$T/www"
			server.bind = "127.0.0.1"
			server.port = $port
			server.errorlog = "$T/lighttpd.error.log"
			index-file.names = ( "index.html" )
		EOF
		: >"$T/lighttpd.error.log"
		timeout -s KILL 30 env LD_PRELOAD="$SHIM" PMALLOC_SOCKET="$SOCK" PMALLOC_CONF="${E2E_CONF:-$NOFILE}" \
			PMALLOC_DEBUG=1 "$LIGHTTPD" -D -f "$T/lighttpd.conf" >"$T/lighttpd.out" 2>"$T/lighttpd.err" &
		LPID=$!
		if wait_until 200 curl -sf --max-time 2 -o "$T/page" "http://127.0.0.1:$port/"; then
			break
		fi
		if kill -0 "$LPID" 2>/dev/null; then
			fail "$what: lighttpd runs but does not answer on port $port: $(cat "$T/lighttpd.err" "$T/lighttpd.error.log")"
		fi
		wait "$LPID"
		local rc=$?
		LPID=
		grep -q "Address already in use" "$T/lighttpd.error.log" "$T/lighttpd.err" ||
			fail "$what: lighttpd exited ($rc) at start: $(cat "$T/lighttpd.err" "$T/lighttpd.error.log")"
	done
	[ -n "$LPID" ] || fail "$what: no free port for lighttpd in 5 tries"
	body=$(cat "$T/page")
	[ "$body" = "served under the shim" ] || fail "$what: lighttpd served '$body'"
	kill -TERM "$LPID"
	wait "$LPID"
	local rc=$?
	LPID=
	[ $rc = 0 ] || fail "$what: lighttpd exit status $rc after SIGTERM: $(cat "$T/lighttpd.err")"
	! grep -q -e "running unprotected" -e "was called" "$T/lighttpd.err" ||
		fail "$what: lighttpd under the shim: $(cat "$T/lighttpd.err")"
}

# host_runs WHAT WHY: host_names under the shim, protected, and killed by
# its write with the report line; WHY is the shim's debug line for the
# policy's source ("" for the daemon's hand-out).
host_runs() {
	local what=$1 why=$2 rc
	E2E_DEBUG=1 hardened "$T/out" "$T/err" "$PROG" || fail "$what: host_names exit $?: $(cat "$T/out" "$T/err")"
	grep -qx "protected 1" "$T/out" || fail "$what: host_names: $(cat "$T/out" "$T/err")"
	if [ -n "$why" ]; then
		grep -q "$why" "$T/err" || fail "$what: not '$why': $(cat "$T/err")"
	else
		! grep -q "reading the policy file" "$T/err" || fail "$what: the daemon did not answer: $(cat "$T/err")"
	fi
	E2E_DEBUG=1 hardened "$T/out" "$T/err" "$PROG" write
	rc=$?
	[ $rc = 139 ] || fail "$what: host_names write: exit $rc, want 139: $(cat "$T/out" "$T/err")"
	parse_report "$(grep 'write to protected pool' "$T/err")" || fail "$what: no report line: $(cat "$T/err")"
	[ "$R_POLICY" = host ] && [ "${R_SITE#load_secret+0x}" != "$R_SITE" ] ||
		fail "$what: report of policy '$R_POLICY', site '$R_SITE': $(cat "$T/err")"
	! grep -q "was called" "$T/err" || fail "$what: $(cat "$T/err")"
}

# 1. Standalone: no daemon, the policy file.
export E2E_CONF=$T/file.conf
host_runs "standalone" "no answer from pmallocd at $SOCK: No such file or directory; reading the policy file"
lighttpd_serves "standalone"
pass "standalone (policy file): host_names protected and killed by its write; lighttpd served a page"

# 2. pmallocd up: the hand-out; no file for the shim to read.
start_daemon
E2E_CONF=$NOFILE host_runs "pmallocd up" ""
E2E_CONF=$NOFILE lighttpd_serves "pmallocd up"
# The backtrace of a report goes to the daemon: the unwinder ran.
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$HPID) || fail "pmallocd up: no violation entry for PID $HPID"
expect_field "$e" PMALLOC_POLICY host
pass "pmallocd up (hand-out): host_names protected, killed, logged; lighttpd served a page"

# 3. pmallocd stopped: killed, its socket left behind, nobody listening.
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
[ -S "$SOCK" ] || fail "the killed daemon's socket is gone"
host_runs "pmallocd stopped" "no answer from pmallocd at $SOCK: Connection refused; reading the policy file"
lighttpd_serves "pmallocd stopped"
pass "pmallocd stopped (connection refused): host_names protected and killed by its write; lighttpd served a page"

# 4. pmallocd hung: stopped by SIGSTOP, the hand-out wait runs out.
rm -f "$SOCK"
start_daemon
stopped=
cont_daemon() { [ -n "$stopped" ] && [ -n "$DPID" ] && kill -CONT "$DPID" 2>/dev/null; true; }
at_exit_first cont_daemon
kill -STOP "$DPID"
stopped=1
host_runs "pmallocd hung" "no answer from pmallocd at $SOCK: Connection timed out; reading the policy file"
lighttpd_serves "pmallocd hung"
kill -CONT "$DPID"
stopped=
pass "pmallocd hung (SIGSTOP): host_names protected and killed by its write; lighttpd served a page"
stop_daemon || fail "pmallocd exit status $?: $(cat "$T/daemon.log")"
exit 0
