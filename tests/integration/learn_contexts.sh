# SPDX-License-Identifier: GPL-2.0-or-later
# learn_contexts.sh - learning without knowing the program: learn_server
# (every allocation through one xmalloc wrapper) under the generic learn
# policy (one pool, sites = [ "*" ], protect = [ "on-wait" ]), built with
# symbols and stripped.  From the learned journal entries (one per pool
# and allocation context): the configuration's contexts are unwritten and
# live, the scratch lines they were parsed from freed; the stats block
# (written by the program after the trigger) and the I/O buffer (written by
# the kernel, recv(2)) are written, though both were allocated between
# configuration entries; the reply built per request allocates after the
# trigger (late, to the heap); the entries carry the run, the executable's
# build-id and when the policy was loaded.  Stripped, the same contexts by
# their offsets, with the same marks and counts.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
PROG=$B/progs/learn_server
[ -x "$PROG" ] || fail "$PROG is missing: run make check"
command -v strip >/dev/null || skip "strip (binutils) not installed"
command -v jq >/dev/null || skip "jq not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock

mkdir -p "$T/full" "$T/stripped"
cp "$PROG" "$T/full/"
strip -o "$T/stripped/learn_server" "$PROG"
build_id=$(readelf -n "$PROG" | sed -n 's/.*Build ID: *//p')
[ -n "$build_id" ] || fail "learn_server has no build-id"

# learn DIR: one learn run of DIR/learn_server; its entries, one JSON line
# each, in $T/DIR.json.
learn() {
	local dir=$T/$1 pid rc=0
	cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "generic"; match = { exe = [ "$dir/learn_server" ]; }; mode = "learn";
  pools = ( { name = "all"; sites = [ "*" ]; protect = [ "on-wait" ]; } ); } );
EOC
	PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$dir/learn_server" >"$T/out" 2>"$T/err" &
	pid=$!
	wait $pid || rc=$?
	[ $rc = 0 ] || fail "$1: learn run exited $rc: $(cat "$T/err")"
	[ ! -s "$T/err" ] || fail "$1: learn mode wrote to stderr: $(cat "$T/err")"
	grep -q "^served 5 requests, config 16 entries, port 8080$" "$T/out" || fail "$1: output $(cat "$T/out")"
	journal_sync
	journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED OBJECT_PID=$pid \
		PMALLOC_LEARN_REASON=exit >"$T/$1.json"   # the last flush: every context
	LOADED_WANT=$(( $(stat -c %Y "$T/learn.conf") ))
	PID=$pid
}

# The entries whose chain has all of the functions named (full build).
with() {
	jq -c --arg f "$2" 'select(.PMALLOC_CHAIN | test($f))' "$T/$1.json"
}
# field NAME of every entry on stdin, one a line.
vals() { jq -r ".$1"; }

learn full
n=$(grep -c . "$T/full.json")
[ "$n" -ge 7 ] || fail "expected one entry per context, got $n: $(cat "$T/full.json")"
jq -e --arg b "$build_id" --arg e "$T/full/learn_server" \
	'.PMALLOC_POOL == "all" and .PMALLOC_POLICY == "generic" and (.PMALLOC_RUN | test("^[0-9a-f]{32}$"))
	 and .PMALLOC_EXE_BUILD_ID == $b and .PMALLOC_EXE == $e and .PMALLOC_TRIGGERS == "on-wait"' \
	"$T/full.json" >/dev/null || fail "entry fields: $(head -n 2 "$T/full.json")"
[ "$(vals PMALLOC_RUN <"$T/full.json" | sort -u | wc -l)" = 1 ] || fail "more than one run id in one process"
loaded=$(vals PMALLOC_POLICY_LOADED <"$T/full.json" | sort -u)
[ "$(( loaded / 1000000 ))" = "$LOADED_WANT" ] || fail "PMALLOC_POLICY_LOADED $loaded, file mtime $LOADED_WANT s"
# Each frame: OBJECT@BUILDID+0xOFF[=FUNCTION]; at least 8 where the stack is that deep.
jq -r .PMALLOC_CHAIN "$T/full.json" | tr ' ' '\n' | grep -qv '^[^ @]*@\([0-9a-f]*\|-\)+0x[0-9a-f]*\(=.*\)\?$' &&
	fail "a frame not OBJECT@BUILDID+0xOFF[=FUNCTION]: $(jq -r .PMALLOC_CHAIN "$T/full.json")"
deep=$(with full '=xmalloc .*=xstrdup .*=parse_entry .*=parse_section .*=read_config .*=main ' | head -n 1)
[ "$(printf '%s' "$deep" | vals PMALLOC_CHAIN | wc -w)" -ge 8 ] || fail "chain under 8 frames: $deep"
pass "one entry per context, chains through the wrapper (>= 8 frames), run id, build-id, policy load time"

# The configuration: entries and their strings, unwritten, live; the
# scratch copies freed.
cfg=$(with full '=parse_entry ' | jq -c 'select(.PMALLOC_LIVE_OBJECTS != "0")')
[ "$(printf '%s\n' "$cfg" | grep -c .)" = 6 ] || fail "config contexts (3 per section): $cfg"
printf '%s\n' "$cfg" | jq -e 'select(.PMALLOC_WRITTEN != "0" or .PMALLOC_OBJECTS != "8"
	or .PMALLOC_LIVE_OBJECTS != "8" or .PMALLOC_FREED_OBJECTS != "0" or .PMALLOC_LATE_OBJECTS != "0"
	or .PMALLOC_TRIGGER_LIVE_OBJECTS != "8")' \
	>/dev/null && fail "a config context written, freed or late: $cfg"
scratch=$(with full '=xstrdup .*=parse_entry ' | jq -c 'select(.PMALLOC_LIVE_OBJECTS == "0")')
[ "$(printf '%s\n' "$scratch" | grep -c .)" = 2 ] || fail "scratch contexts: $scratch"
printf '%s\n' "$scratch" | jq -e 'select(.PMALLOC_FREED_OBJECTS != "8" or .PMALLOC_LIVE_BYTES != "0")' \
	>/dev/null && fail "scratch not counted as freed: $scratch"
# Freed before the trigger: none of them was live when the pool was protected.
printf '%s\n' "$scratch" | jq -e 'select(.PMALLOC_TRIGGER_LIVE_OBJECTS != "0" or .PMALLOC_TRIGGER_LIVE_BYTES != "0")' \
	>/dev/null && fail "scratch not counted as freed before the trigger: $scratch"
pass "configuration contexts unwritten and live (6 of them, 8 objects each, all live at the trigger), scratch lines freed (8 each, before the trigger)"

stats=$(with full '=xmalloc .*=init_stats ')
[ "$(printf '%s' "$stats" | vals PMALLOC_WRITTEN)" = 1 ] || fail "stats block not written: $stats"
[ "$(printf '%s' "$stats" | vals PMALLOC_WRITTEN_BYTES)" = 16 ] || fail "stats written bytes: $stats"
io=$(with full '=xmalloc .*=init_io ')
[ "$(printf '%s' "$io" | vals PMALLOC_WRITTEN)" = 1 ] || fail "I/O buffer (recv) not written: $io"
[ "$(printf '%s' "$io" | vals PMALLOC_LIVE_BYTES)" = 512 ] || fail "I/O buffer live bytes: $io"
late=$(with full '=xmalloc .*=make_reply ')
[ "$(printf '%s' "$late" | vals PMALLOC_OBJECTS)" = 0 ] && [ "$(printf '%s' "$late" | vals PMALLOC_LATE_OBJECTS)" = 5 ] ||
	fail "replies not counted as late: $late"
pass "stats block (program write) and I/O buffer (kernel write) written, their neighbours not; replies late"

# Stripped: the same contexts, by offset (the code is the same), with the
# same marks and counts.
shape() {
	jq -r '[(.PMALLOC_CHAIN | gsub("=[^ ]*"; "") | gsub("[^ ]*/learn_server@"; "learn_server@")),
		.PMALLOC_WRITTEN, .PMALLOC_OBJECTS, .PMALLOC_LIVE_OBJECTS, .PMALLOC_FREED_OBJECTS,
		.PMALLOC_LATE_OBJECTS] | @tsv' "$T/$1.json" | grep -v 'allocate_dtv\|_IO_' | sort
}
learn stripped
jq -r .PMALLOC_CHAIN "$T/stripped.json" | grep -q "learn_server@$build_id+0x[0-9a-f]*=" &&
	fail "stripped: a function name in the program: $(jq -r .PMALLOC_CHAIN "$T/stripped.json")"
shape full >"$T/full.shape"
[ "$(grep -c . "$T/full.shape")" -ge 9 ] || fail "contexts of the full build: $(cat "$T/full.shape")"
shape stripped >"$T/stripped.shape"
grep -q "learn_server@$build_id" "$T/stripped.shape" || fail "stripped: no frame in the program"
diff "$T/full.shape" "$T/stripped.shape" >"$T/diff" || fail "stripped contexts differ: $(cat "$T/diff")"
pass "stripped: the same contexts by offset, the same marks and counts"

# A forked worker (no exec) is the same learn run: its own entries, the
# parent's run id.
rc=0; PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$T/stripped/learn_server" fork >"$T/out" 2>"$T/err" || rc=$?
[ $rc = 0 ] || fail "fork run exited $rc: $(cat "$T/err")"
journal_sync
journalctl --no-pager -o json --since "$TEST_SINCE" MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$T/stripped/learn_server" |
	jq -r '[.OBJECT_PID, .PMALLOC_RUN] | @tsv' | sort -u >"$T/runs"
pids_of_run=$(awk -v r="$(awk -v p="$PID" '$1 != p { print $2 }' "$T/runs" | tail -n 1)" '$2 == r' "$T/runs" | wc -l)
[ "$pids_of_run" = 2 ] || fail "the forked child's run id is not its parent's: $(cat "$T/runs")"
pass "a forked child writes its own entries under its parent's run id"

# A server stopped by SIGTERM frees its configuration as it shuts down, its
# forked worker too (told by a pipe, not a signal): those frees are not
# counted, so each process says what a run that never frees it says.
freed_of() { jq -s 'map(.PMALLOC_FREED_BYTES | tonumber) | add' "$1"; }
want=$(freed_of "$T/stripped.json")
since=@$(date +%s.%6N)
rc=0; PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM "$T/stripped/learn_server" stop >"$T/out" 2>"$T/err" || rc=$?
[ $rc = 0 ] || fail "stop run exited $rc: $(cat "$T/err")"
journal_sync
journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$T/stripped/learn_server" \
	PMALLOC_LEARN_REASON=exit >"$T/all.json"
pids=$(jq -r .OBJECT_PID "$T/all.json" | sort -u)
[ "$(printf '%s\n' "$pids" | grep -c .)" = 2 ] || fail "stop run: entries of $(printf '%s ' $pids)(want the server and its worker)"
for p in $pids; do
	jq -c --arg p "$p" 'select(.OBJECT_PID == $p)' "$T/all.json" >"$T/p.json"
	got=$(freed_of "$T/p.json")
	[ "$got" = "$want" ] || fail "stop run: pid $p counted $got bytes freed, a run that keeps its configuration $want"
done
pass "frees after SIGTERM (in the server, and in its worker told by a pipe) are not counted: $want bytes freed each, as without them"
