# SPDX-License-Identifier: GPL-2.0-or-later
# learn_wrappers.sh - enforce mode routes by the rule a proposal assumes:
# along a learned call chain, the frames nearest the allocator are
# wrappers and the next one is the site, each written as a call offset
# pinned to the build-id ("OBJECT@BUILDID:+0xOFFSET", the chain's own
# frame text).  ip_wrapchain allocates its configuration through wrappers
# three and four levels deep (nginx's ngx_palloc -> ngx_palloc_block /
# ngx_palloc_large -> ngx_memalign -> posix_memalign; redis's zmalloc ->
# ztrymalloc_usable -> malloc and sdsnewlen -> s_malloc_usable ->
# ztrymalloc_usable -> malloc), and its requests through the same ones.
# Learned once under the generic learn policy, the policy built from the
# chains protects the configuration and nothing else, takes nothing after
# its trigger (take = "until-trigger"), and an injected write into the
# configuration dies by SIGSEGV.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/ip_wrapchain
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v jq >/dev/null || skip "jq not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock
cp "$PROG" "$T/"
exe=$T/ip_wrapchain

cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "generic"; match = { exe = [ "$exe" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-call:listen" ]; } ); } );
EOC
PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$exe" >"$T/out" 2>"$T/err" &
pid=$!
wait $pid || fail "learn run: exit $?: $(cat "$T/err")"
journal_sync
journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID=$pid >"$T/learned.json"

# For each context allocated by load_*: the frames before the load_ one
# (wrappers) and that one (the site), as pinned call offsets.
jq -r 'select(.PMALLOC_OBJECTS != "0") | .PMALLOC_CHAIN | split(" ")
	| (map(test("=load_")) | index(true)) as $k | select($k != null)
	| .[0:$k + 1] | map(sub("=.*"; "") | sub("^.*/"; "") | sub("\\+0x"; ":+0x"))
	| (.[0:-1][] | "w " + .), ("s " + .[-1])' "$T/learned.json" | sort -u >"$T/rules"
[ "$(grep -c '^s ' "$T/rules")" = 4 ] || fail "expected 4 sites (load_conf twice, load_commands, load_names): $(cat "$T/rules") $(cat "$T/learned.json")"
[ "$(grep -c '^w ' "$T/rules")" -ge 7 ] || fail "expected 7 wrapper calls: $(cat "$T/rules")"
grep -qv '^[ws] ip_wrapchain@[0-9a-f]*:+0x[0-9a-f]*$' "$T/rules" && fail "not pinned offsets: $(cat "$T/rules")"
list() { sed -n "s/^$1 \(.*\)/\"\1\"/p" "$T/rules" | paste -sd, -; }
cat >"$T/enforce.conf" <<EOC
version = 1;
policies = ( { name = "pinned"; match = { exe = [ "$exe" ]; }; mode = "enforce";
  pools = ( { name = "conf"; sites = [ $(list s) ]; wrappers = [ $(list w) ];
              protect = [ "on-call:listen" ]; take = "until-trigger"; } ); } );
EOC
"$B/pmallocctl" check "$T/enforce.conf" >"$T/check" 2>&1 || fail "check: $(cat "$T/check") $(cat "$T/enforce.conf")"

rc=0; PMALLOC_CONF=$T/enforce.conf LD_PRELOAD=$SHIM "$exe" >"$T/out" 2>"$T/err" || rc=$?
[ $rc = 0 ] || fail "enforce run exited $rc: $(cat "$T/err")"
printf 'conf 1 1 1 1\nrequest 0 0 0 0\nlate conf 0 0 0 0\nlate request 0 0 0 0\nserver_name learn get localhost\n' >"$T/want"
diff "$T/want" "$T/out" >"$T/diff" || fail "routing by pinned wrappers: $(cat "$T/diff") with $(cat "$T/enforce.conf")"
pass "pinned call offsets from learned chains, as wrappers 3 and 4 levels deep: the configuration protected, requests not"

since=@$(date +%s)
rc=0; PMALLOC_CONF=$T/enforce.conf LD_PRELOAD=$SHIM "$exe" write-conf >"$T/out" 2>"$T/err" || rc=$?
[ $rc = 139 ] || fail "write into the configuration: exit $rc, expected SIGSEGV: $(cat "$T/err")"
grep -q 'write to protected pool "conf" .*policy "pinned"; enforce: killed by SIGSEGV' "$T/err" ||
	fail "report line: $(cat "$T/err")"
pass "a write into the configuration kills"

# take = "until-trigger": each site allocating after the trigger said once.
journal_sync
late=$(journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LATE PMALLOC_TAKE=late PMALLOC_EXE="$exe")
[ "$(printf '%s\n' "$late" | grep -c .)" -ge 4 ] || fail "late sites not said: $late"
[ "$(printf '%s\n' "$late" | jq -r '[.OBJECT_PID, .PMALLOC_SITE] | @tsv' | sort | uniq -d | wc -l)" = 0 ] ||
	fail "a late site said twice by one process: $late"
pass "take = until-trigger: each site allocating after the trigger said once in the journal"

# pmallocctl status PID: the late sites, what went to the heap.
sed 's/"pinned"/"served"/' "$T/enforce.conf" >"$CONF"
start_daemon
mkfifo "$T/in"
PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$T/nonexistent LD_PRELOAD=$SHIM "$exe" hold <"$T/in" >"$T/out" 2>"$T/err" &
hpid=$!
exec 9>"$T/in"
wait_until 200 grep -q '^ready' "$T/out" || fail "ip_wrapchain hold: $(cat "$T/out" "$T/err")"
"$B/pmallocctl" status "$hpid" --socket "$SOCK" >"$T/status" 2>&1 || fail "status: $(cat "$T/status")"
[ "$(grep -c "^      site ip_wrapchain+0x[0-9a-f]*  pool \"conf\": 1 objects, [0-9]* bytes to the heap after the pool's trigger (take = \"until-trigger\")$" "$T/status")" = 4 ] ||
	fail "status: late sites: $(cat "$T/status")"
# Its one pool closed and protected: the byte that says so (site.h: the
# granules of the policy's filter, 64 KiB, then the closed byte) is set,
# in a read-only page of the shim.
off=$(nm "$SHIM" | awk '$3 == "site_policy" { print $1 }')
[ -n "$off" ] || fail "no site_policy in $SHIM's symbols"
closed=$(python3 - "$hpid" "$off" "$(realpath "$SHIM")" <<'EOP'
import sys
pid, off, lib = int(sys.argv[1]), int(sys.argv[2], 16), sys.argv[3]
maps = [l.split() for l in open(f"/proc/{pid}/maps")]
span = lambda m: [int(x, 16) for x in m[0].split('-')]
base = min(span(m)[0] for m in maps if len(m) >= 6 and m[5] == lib and int(m[2], 16) == 0)
addr = base + off + 65536
perms = next(m[1] for m in maps if span(m)[0] <= addr < span(m)[1])
with open(f"/proc/{pid}/mem", "rb") as f:
    f.seek(addr)
    print(perms, f.read(1)[0])
EOP
)
[ "$closed" = "r--p 1" ] || fail "the closed byte: $closed (want it set, read-only)"
exec 9>&-
wait "$hpid" || fail "ip_wrapchain hold exited $?: $(cat "$T/err")"
pass "pmallocctl status PID: each late site with what went to the heap; every pool closed, said by a read-only byte"
