# SPDX-License-Identifier: GPL-2.0-or-later
# ctl_check_warnings.sh - pmallocctl check accepts a valid file whatever it
# says, but warns (FILE:LINE: warning: ..., on stderr, exit 0) where the
# file cannot mean what its author meant: an exe glob no real path fits
# (no leading '/' or a symbolic link), a policy that an earlier one always
# wins over, a pool with no protect trigger (said in the words of take =
# "until-trigger" where the pool has it), a repeated trigger or site.  A
# clean file gets no warning.
. "$(dirname "$0")/lib.sh"

CTL=$B/pmallocctl
[ -x "$CTL" ] || fail "$CTL is missing: run make"
ln -s /bin/true "$T/link-to-true"
cat >"$T/p.conf" <<EOF2
version = 1;
policies = (
  { name = "all-root"; match = { exe = [ "*" ]; uid = [ 0 ]; };
    pools = ( { name = "a"; sites = [ "f" ]; } ); },
  { name = "bare"; match = { exe = [ "nginx", "$T/link-to-true", "/usr/sbin/nginx" ]; };
    pools = ( { name = "a"; sites = [ "f", "lib:g", "lib:g" ];
                protect = [ "on-call:listen", "after:2s", "on-call:listen", "after:2000ms" ]; } ); },
  { name = "root-nginx"; match = { exe = [ "/usr/sbin/nginx" ]; uid = [ 0 ]; };
    pools = ( { name = "a"; sites = [ "f" ]; protect = [ "manual" ]; } ); },
  { name = "again"; match = { exe = [ "/usr/sbin/nginx" ]; comm = [ "nginx" ]; };
    pools = ( { name = "a"; sites = [ "f" ]; take = "until-trigger"; } ); },
  { name = "fine"; match = { exe = [ "*/redis-server" ]; comm = [ "redis*" ]; };
    pools = ( { name = "a"; sites = [ "f", "g" ]; protect = [ "on-wait", "after:2s" ]; take = "until-trigger"; } ); }
);
EOF2
"$CTL" check "$T/p.conf" >"$T/out" 2>"$T/err" || fail "a valid file refused: $(cat "$T/err")"
real=$(readlink -f /bin/true)
cat >"$T/want" <<EOF2
$T/p.conf:4: warning: policy "all-root", pool "a": no protect trigger, so nothing it takes is ever protected ("manual" if the program protects it)
$T/p.conf:5: warning: policy "bare": exe "nginx" can never match: executables are matched by their real path (/proc/PID/exe), which starts with '/'; write "*/nginx"
$T/p.conf:5: warning: policy "bare": exe "$T/link-to-true" is a symbolic link and can never match: executables are matched by their real path, here "$real"
$T/p.conf:6: warning: policy "bare", pool "a": trigger 3 repeats trigger 1
$T/p.conf:6: warning: policy "bare", pool "a": trigger 4 repeats trigger 2
$T/p.conf:6: warning: policy "bare", pool "a": site 3 repeats site 2
$T/p.conf:8: warning: policy "root-nginx" is never used: policy "all-root" (line 3) comes first and matches every process it matches
$T/p.conf:10: warning: policy "again" is never used: policy "bare" (line 5) comes first and matches every process it matches
$T/p.conf:11: warning: policy "again", pool "a": take = "until-trigger" without a trigger: the pool takes for the life of the process and is never protected; add protect = [ ... ]
EOF2
diff -u "$T/want" "$T/err" || fail "warnings differ (above)"
grep -q '^  policy fine:' "$T/out" || fail "summary missing: $(cat "$T/out")"
pass "each kind of mistake warned about once, at its line; the file still accepted"

"$CTL" check "$SRC/conf/pmalloc.conf" >/dev/null 2>"$T/err" || fail "shipped conf refused"
[ ! -s "$T/err" ] || fail "the shipped policy file draws warnings: $(cat "$T/err")"
pass "the shipped policy file draws no warning"
