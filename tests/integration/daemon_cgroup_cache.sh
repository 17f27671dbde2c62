# SPDX-License-Identifier: GPL-2.0-or-later
# daemon_cgroup_cache.sh - pmallocd reads a client's cgroup once per
# cgroup, then knows it by the cgroup's id (PIDFD_GET_INFO), where that id
# names systemd's path: cgroup v2, or a hybrid layout (cgroup2 at
# /sys/fs/cgroup/unified), whose unified hierarchy is the one systemd reads
# units from.  In two cgroups of ours, as systemd would make a service's
# (in every hierarchy it uses), clients come in turns A A B A B B:
#   - each hand-out entry names its own client's unit, slice and cgroup,
#     whichever came before it;
#   - /proc/PID/cgroup is read twice (once per cgroup), not six times.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"

command -v strace >/dev/null || skip "strace not installed"
strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
	roots=(/sys/fs/cgroup)
elif [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] &&
     [ -f /sys/fs/cgroup/systemd/cgroup.procs ]; then
	roots=(/sys/fs/cgroup/systemd /sys/fs/cgroup/unified)
else
	skip "legacy cgroup layout: the cgroup is read for every client there"
fi
slice=pmalloc-cgc-$$.slice
for r in "${roots[@]}"; do
	mkdir -p "$r/$slice/a.service" "$r/$slice/b.service" || skip "cannot make cgroups in $r"
done
rm_cgroups() {
	local r
	for r in "${roots[@]}"; do
		rmdir "$r/$slice/a.service" "$r/$slice/b.service" "$r/$slice" 2>/dev/null
	done
	true
}
at_exit rm_cgroups

# run_in CG CMD...: run CMD in cgroup CG of every hierarchy systemd uses.
run_in() {
	bash -c 'cg=$0; for r in '"${roots[*]}"'; do echo $$ >"$r/$cg/cgroup.procs" || exit 1; done
		exec "$@"' "$slice/$1" "${@:2}"
}

journald_ensure
std_conf "$CONF"
start_daemon
ntasks=$(ls /proc/"$DPID"/task | wc -l)
strace -qq -f -e trace=openat -o "$T/trace" -p "$DPID" &
SPID=$!
strace_stop() { kill -INT "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; true; }
at_exit strace_stop
wait_until 100 sh -c "[ \$(grep -l '^TracerPid:[[:space:]]*[1-9]' /proc/$DPID/task/*/status | wc -l) = $ntasks ]" ||
	fail "strace did not attach to pmallocd's $ntasks threads"

turns=(a a b a b b)
pids=()
for u in "${turns[@]}"; do
	out=$(run_in "$u.service" "$WIRE" --socket "$SOCK" --comm wire_client) || fail "client in $u: $out"
	printf '%s\n' "$out" | grep -qx "POLICY generation=1" || fail "client in $u: no policy: $out"
	pids+=("$(printf '%s\n' "$out" | sed -n 's/^pid=//p')")
done
for i in "${!turns[@]}"; do
	u=${turns[$i]}.service
	e=$(jwait 1 MESSAGE_ID="$MID_HANDED" OBJECT_PID="${pids[$i]}") || fail "no hand-out entry for PID ${pids[$i]}"
	expect_field "$e" OBJECT_SYSTEMD_UNIT "$u"
	expect_field "$e" OBJECT_SYSTEMD_SLICE "$slice"
	expect_field "$e" OBJECT_SYSTEMD_CGROUP "/$slice/$u"
done
pass "clients in turns ${turns[*]}: each hand-out entry names its own unit, slice and cgroup"

sleep 0.2
strace_stop
reads=$(grep -c 'openat(.*"/proc/[0-9]*/cgroup"' "$T/trace")
[ "$reads" = 2 ] || fail "$reads reads of /proc/PID/cgroup for ${#turns[@]} clients in 2 cgroups, want 2: $(grep '/cgroup"' "$T/trace")"
pass "/proc/PID/cgroup read $reads times for ${#turns[@]} clients in 2 cgroups (${roots[*]})"
