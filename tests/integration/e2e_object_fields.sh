#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# e2e_object_fields.sh - what a violation entry says about the victim, as
# systemd-coredump's entries do: the systemd unit and cgroup it ran in
# (OBJECT_SYSTEMD_UNIT, OBJECT_SYSTEMD_CGROUP, taken when it connected: it
# is dead when the entry is written) and the signal it died of
# (PMALLOC_SIGNAL); and, in the entries the shim writes itself when no
# pmallocd runs, its comm and exe captured at start-up and the exported
# function that wrote.  The program runs
# in a service's cgroup: a transient scope where systemd is PID 1, else a
# cgroup of ours, system.slice/pmalloc-e2e-PID.service, in systemd's
# hierarchy, and in the unified one too on a hybrid layout, as systemd
# does (removed afterwards).
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
DEMO=$(readlink -f "$DEMO")
if [ "$(cat /proc/1/comm)" = systemd ] && command -v systemd-run >/dev/null; then
	unit=pmalloc-e2e-$$.scope
	runin=(systemd-run --quiet --scope --collect --unit="$unit")
else
	if grep -q '^[0-9]*:name=systemd:' /proc/self/cgroup && [ -d /sys/fs/cgroup/systemd ]; then
		cgroot=/sys/fs/cgroup/systemd
	elif [ -f /sys/fs/cgroup/cgroup.procs ]; then
		cgroot=/sys/fs/cgroup
	else
		skip "no systemd cgroup hierarchy to make a service's cgroup in"
	fi
	unit=pmalloc-e2e-$$.service
	cg=$cgroot/system.slice/$unit
	made_slice=
	[ -d "$cgroot/system.slice" ] || made_slice=1
	mkdir -p "$cg" || skip "cannot make a cgroup in $cgroot"
	# A hybrid layout (cgroup2 at unified/ too): systemd puts a service in
	# both hierarchies, and reads its unit from the unified one.
	ucg= made_uslice=
	if [ "$cgroot" != /sys/fs/cgroup ] && [ -f /sys/fs/cgroup/unified/cgroup.procs ]; then
		ucg=/sys/fs/cgroup/unified/system.slice/$unit
		[ -d "${ucg%/*}" ] || made_uslice=1
		mkdir -p "$ucg" || skip "cannot make a cgroup in /sys/fs/cgroup/unified"
	fi
	rm_cgroup() {
		rmdir "$cg" 2>/dev/null; [ -n "$made_slice" ] && rmdir "$cgroot/system.slice" 2>/dev/null
		[ -n "$ucg" ] && rmdir "$ucg" 2>/dev/null && [ -n "$made_uslice" ] && rmdir "${ucg%/*}" 2>/dev/null
		true
	}
	at_exit rm_cgroup
	runin=(bash -c 'echo $$ >"$0/cgroup.procs" && { [ -z "$1" ] || echo $$ >"$1/cgroup.procs"; } &&
		shift && exec "$@"' "$cg" "$ucg")
fi

# field NAME: its value in the JSON entry $e (python: values may be arrays).
field() { python3 -c 'import json,sys
e = json.loads(sys.argv[1]); v = e.get(sys.argv[2])
print(v if isinstance(v, str) else "" if v is None else "|".join(map(str, v)))' "$e" "$1"; }
expect() { [ "$(field "$1")" = "$2" ] || fail "$3: $1='$(field "$1")', expected '$2'"; }
expect_cgroup() {
	case $(field OBJECT_SYSTEMD_CGROUP) in */"$unit") ;;
	*) fail "$1: OBJECT_SYSTEMD_CGROUP='$(field OBJECT_SYSTEMD_CGROUP)', expected .../$unit" ;; esac
}

# Through pmallocd.
write_conf "$CONF" <"$SRC/conf/pmalloc.conf"
start_daemon
hardened "$T/out" "$T/err" "${runin[@]}" "$DEMO" attack; rc=$?
pid=$HPID
[ $rc = 139 ] || fail "attack: exit $rc, want 139: $(cat "$T/out" "$T/err")"
e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) || fail "no violation entry for PID $pid"
expect SYSLOG_IDENTIFIER pmallocd "pmallocd's entry"
expect OBJECT_SYSTEMD_UNIT "$unit" "pmallocd's entry"
expect_cgroup "pmallocd's entry"
expect PMALLOC_SIGNAL 11 "pmallocd's entry"
expect PMALLOC_SIGNAL_NAME SIGSEGV "pmallocd's entry"
pass "pmallocd's violation entry: OBJECT_SYSTEMD_UNIT=$unit, OBJECT_SYSTEMD_CGROUP=$(field OBJECT_SYSTEMD_CGROUP), PMALLOC_SIGNAL=11"
e=$(jsel 1 MESSAGE_ID=$MID_HANDED OBJECT_PID=$pid) || fail "no hand-out entry for PID $pid"
expect OBJECT_SYSTEMD_UNIT "$unit" "the hand-out entry"
pass "the hand-out entry names the unit too"
stop_daemon

# shim_entry WHAT CMD...: run CMD (no daemon: the shim writes the entry
# itself), expect death by SIGSEGV, and its violation entry in $e.  The
# shim drops an entry rather than wait when journald's socket queue is full
# (the machine's journald is shared, and may be busy): up to three tries.
shim_entry() {
	local what=$1 try rc
	shift
	for try in 1 2 3; do
		E2E_CONF=$CONF hardened "$T/out" "$T/err" "$@"; rc=$?
		pid=$HPID
		[ $rc = 139 ] || fail "$what: exit $rc, want 139: $(cat "$T/out" "$T/err")"
		e=$(jsel 1 MESSAGE_ID=$MID_VIOLATION OBJECT_PID=$pid) && return 0
	done
	fail "$what: no violation entry in three tries (last PID $pid)"
}

# The shim alone: no daemon answers, the policy comes from the file.
shim_entry "shim alone" "${runin[@]}" "$DEMO" attack
expect SYSLOG_IDENTIFIER pmalloc "the shim's entry"
expect PMALLOC_COMM pmalloc-demo "the shim's entry"
expect PMALLOC_EXE "$DEMO" "the shim's entry"
expect PMALLOC_SIGNAL 11 "the shim's entry"
expect OBJECT_SYSTEMD_UNIT "$unit" "the shim's entry"
expect_cgroup "the shim's entry"
pass "the shim's own entry: PMALLOC_COMM, PMALLOC_EXE, PMALLOC_SIGNAL, OBJECT_SYSTEMD_UNIT, OBJECT_SYSTEMD_CGROUP"

# The shim's entry names the faulting function when the object exports it
# (.dynsym; no symbol file is read in the dying process): a pool API
# program built with -rdynamic, its write in poke().
cat >"$T/poke.c" <<'C'
#include <pmalloc.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) void poke(volatile char *p) { p[1] = 'x'; }
int main(void)
{
	struct pmalloc_pool *pool = pmalloc_create_pool();
	char *s = pstrdup(pool, "hello");
	pmalloc_protect_pool(pool);
	poke(s);
	return 0;
}
C
gcc -std=gnu11 -O1 -rdynamic -I"$SRC/include" -o "$T/poke" "$T/poke.c" -L"$B" -lpmalloc_shim \
	-Wl,-rpath,"$B" || fail "cannot build poke"
shim_entry poke "${runin[@]}" "$T/poke"
expect SYSLOG_IDENTIFIER pmalloc "poke's entry"
case $(field PMALLOC_FAULT_SYMBOL) in poke+0x[0-9a-f]*) ;;
*) fail "poke's entry: PMALLOC_FAULT_SYMBOL='$(field PMALLOC_FAULT_SYMBOL)', expected poke+0x..." ;; esac
expect PMALLOC_COMM poke "poke's entry"
pass "the shim's own entry names the exported function that wrote: $(field PMALLOC_FAULT_SYMBOL)"

# pmallocctl violations shows the unit in its JSON.
"$B/pmallocctl" violations --pid "$pid" --json >"$T/json" || fail "pmallocctl violations failed"
grep -q "\"OBJECT_SYSTEMD_UNIT\":\"$unit\"" "$T/json" || fail "pmallocctl --json lacks the unit: $(cat "$T/json")"
pass "pmallocctl violations --json carries OBJECT_SYSTEMD_UNIT"
exit 0
