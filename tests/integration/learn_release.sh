# SPDX-License-Identifier: GPL-2.0-or-later
# learn_release.sh - learn mode gives back the pages of objects freed
# before the trigger, and never a page that holds a live object:
# learn_release's pair (one context, one page) keeps its second object
# whole and resident after the first is freed twice; its 5-page buffer,
# freed, leaves its inner pages not resident.  After the trigger, the
# surviving object's write is let through and its context marked written,
# the freed buffer's context not.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/learn_release
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v jq >/dev/null || skip "jq not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock

cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "rel"; match = { exe = [ "$PROG" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-call:listen" ]; } ); } );
EOC
rc=0
PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$PROG" >"$T/out" 2>"$T/err" &
pid=$!
wait $pid || rc=$?
[ $rc = 0 ] || fail "learn run exited $rc: $(cat "$T/out" "$T/err")"
[ ! -s "$T/err" ] || fail "learn mode wrote to stderr: $(cat "$T/err")"
grep -qx "pair kept" "$T/out" || fail "the live object of a page with a freed one was not kept: $(cat "$T/out")"
grep -qx "buffer given back" "$T/out" || fail "the freed buffer's pages are still resident: $(cat "$T/out")"
grep -qx "written" "$T/out" || fail "no write after the trigger: $(cat "$T/out")"
pass "a freed object's pages given back, a page with a live object kept (a double free counted once)"

journal_sync
journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID=$pid \
	PMALLOC_LEARN_REASON=exit >"$T/learned.json"
pair=$(jq -c 'select(.PMALLOC_CHAIN | test("=make_pair "))' "$T/learned.json")
buffer=$(jq -c 'select(.PMALLOC_CHAIN | test("=make_buffer "))' "$T/learned.json")
[ "$(printf '%s' "$pair" | jq -r .PMALLOC_WRITTEN)" = 1 ] || fail "the pair's context not written: $pair"
[ "$(printf '%s' "$pair" | jq -r .PMALLOC_OBJECTS)" = 2 ] || fail "the pair's objects: $pair"
[ "$(printf '%s' "$buffer" | jq -r .PMALLOC_WRITTEN)" = 0 ] || fail "the buffer's context written: $buffer"
[ "$(printf '%s' "$buffer" | jq -r .PMALLOC_FREED_OBJECTS)" = 1 ] || fail "the buffer not counted freed: $buffer"
pass "the write after the trigger marks the pair's context; the freed buffer's context unwritten"
