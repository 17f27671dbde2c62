#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# learn_propose_chains.sh - pmallocctl propose on learned contexts made up
# to the byte: journal files written by systemd-journal-remote from the
# export format (as a host's journald would store them, trusted fields
# included), then one real entry through journald.
#   - the frame choice: the frame nearest the allocator through which only
#     clean contexts pass becomes the site, the frames below it wrappers;
#     a function is a wrapper by name only when every call of it learned
#     is below a choice, else its call is, pinned (and the function, only
#     partly wrapped, is no site by name); code without symbols by pinned
#     offset; the coverage lines, exactly;
#   - the runs: by default the latest load of the learn policy, --run to
#     name others; another build refused; entries of processes that did not
#     run the program not believed; the service's own user believed;
#   - --directory: a context written on any host is left out; --file;
#   - hostile values in every field: one policy, for that program only;
#   - --output onto the shipped conf/pmalloc.conf: every other policy and
#     the daemon group kept, FILE.bak the old bytes, twice in a row.
. "$(dirname "$0")/lib.sh"

ctl=$B/pmallocctl
remote=/lib/systemd/systemd-journal-remote
[ -x "$remote" ] || remote=/usr/lib/systemd/systemd-journal-remote
[ -x "$remote" ] || skip "systemd-journal-remote not installed"
command -v python3 >/dev/null || skip "python3 not installed"
command -v readelf >/dev/null || skip "readelf (binutils) not installed"

# The program learned: a copy of a built test program (it has a build-id).
EXE=$T/srv
cp "$B/progs/learn_prog" "$EXE"
BID=$(readelf -n "$EXE" | sed -n 's/.*Build ID: //p')
[ -n "$BID" ] || fail "no build-id in $EXE"

# Records "HOST RUN LOADED PID EXE_FIELD UID POOL CHAIN BYTES LIVE FREED LATE WRITTEN [FIELD=VALUE...]"
# on stdin, one a line ('-' for an absent _EXE); writes the journal file $1.
# Values after the 13 columns may hold anything but a tab (columns are tab-separated).
mkjournal() {
	python3 /dev/fd/3 "$1.export" "$EXE" "$BID" "$MID_LEARNED" 3<<'PY' || return 1
import struct, sys, time
out, exe, bid, mid_learned = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
now = int(time.time() * 1e6)
recs = []
for n, line in enumerate(sys.stdin.read().splitlines()):
    if not line.strip():
        continue
    c = [x.replace('\\n', '\n') for x in line.split('\t')]
    host, run, loaded, pid, exef, uid, pool, chain, b, live, freed, late, written = c[:13]
    objects = str(max(1, int(b) // 16)) if int(b) else '0'
    f = [('__REALTIME_TIMESTAMP', str(now + n)), ('__MONOTONIC_TIMESTAMP', str(n + 1)),
         ('_BOOT_ID', host), ('_MACHINE_ID', host), ('_HOSTNAME', 'h' + host[:6]), ('_UID', uid),
         ('_PID', pid), ('MESSAGE_ID', mid_learned), ('MESSAGE', 'learned'),
         ('OBJECT_PID', pid), ('PMALLOC_POLICY', 'srv'), ('PMALLOC_POOL', pool), ('PMALLOC_EXE', exe),
         ('PMALLOC_TRIGGERS', 'on-wait'), ('PMALLOC_RUN', run), ('PMALLOC_EXE_BUILD_ID', bid),
         ('PMALLOC_POLICY_LOADED', loaded), ('PMALLOC_CHAIN', chain),
         ('PMALLOC_OBJECTS', objects), ('PMALLOC_BYTES', b),
         ('PMALLOC_LIVE_OBJECTS', objects if int(live) else '0'), ('PMALLOC_LIVE_BYTES', live),
         ('PMALLOC_FREED_OBJECTS', objects if int(freed) else '0'), ('PMALLOC_FREED_BYTES', freed),
         ('PMALLOC_LATE_OBJECTS', late), ('PMALLOC_LATE_BYTES', str(int(late) * 16)),
         ('PMALLOC_WRITTEN', written), ('PMALLOC_WRITTEN_BYTES', live if written == '1' else '0')]
    if exef != '-':
        f.append(('_EXE', exef))
    for extra in c[13:]:
        k, v = extra.split('=', 1)
        f = [x for x in f if x[0] != k] + [(k, v)]
    recs.append(f)
with open(out, 'wb') as o:
    for f in recs:
        for k, v in f:
            v = v.encode()
            if b'\n' in v:
                o.write(k.encode() + b'\n' + struct.pack('<Q', len(v)) + v + b'\n')
            else:
                o.write(k.encode() + b'=' + v + b'\n')
        o.write(b'\n')
PY
	rm -f "$1"
	"$remote" --output="$1" "$1.export" >"$1.log" 2>&1 || fail "journal-remote: $(cat "$1.log")"
}

fr() { printf '%s@%s+0x%s%s' "$EXE" "$BID" "$1" "${2:+=$2}"; }   # OFFSET [FUNCTION]
ch() { local s=; while [ $# -ge 2 ]; do s+="${s:+ }$(fr "$1" "$2")"; shift 2; done; printf %s "$s"; }
H1=11111111111111111111111111111111 H2=22222222222222222222222222222222
RUN=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa OLD=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb RUN2=cccccccccccccccccccccccccccccccc
RUN3=dddddddddddddddddddddddddddddddd
L1=1700000000000000 L2=1700000100000000
A=$(ch 10 cfg_alloc 110 parse_config 900 main)
B2=$(ch 10 cfg_alloc 120 parse_config 900 main)
C=$(ch 10 cfg_alloc 300 handle_request 910 main)
D=$(ch 10 cfg_alloc 400 stats_new 920 main)
E=$(ch 10 cfg_alloc 500 tmp_new 930 main)
S="$(fr 700) $(fr 940 main)"
# Pool "two": fn_x's call 0x830 is a wrapper for Q (written through R), its
# call 0x810 P's choice: the wrapper is the call 0x830, pinned, and P's
# site the call 0x810 (fn_x by name would look through it, up to cfg_p).
P=$(ch 810 fn_x 820 cfg_p 990 main)
Q=$(ch 830 fn_x 840 cfg_q 990 main)
R=$(ch 830 fn_x 850 serve 990 main)
G=$(ch 150 parse_config 900 main)
I=$(ch 160 parse_config 900 main)
t=$'\t'
row() { local IFS=$'\t'; printf '%s\n' "$*"; }
{
	# The latest load (L2): run RUN, master 100 (root) and worker 101 (uid 33, its _EXE gone for one entry).
	row $H1 $RUN $L2 100 "$EXE" 0 learned "$A" 4000 4000 0 0 0
	row $H1 $RUN $L2 101 "$EXE" 33 learned "$A" 4000 4000 0 0 0
	row $H1 $RUN $L2 101 - 33 learned "$B2" 2000 2000 0 0 0
	row $H1 $RUN $L2 100 "$EXE" 0 learned "$C" 512 512 0 0 1
	row $H1 $RUN $L2 100 "$EXE" 0 learned "$D" 64 64 0 3 0
	row $H1 $RUN $L2 100 "$EXE" 0 learned "$E" 128 0 128 0 0
	row $H1 $RUN $L2 100 "$EXE" 0 learned "$S" 1000 1000 0 0 0
	row $H1 $RUN $L2 100 "$EXE" 0 two "$P" 300 300 0 0 0
	row $H1 $RUN $L2 100 "$EXE" 0 two "$Q" 200 200 0 0 0
	row $H1 $RUN $L2 100 "$EXE" 0 two "$R" 50 50 0 0 1
	row $H1 $RUN $L2 100 "$EXE" 0 two "$G" 100 100 0 0 0
	row $H1 $RUN $L2 100 "$EXE" 0 two "$I" 10 10 0 0 1
	# An older load (L1), run OLD: A was written then.
	row $H1 $OLD $L1 90 "$EXE" 0 learned "$A" 4000 4000 0 0 1
	row $H1 $OLD $L1 90 "$EXE" 0 learned "$B2" 2000 2000 0 0 0
	# Another build, in the latest load: refused.
	row $H1 $RUN2 $L2 102 "$EXE" 0 learned "$B2" 2000 2000 0 0 1 PMALLOC_EXE_BUILD_ID=0123456789abcdef
	# Forged: the sender ran another program.
	row $H1 $RUN $L2 103 /usr/bin/evil 1000 learned "$B2" 2000 2000 0 0 1
	# Refused: a run of its own by a uid nobody trusts (the program is
	# world-executable: any user can run it under the learn policy).
	row $H1 $RUN3 $L2 104 - 4242 learned "$A" 4000 4000 0 0 1
} >"$T/h1.rows"
mkdir -p "$T/hosts"
mkjournal "$T/hosts/h1.journal" <"$T/h1.rows"

sites() { grep -v '^ *#' "$1" | tr -d ' \n' | grep -o "name=\"$2\";sites=\[[^]]*\]" | sed 's/.*sites=\[//; s/\]//'; }
wrappers() { grep -v '^ *#' "$1" | tr -d ' \n' | grep -o "name=\"$2\";sites=\[[^]]*\];wrappers=\[[^]]*\]" | sed 's/.*wrappers=\[//; s/\]//'; }

"$ctl" propose --mode enforce --exe "$EXE" --file "$T/hosts/h1.journal" >"$T/p1.conf" 2>"$T/err" || fail "propose: $(cat "$T/err")"
"$ctl" check "$T/p1.conf" >"$T/check" 2>&1 || fail "check: $(cat "$T/check")"
grep -qi warning "$T/check" && fail "check warns: $(cat "$T/check")"
[ "$(sites "$T/p1.conf" learned)" = "\"srv:parse_config\",\"srv@$BID:+0x700\"" ] ||
	fail "pool learned: sites $(sites "$T/p1.conf" learned): $(cat "$T/p1.conf")"
[ "$(wrappers "$T/p1.conf" learned)" = '"cfg_alloc"' ] || fail "pool learned: wrappers $(wrappers "$T/p1.conf" learned)"
grep -qx '        # protected: 7000 bytes live in 2 sites; unwritten at learning: 7064 bytes; coverage 99.0%' "$T/p1.conf" &&
grep -qx '        # left out: 512 bytes written, 64 bytes allocating while serving, 128 bytes freed' "$T/p1.conf" ||
	fail "pool learned: coverage lines: $(grep '# protected\|# left out' "$T/p1.conf")"
# Pool two: fn_x, partly wrapped, by its calls (0x810 a site, 0x830 a
# wrapper); parse_config's call 0x150 by offset (its call 0x160 allocates
# directly and is written).
[ "$(sites "$T/p1.conf" two | tr , '\n' | sort | tr '\n' ,)" = "\"srv:cfg_q\",\"srv@$BID:+0x150\",\"srv@$BID:+0x810\"," ] ||
	fail "pool two: sites $(sites "$T/p1.conf" two)"
[ "$(wrappers "$T/p1.conf" two)" = "\"srv@$BID:+0x830\"" ] || fail "pool two: wrappers $(wrappers "$T/p1.conf" two)"
grep -qx '    # protected: 7600 bytes live in 5 sites; unwritten at learning: 7664 bytes; coverage 99.1%' "$T/p1.conf" &&
grep -qx '    # left out: 572 bytes written, 64 bytes allocating while serving, 128 bytes freed' "$T/p1.conf" ||
	fail "total coverage lines: $(grep '# protected\|# left out' "$T/p1.conf")"
[ "$(grep -c 'take = "until-trigger";' "$T/p1.conf")" = 2 ] && [ "$(grep -c 'protect = \[ "on-wait" \];' "$T/p1.conf")" = 2 ] ||
	fail "take or triggers: $(cat "$T/p1.conf")"
grep -q '1 entries refused: another build of .*0123456789abcdef' "$T/err" || fail "another build not said: $(cat "$T/err")"
grep -q '1 entries not believed: written by processes that were not running' "$T/err" || fail "forged not said: $(cat "$T/err")"
grep -q '1 entries refused: runs of .* by uid 4242, not root' "$T/err" || fail "uid 4242 not said: $(cat "$T/err")"
grep -q '(12 entries,' "$T/p1.conf" && grep -q '# 1 runs, 2 processes' "$T/p1.conf" || fail "runs and processes: $(head -n 4 "$T/p1.conf")"
pass "frame choice: sites parse_config and a pinned call, wrapper cfg_alloc by name (all its calls below a choice), fn_x's call pinned (one of its calls is a choice); coverage 99.0% and 99.1% in total; another build refused, a forged entry not believed, another user's run refused, the service's workers (uid 33, in root's run) believed"

# --run OLD: A was written in that run, so parse_config is not a site by name.
"$ctl" propose --mode enforce --exe "$EXE" --file "$T/hosts/h1.journal" --run $OLD >"$T/p2.conf" 2>"$T/err" || fail "propose --run: $(cat "$T/err")"
[ "$(sites "$T/p2.conf" learned)" = "\"srv@$BID:+0x120\"" ] || fail "--run $OLD: sites $(sites "$T/p2.conf" learned)"
grep -q 'pool "two"' "$T/p2.conf" && fail "--run $OLD: pool two was not in that run"
"$ctl" propose --mode enforce --exe "$EXE" --file "$T/hosts/h1.journal" --uid 4242 >"$T/p3.conf" 2>"$T/err" || fail "propose --uid: $(cat "$T/err")"
[ "$(sites "$T/p3.conf" learned)" = "\"srv@$BID:+0x120\",\"srv@$BID:+0x700\"" ] || fail "--uid 4242: sites $(sites "$T/p3.conf" learned)"
"$ctl" propose --mode enforce --exe "$EXE" --file "$T/hosts/h1.journal" --run 0000000000000000000000000000000f >/dev/null 2>"$T/err" &&
	fail "propose of a run with no entry succeeded"
grep -q 'run 0000000000000000000000000000000f: no entry' "$T/err" || fail "unknown run not said: $(cat "$T/err")"
pass "--run names an older run (its written context left out), --uid believes a user, an unknown run is said"

# Two hosts: B2 written on the second only.
row $H2 $RUN2 $L1 200 "$EXE" 0 learned "$B2" 2000 2000 0 0 1 >"$T/h2.rows"
row $H2 $RUN2 $L1 200 "$EXE" 0 learned "$A" 4000 4000 0 0 0 >>"$T/h2.rows"
mkjournal "$T/hosts/h2.journal" <"$T/h2.rows"
"$ctl" propose --mode enforce --exe "$EXE" --directory "$T/hosts" >"$T/p4.conf" 2>"$T/err" || fail "propose --directory: $(cat "$T/err")"
[ "$(sites "$T/p4.conf" learned)" = "\"srv@$BID:+0x110\",\"srv@$BID:+0x700\"" ] ||
	fail "--directory: sites $(sites "$T/p4.conf" learned)"
grep -q '2 runs, 3 processes' "$T/p4.conf" || fail "--directory: runs: $(head -n 4 "$T/p4.conf")"
pass "--directory: a context written on another host is left out (parse_config by its clean call only)"

# Hostile values in every field the text takes from the journal.
HEXE="$T/we\"ird;{x}"
cp "$EXE" "$HEXE"
evil='x"; }; ); policies = ( { name = "evil"; match = { exe = [ "/bin/sh" ]; }; mode = "enforce"; #\n{'
hframe="$(printf '%s' "$HEXE" | sed 's/%/%25/g; s/ /%20/g')@$BID+0x10=f\"}\\n;{ $(printf '%s' "$HEXE" | sed 's/%/%25/g; s/ /%20/g')@$BID+0x20=main"
EXE_SAVED=$EXE; EXE=$HEXE
{
	row $H1 $RUN $L2 300 "$HEXE" 0 "$evil" "$hframe" 640 640 0 0 0 "PMALLOC_POLICY=$evil" "PMALLOC_TRIGGERS=on-wait,$evil,after:2s"
	row $H1 $RUN $L2 300 "$HEXE" 0 "p\"o;o{l}\\n" "$(ch 30 'g"};x' 40 main)" 320 320 0 0 0 "PMALLOC_POLICY=$evil"
} >"$T/h3.rows"
mkjournal "$T/h3.journal" <"$T/h3.rows"
EXE=$EXE_SAVED
"$ctl" propose --mode enforce --exe "$HEXE" --file "$T/h3.journal" >"$T/p5.conf" 2>"$T/err" || fail "hostile: propose: $(cat "$T/err")"
"$ctl" check "$T/p5.conf" >"$T/check" 2>&1 || fail "hostile: check: $(cat "$T/check") $(cat "$T/p5.conf")"
grep -q '^conf.*: ok (1 policies, 2 pools)$\|: ok (1 policies, 2 pools)$' "$T/check" || fail "hostile: not one policy: $(cat "$T/check")"
[ "$(grep -c '^  policy ' "$T/check")" = 1 ] || fail "hostile: policies: $(cat "$T/check")"
grep -q "match exe $(printf '%s' "$HEXE" | sed 's/[][\\.*^$]/\\&/g')\$" "$T/check" || fail "hostile: the policy is not for $HEXE only: $(cat "$T/check")"
grep -q '/bin/sh' "$T/check" && fail "hostile: a policy for /bin/sh: $(cat "$T/check")"
pass "hostile journal values (quotes, braces, semicolons, newlines in policy, pool, triggers, sites, paths): one policy, for that program only"

# --output onto the shipped policy file: its other policies and daemon group kept.
cp "$SRC/conf/pmalloc.conf" "$T/pmalloc.conf"
before=$("$ctl" check "$T/pmalloc.conf" 2>&1 | grep -c '^ *policy ')
for n in 1 2; do
	cp "$T/pmalloc.conf" "$T/before"
	"$ctl" propose --mode enforce --exe "$EXE" --file "$T/hosts/h1.journal" --output "$T/pmalloc.conf" 2>"$T/err" ||
		fail "propose --output ($n): $(cat "$T/err")"
	"$ctl" check "$T/pmalloc.conf" >"$T/check" 2>&1 || fail "--output ($n): check: $(cat "$T/check")"
	after=$(grep -c '^ *policy ' "$T/check")
	[ "$after" = $((before + 1)) ] || fail "--output ($n): $before policies before, $after after: $(cat "$T/check")"
	cmp -s "$T/before" "$T/pmalloc.conf.bak" || fail "--output ($n): FILE.bak is not the file before"
done
grep -q 'srv.*replaced' "$T/err" || fail "--output: the second run did not replace: $(cat "$T/err")"
python3 - "$SRC/conf/pmalloc.conf" "$T/pmalloc.conf" <<'PY' || fail "--output: the shipped text was not kept"
import sys
old, new = open(sys.argv[1]).read(), open(sys.argv[2]).read()
# Everything of the shipped file is still there, in order, byte for byte,
# around the one policy added.
i = 0
for line in old.splitlines(keepends=True):
    j = new.find(line, i)
    if j < 0:
        print("lost:", line); sys.exit(1)
    i = j + len(line)
PY
pass "--output onto conf/pmalloc.conf: $before policies kept byte for byte and the daemon group, srv's added once, replaced on the second run, FILE.bak"

# Through the machine's journald: an entry that says it is about $FEXE,
# written by another program (journal_inject) of another user: journald's
# _EXE gives it away, or, when the writer was gone before journald read
# it, its _UID (nobody ran the program as that user).
journald_ensure
[ "$(id -u)" = 0 ] || skip "the forged entry needs another user (run as root)"
FEXE=$T/forged-target
cp "$EXE" "$FEXE"
chmod a+rx "$T" "$B/progs/journal_inject"
setpriv --reuid=65534 --regid=65534 --clear-groups "$B/progs/journal_inject" MESSAGE_ID=$MID_LEARNED MESSAGE=learned PMALLOC_POLICY=f PMALLOC_POOL=learned \
	PMALLOC_EXE="$FEXE" PMALLOC_TRIGGERS=on-wait PMALLOC_RUN=$RUN PMALLOC_EXE_BUILD_ID="$BID" \
	PMALLOC_POLICY_LOADED=$L2 "PMALLOC_CHAIN=$(printf '%s@%s+0x10=f' "$FEXE" "$BID")" PMALLOC_OBJECTS=1 \
	PMALLOC_BYTES=4096 PMALLOC_LIVE_OBJECTS=1 PMALLOC_LIVE_BYTES=4096 PMALLOC_WRITTEN=0 OBJECT_PID=$$ ||
	fail "journal_inject failed"
journal_sync
"$ctl" propose --mode enforce --exe "$FEXE" >"$T/p6.conf" 2>"$T/err" && fail "a forged entry was proposed: $(cat "$T/p6.conf")"
grep -q '1 entries not believed: written by processes that were not running\|1 entries refused: runs of .* by uid 65534' "$T/err" ||
	fail "the forged entry was not said: $(cat "$T/err")"
pass "an entry journal_inject wrote as nobody about another program is not believed ($(sed -n 's/.*\(not believed\|refused\): \(.*\)/\2/p' "$T/err" | cut -c1-40)...)"

# pmallocctl learn: the generic learn policy, for a program and for a unit.
"$ctl" learn --exe "$EXE" >"$T/learn.conf" 2>"$T/err" || fail "learn: $(cat "$T/err")"
"$ctl" check "$T/learn.conf" >"$T/check" 2>&1 || fail "learn: check: $(cat "$T/check")"
grep -q "pool learned: sites \*; protect on-wait" "$T/check" && grep -q 'policy srv: learn' "$T/check" ||
	fail "learn: $(cat "$T/check")"
grep -q 'wrappers' "$T/learn.conf" && fail "learn: the generic policy names wrappers: $(cat "$T/learn.conf")"
grep -q 'after:' "$T/learn.conf" && grep -q 'manual' "$T/learn.conf" && grep -q 'pmallocctl propose --exe' "$T/learn.conf" ||
	fail "learn: the comments do not say how to learn a program that is not a server, or what next"
cp "$SRC/conf/pmalloc.conf" "$T/both.conf"
"$ctl" learn --exe "$EXE" --output "$T/both.conf" 2>"$T/err" || fail "learn --output: $(cat "$T/err")"
"$ctl" check "$T/both.conf" >"$T/check" 2>&1 || fail "learn --output: check: $(cat "$T/check")"
[ "$(grep -c '^  policy ' "$T/check")" = 2 ] || fail "learn --output: $(cat "$T/check")"
"$ctl" propose --mode enforce --exe "$EXE" --file "$T/hosts/h1.journal" --output "$T/both.conf" 2>"$T/err" || fail "propose onto learn: $(cat "$T/err")"
"$ctl" check "$T/both.conf" >"$T/check" 2>&1 || fail "propose onto learn: check: $(cat "$T/check")"
grep -q 'policy srv: enforce' "$T/check" && [ "$(grep -c '^  policy ' "$T/check")" = 2 ] ||
	fail "propose onto learn: $(cat "$T/check")"
unit=
for d in /etc/systemd/system /lib/systemd/system /usr/lib/systemd/system; do
	[ -f "$d/nginx.service" ] && unit=nginx && break
done
if [ -n "$unit" ]; then
	"$ctl" learn nginx >"$T/unit.conf" 2>"$T/err" || fail "learn nginx: $(cat "$T/err")"
	grep -q "exe = \[ \"$(readlink -f /usr/sbin/nginx)\" \]" "$T/unit.conf" || fail "learn nginx: $(cat "$T/unit.conf")"
	pass "learn: the generic policy (one pool, every site, on-wait, no wrapper), for a program and for nginx.service; --output keeps the shipped policy; propose replaces it"
else
	pass "learn: the generic policy (one pool, every site, on-wait, no wrapper) for a program; --output keeps the shipped policy; propose replaces it (no nginx.service here for the unit form)"
fi
