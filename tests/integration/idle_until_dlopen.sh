#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# idle_until_dlopen.sh - a policy none of whose rules resolves among the
# objects a process loaded at start-up routes nothing there: the process
# runs the idle shim's entries (what no policy costs), and a dlopen puts
# the routing back in, so the library it brings is found at its first
# allocation and its named site's objects go to the pool (protected at the
# trigger, a write into one kills).  A dlopen by a bare name still finds
# the library by its caller's RUNPATH (the shim's dlopen jumps to glibc's,
# the caller kept).  And with a rule that resolves at start-up, the
# process routes from the start and the plugin's site still after its
# dlopen.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/ip_dlopen
PLUGIN=$B/progs/libip_plugin.so
[ -x "$PROG" ] && [ -e "$PLUGIN" ] || fail "ip_dlopen or its plugin is missing: run make check"
export PMALLOC_SOCKET=$T/no-daemon.sock

conf() { # SITES
	cat >"$T/p.conf" <<EOC
version = 1;
policies = ( { name = "plug"; match = { exe = [ "*/ip_dlopen" ]; };
  pools = ( { name = "plug"; protect = [ "on-call:listen" ]; sites = [ $1 ]; } ); } );
EOC
}

conf '"libip_plugin.so:plugin_init", "no_such_function"'
PMALLOC_DEBUG=1 PMALLOC_CONF=$T/p.conf LD_PRELOAD=$SHIM "$PROG" "$PLUGIN" >"$T/out" 2>"$T/err" ||
	fail "ip_dlopen: $(cat "$T/out" "$T/err")"
grep -q 'allocations not routed until a dlopen' "$T/err" ||
	fail "no rule resolves at start-up, yet the process routes: $(grep -v '^pmalloc.*site ' "$T/err" | head -20)"
grep -q '^plugin_init: struct 1, name 1, table 1' "$T/out" || fail "plugin_init's objects not in the pool: $(cat "$T/out")"
grep -q '^plugin_scratch 0, main 0' "$T/out" || fail "other sites routed: $(cat "$T/out")"
rc=0; PMALLOC_CONF=$T/p.conf LD_PRELOAD=$SHIM "$PROG" "$PLUGIN" write >/dev/null 2>"$T/err" || rc=$?
[ $rc = 139 ] || fail "a write into plugin_init's name: exit $rc, expected SIGSEGV: $(cat "$T/err")"
pass "idle until the dlopen; then the plugin's site routed to the pool and protected (a write kills)"

# A bare name, found by the caller's RUNPATH ($ORIGIN: the program's
# directory, where the plugin is): glibc must still see the program as the
# caller.
if command -v cc >/dev/null; then
	cat >"$T/bare.c" <<'EOC'
#include <dlfcn.h>
#include <stdio.h>
int main(void)
{
	void *h = dlopen("libip_plugin.so", RTLD_NOW);
	printf("%s\n", h ? "found" : dlerror());
	return h ? 0 : 1;
}
EOC
	cp "$PLUGIN" "$T/libip_plugin.so"
	cc -o "$T/ip_dlopen" "$T/bare.c" -Wl,--enable-new-dtags,-rpath,'$ORIGIN' 2>"$T/cc.err" ||
		fail "cannot build the bare-name program: $(cat "$T/cc.err")"
	out=$(PMALLOC_CONF=$T/p.conf LD_PRELOAD=$SHIM "$T/ip_dlopen" 2>&1) || fail "bare name under the shim: $out"
	[ "$out" = found ] || fail "bare name: $out"
	pass "dlopen by a bare name found by the caller's RUNPATH under the shim"
fi

# A rule that resolves at start-up (ip_dlopen's corrupt(), which never
# allocates): the filter's entries are in force from the start, and the
# plugin's site is still routed after its dlopen.
conf '"libip_plugin.so:plugin_init", "corrupt"'
PMALLOC_DEBUG=1 PMALLOC_CONF=$T/p.conf LD_PRELOAD=$SHIM "$PROG" "$PLUGIN" >"$T/out" 2>"$T/err" ||
	fail "ip_dlopen with corrupt named: $(cat "$T/out" "$T/err")"
grep -q 'allocations not routed until a dlopen' "$T/err" && fail "a rule resolved, yet the process did not route"
grep -q '^plugin_init: struct 1, name 1, table 1' "$T/out" || fail "plugin_init's objects not in the pool: $(cat "$T/out")"
grep -q '^plugin_scratch 0, main 0' "$T/out" || fail "other sites routed: $(cat "$T/out")"
pass "a rule resolved at start-up: routed from the start, the plugin's site after its dlopen"
exit 0
