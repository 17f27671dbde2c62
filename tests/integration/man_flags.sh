#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# man_flags.sh - the man pages match the programs, both ways.
#
# Every option pmallocctl(8) documents for a command (its SYNOPSIS, its
# OPTIONS entries with the commands they name, the commands' own headings,
# "pmallocctl COMMAND --option" anywhere in the text), and every option of
# pmallocd(8), is run with its command against harmless things (an empty
# journal directory, a socket nobody listens on, files in a scratch
# directory): none is a usage error.  Every option of the programs' option
# tables (pmallocctl.c's command table, pmallocd.c's) is documented for its
# command; the short letters the table gives are the ones the program
# takes (every letter tried); one letter means one option in every command.
# pmalloc.conf(5) names only commands and options that exist.  The check
# example of pmallocctl(8) is what check prints; the pages render without a
# warning.
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"

ctl=$B/pmallocctl pmallocd=$B/pmallocd
[ -x "$ctl" ] && [ -x "$pmallocd" ] || skip "pmallocctl or pmallocd not built"
command -v man >/dev/null || skip "man not installed"

for page in pmallocctl.8 pmallocd.8 pmalloc.conf.5; do
	man --warnings -l "$SRC/man/$page" >/dev/null 2>"$T/man.err"
	[ ! -s "$T/man.err" ] || fail "man --warnings $page: $(cat "$T/man.err")"
done
pass "the pages render without warnings"

# ---- what the pages document: "PROG VERB OPTION" lines, and long/short pairs ----
# Font escapes and \- are dropped first; an option is a word that starts
# with - or -- and a letter, after a blank, a bracket, a bar or a comma.
extract() { # PAGE PROG
	awk -v prog="$2" '
	function norm(s) {
		gsub(/\\f[BIRP]/, "", s); gsub(/\\f\(..|\\f\[[^]]*\]/, "", s)
		gsub(/\\-/, "-", s); gsub(/\\\(dq/, "", s); gsub(/"/, " ", s)
		sub(/^\.[A-Z]+ */, "", s)
		return s
	}
	function opts(s, verb, pairs,   n, w, i, long, short) {
		n = split(s, w, /[ \t\[\]|,()=]+/)
		long = ""; short = ""
		for (i = 1; i <= n; i++) {
			if (w[i] ~ /^--[A-Za-z][A-Za-z0-9-]*$/) { print prog, verb, w[i]; if (long == "") long = w[i] }
			else if (w[i] ~ /^-[A-Za-z]$/) { print prog, verb, w[i]; if (short == "") short = w[i] }
		}
		if (pairs && long != "" && short != "") print "pair", verb, long, short
	}
	/^\.SH / { sec = $2; next }
	# SYNOPSIS: .SY PROG, then the command (none before --help), its options.
	sec == "SYNOPSIS" && /^\.SY / { insy = 1; verb = "@"; first = 1; next }
	sec == "SYNOPSIS" && /^\.YS/ { insy = 0; next }
	sec == "SYNOPSIS" && insy {
		s = norm($0)
		if (first && prog == "pmallocctl" && s !~ /^-/) { split(s, w, / +/); verb = w[1]; verbs[verb] = 1 }
		first = 0
		opts(s, verb, 0); next
	}
	# OPTIONS: a tag, then ".RB ( cmd ", " cmd )" naming its commands.
	sec == "OPTIONS" && /^\.T[PQ]/ { tag = 1; next }
	sec == "OPTIONS" && tag == 1 { tagline = norm($0); tag = 2; next }
	sec == "OPTIONS" && tag == 2 {
		tag = 0
		if (prog == "pmallocctl" && $0 ~ /^\.RB \( /) {
			s = norm($0); gsub(/[(),]/, " ", s); n = split(s, w, / +/)
			for (i = 1; i <= n; i++) if (w[i] != "") opts(tagline, w[i], 1)
		} else {
			opts(tagline, "@", 1)
		}
	}
	# Anywhere: "pmallocctl COMMAND --option ...", "pmallocd --option", and
	# a macro line that starts with a command name (".B propose --output").
	{
		s = norm($0)
		while (match(s, /pmallocctl [a-z][a-z-]*/)) {
			split(substr(s, RSTART + 11, RLENGTH - 11), w, / /); s = rest = substr(s, RSTART + RLENGTH)
			if (match(rest, /[|;&]|pmallocctl|pmallocd/)) rest = substr(rest, 1, RSTART - 1)
			mention[w[1]] = 1; prog0 = prog; prog = "pmallocctl"; opts(rest, w[1], 0); prog = prog0
		}
		s = norm($0)
		if (match(s, /pmallocd -[^|;&]*/)) { prog0 = prog; prog = "pmallocd"; opts(substr(s, RSTART + 8, RLENGTH - 8), "@", 0); prog = prog0 }
		# A page of neither program: every option it names in bold on its
		# own (not after the name of another program, as "readelf -n").
		if (prog != "pmallocctl" && prog != "pmallocd" && $0 ~ /^\.(B|BR|BI|RB) / && norm($0) ~ /^[[ ]*-/)
			opts(norm($0), "@", 0)
		if (prog == "pmallocctl" && sec != "SYNOPSIS" && $0 ~ /^\.B[IR]? / && split(norm($0), w, / +/) > 1 && (w[1] in verbs)) {
			s = norm($0); sub(/^[^ ]+/, "", s); opts(s, w[1], 0)
		}
	}
	END { for (v in mention) print "mention", v }
	' "$1"
}
extract "$SRC/man/pmallocctl.8" pmallocctl >"$T/doc"
extract "$SRC/man/pmallocd.8" pmallocd >>"$T/doc"
extract "$SRC/man/pmalloc.conf.5" pmalloc.conf >"$T/conf5"
grep -q '^pmallocctl violations --follow$' "$T/doc" && grep -q '^pmallocctl propose --run$' "$T/doc" &&
	grep -q '^pmallocd @ --subuid$' "$T/doc" || fail "extraction: $(sort -u "$T/doc" | head -50)"

# ---- what the programs take: their option tables ----
# pmallocctl.c: each { "verb", ctl_cmd_... } entry, its ARG/FLAG list.
awk '
	/^\t\{ "[a-z-]+", ctl_cmd_/ { match($0, /"[a-z-]+"/); verb = substr($0, RSTART + 1, RLENGTH - 2); next }
	verb != "" && /CTL_SOCKET_OPTIONS/ { print verb, "--socket", "-s"; print verb, "--help", "-h" }
	verb != "" {
		s = $0
		while (match(s, /(ARG|FLAG)\("[a-z-]+", [^)]*\)/)) {
			e = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
			match(e, /"[a-z-]+"/); long = "--" substr(e, RSTART + 1, RLENGTH - 2)
			short = match(e, /'\''.'\''/) ? "-" substr(e, RSTART + 1, 1) : "none"
			print verb, long, short
		}
		if ($0 ~ /HELP/ && $0 !~ /#define/) print verb, "--help", "-h"
	}
' "$SRC/daemon/pmallocctl/pmallocctl.c" | sort -u >"$T/table"
awk '/static const struct option options\[\]/ { on = 1 } on && /\{ "/ {
	match($0, /"[a-z-]+"/); long = "--" substr($0, RSTART + 1, RLENGTH - 2)
	short = match($0, /'\''.'\''/) ? "-" substr($0, RSTART + 1, 1) : "none"
	print long, short } on && /\{ NULL/ { exit }' "$SRC/daemon/pmallocd/pmallocd.c" >"$T/dtable"
verbs=$(awk '{ print $1 }' "$T/table" | sort -u)
[ "$(wc -w <<<"$verbs")" -ge 9 ] && grep -q '^violations --reverse -r$' "$T/table" &&
	grep -q '^--subuid none$' "$T/dtable" || fail "option tables: $(cat "$T/table" "$T/dtable")"

# Every letter the table gives is one the program takes, and no other.
mkdir -p "$T/jdir" "$T/root"
: >"$T/subuid"
cat >"$T/p.conf" <<'EOF'
version = 1;
policies = (
  {
    name = "demo";
    match = { exe = [ "*/pmalloc-demo" ]; };
    pools = ( { name = "config"; sites = [ "parse_config", "load_settings" ];
                wrappers = [ "xmalloc", "xstrdup" ]; protect = [ "on-call:listen", "after:2s" ];
                max_bytes = 16777216; } );
  }
);
EOF
chmod 0644 "$T/p.conf"
base() { # VERB OPTION: harmless arguments for VERB around OPTION
	case $1 in
	check) echo "$T/p.conf" ;;
	status) [ "$2" = --socket ] || [ "$2" = -s ] || echo "--socket $T/nosock" ;;
	violations) case $2 in --directory | -D | --file) echo --no-pager ;; *) echo "--no-pager --directory $T/jdir" ;; esac ;;
	learn) case $2 in --exe | -e) ;; *) echo "--exe /bin/true" ;; esac ;;
	propose) case $2 in --exe | -e) echo "--directory $T/jdir" ;; --directory | -D | --file) echo "--exe /bin/true" ;;
		*) echo "--exe /bin/true --directory $T/jdir" ;; esac ;;
	learn-flush | sites) echo 1; [ "$2" = --socket ] || [ "$2" = -s ] || echo "--socket $T/nosock" ;;
	protect) echo 1 config; [ "$2" = --socket ] || [ "$2" = -s ] || echo "--socket $T/nosock" ;;
	preload) echo status nginx; [ "$2" = --root ] || echo "--root $T/root" ;;
	exercise) echo nosuch-pmalloc-test.service ;;
	ready) case $2 in --exe | -e) echo "--config $T/p.conf" ;; --config) echo "--exe /bin/true" ;;
		*) echo "--exe /bin/true --config $T/p.conf" ;; esac ;;
	esac
}
value() { # VERB LONG: a valid value for an option that takes one
	case $1:$2 in
	*:--socket) echo "$T/nosock" ;;
	*:--pid) echo 1 ;;
	*:--unit) echo nginx ;;
	*:--policy) echo demo ;;
	*:--since) echo -1h ;;
	*:--until) echo now ;;
	*:--lines) echo 5 ;;
	*:--cursor | *:--after-cursor) echo s=0 ;;
	violations:--output) echo json ;;
	*:--output) echo "$T/out-$1.conf" ;;
	*:--directory) echo "$T/jdir" ;;
	*:--file) echo "$T/none.journal" ;;
	*:--exe) echo /bin/true ;;
	*:--run) echo 0123456789abcdef0123456789abcdef ;;
	*:--uid) echo root ;;
	*:--root) echo "$T/root" ;;
	*:--library) echo /usr/lib/libpmalloc_shim.so.0 ;;
	*:--config) echo "$T/p.conf" ;;
	*:--min-time) echo 0 ;;
	*:--mode) echo audit ;;
	*) return 1 ;;
	esac
}
# exercise never drives the machine's own systemd here.
export PMALLOC_SYSTEMCTL=/bin/false
takes_value() { grep -q "ARG(\"${2#--}\"" "$SRC/daemon/pmallocctl/pmallocctl.c"; }
# run VERB OPTION [VALUE]: the exit status, the output in $T/run.
run() {
	local verb=$1 opt=$2 b
	shift 2
	b=$(base "$verb" "$opt")
	# shellcheck disable=SC2086
	timeout 2 "$ctl" "$verb" $b "$opt" "$@" </dev/null >"$T/run" 2>&1
}

# No command takes a letter its table does not give: every letter any table
# or page names, and one no one does, is tried with each command that has
# not got it (the letters it has are run below, as the page documents them;
# each run costs a process start).
letters=$( (awk '$3 != "none" { print substr($3, 2) }' "$T/table"; grep -o ' -[A-Za-z]$' "$T/doc" | cut -c3;
	echo x) | sort -u)
for verb in $verbs; do
	own=$(awk -v v="$verb" '$1 == v && $3 != "none" { print substr($3, 2) }' "$T/table" | tr -d '\n')
	for l in $letters; do
		case $own in *$l*) continue ;; esac
		run "$verb" "-$l"
		grep -q "unknown option '-$l'" "$T/run" || fail "$verb takes -$l, which its table does not give: $(head -n 3 "$T/run")"
	done
done
pass "no command takes a short letter its table does not give ($(wc -w <<<"$letters") letters tried)"

# One letter, one meaning.
awk '$3 != "none" { print $3, $2 }' "$T/table" | sort -u | awk '{ n[$1]++; l[$1] = l[$1] " " $2 }
	END { for (k in n) if (n[k] > 1) print k ":" l[k] }' >"$T/clash"
[ ! -s "$T/clash" ] || fail "letters with two meanings: $(cat "$T/clash")"
# --output is a mode in violations and a policy file in learn and propose:
# the one long name with two meanings, so -o is violations' alone.
[ "$(awk '$3 == "-o" { print $1 }' "$T/table")" = violations ] ||
	fail "-o is not violations' output mode alone: $(grep ' -o$' "$T/table")"
pass "each short letter means one option in every command ($(awk '$3 != "none"' "$T/table" | wc -l) letters)"

# ---- documented -> accepted ----
documented() { # VERB OPTION: documented for VERB (--help/-h: for every command)
	grep -qxF "pmallocctl $1 $2" "$T/doc" || { [ "$2" = --help ] || [ "$2" = -h ]; }
}
n=0
while read -r prog verb opt; do
	[ "$prog" = pmallocctl ] && [ -n "$opt" ] || continue
	long=$opt
	[ "${opt#--}" != "$opt" ] || long=$(awk -v v="$verb" -v s="$opt" '$1 == "pair" && $2 == v && $4 == s { print $3 }' "$T/doc" | head -n 1)
	[ -n "$long" ] || long=$(awk -v v="$verb" -v s="$opt" '$1 == v && $3 == s { print $2 }' "$T/table")
	[ -n "$long" ] || fail "pmallocctl(8) documents $opt for $verb, which takes no such option"
	val=()
	if takes_value "$verb" "$long"; then
		v=$(value "$verb" "$long") || fail "no test value for $verb $long"
		val=("$v")
	fi
	run "$verb" "$opt" "${val[@]}"
	rc=$?
	if [ $rc = 2 ] || grep -qE "unknown option|missing argument" "$T/run"; then
		fail "pmallocctl $verb $opt ${val[*]}: exit $rc: $(head -n 3 "$T/run")"
	fi
	n=$((n + 1))
done < <(awk '$1 == "pmallocctl" && $2 != "@" { print }' "$T/doc" | sort -u)
[ $n -ge 50 ] || fail "only $n documented options of pmallocctl found"
pass "the $n options pmallocctl(8) documents per command are taken by that command"

# Global ones.
for opt in --help -h --version; do
	grep -qxF "pmallocctl @ $opt" "$T/doc" || [ "$opt" = -h ] || fail "pmallocctl(8) does not document $opt"
	"$ctl" $opt >"$T/run" 2>&1 || fail "pmallocctl $opt: $(cat "$T/run")"
done

# ---- accepted -> documented ----
while read -r verb long short; do
	documented "$verb" "$long" || fail "pmallocctl $verb takes $long, which pmallocctl(8) does not document for it"
	[ "$short" = none ] || documented "$verb" "$short" ||
		fail "pmallocctl $verb takes $short ($long), which pmallocctl(8) does not document for it"
done <"$T/table"
pass "every option of pmallocctl's table is documented for its command"

# ---- pmallocd ----
dstart() { # OPTION...: the daemon comes up on a scratch socket
	rm -f "$T/d.sock"
	"$pmallocd" --config "$T/p.conf" "$@" >"$T/d.log" 2>&1 &
	local pid=$!
	wait_until 200 test -S "$T/d.sock"
	local up=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ $up = 0 ] || fail "pmallocd $*: $(cat "$T/d.log")"
}
n=0
while read -r opt; do
	case $opt in
	--config | -c) "$pmallocd" --check "$opt" "$T/p.conf" >"$T/run" 2>&1 ;;
	--check) "$pmallocd" --check --config "$T/p.conf" >"$T/run" 2>&1 ;;
	--subuid) "$pmallocd" --check --config "$T/p.conf" --subuid "$T/subuid" >"$T/run" 2>&1 ;;
	--debug) dstart --socket "$T/d.sock" --debug; true ;;
	--socket | -s) dstart "$opt" "$T/d.sock"; true ;;
	--test-sandbox) # dies by SIGSYS, as it should (the subshell keeps bash's note quiet)
		( "$pmallocd" --test-sandbox --config "$T/p.conf" --socket "$T/d.sock" >"$T/run" 2>&1 ) 2>/dev/null
		[ $? != 2 ] ;;
	--help | -h | --version | -V) "$pmallocd" "$opt" >"$T/run" 2>&1 ;;
	*) fail "pmallocd(8) documents $opt, which pmallocd does not take" ;;
	esac || fail "pmallocd $opt: exit $?: $(cat "$T/run")"
	n=$((n + 1))
done < <(awk '$1 == "pmallocd" { print $3 }' "$T/doc" | sort -u)
while read -r long short; do
	grep -qxF "pmallocd @ $long" "$T/doc" || fail "pmallocd takes $long, which pmallocd(8) does not document"
	[ "$short" = none ] || grep -qxF "pmallocd @ $short" "$T/doc" ||
		fail "pmallocd takes $short ($long), which pmallocd(8) does not document"
done <"$T/dtable"
pass "pmallocd(8) documents its $(wc -l <"$T/dtable") options and no other ($n tried)"

# ---- pmalloc.conf(5): the commands and options it names exist ----
while read -r what verb; do
	grep -q "^$verb " "$T/table" || fail "pmalloc.conf(5) names pmallocctl $verb, which is no command"
done < <(grep '^mention ' "$T/conf5")
while read -r prog verb opt; do
	if [ "$prog" = pmallocctl ]; then
		grep -qE "^$verb $opt |^$verb [^ ]+ $opt\$" "$T/table" || fail "pmalloc.conf(5): pmallocctl $verb $opt"
	elif [ "$prog" = pmallocd ]; then
		grep -qE "^$opt |^[^ ]+ $opt\$" "$T/dtable" || fail "pmalloc.conf(5): pmallocd $opt"
	else
		grep -qE "^$opt |^[^ ]+ $opt\$" "$T/dtable" || grep -qE " $opt( |\$)" "$T/table" ||
			fail "pmalloc.conf(5) names $opt, which neither program takes"
	fi
done < <(grep -v '^mention \|^pair ' "$T/conf5" | sort -u)
pass "pmalloc.conf(5) names $(grep -c '^mention ' "$T/conf5") commands and $(grep -vc '^mention \|^pair ' "$T/conf5") options, all real"

# ---- the check example of pmallocctl(8) is what check prints ----
awk '/^\.SH EXAMPLES/ { on = 1 } on && /^\.EX/ { ex = 1; next } ex && /^\.EE/ { exit } ex { print }' \
	"$SRC/man/pmallocctl.8" | sed 's/\\-/-/g' | tail -n +2 >"$T/example"
"$ctl" check "$T/p.conf" | sed "s|^$T/p.conf:|/etc/pmalloc.conf:|" >"$T/check" || fail "check: $(cat "$T/check")"
diff -u "$T/example" "$T/check" >"$T/diff" || fail "pmallocctl(8)'s check example is not what check prints: $(cat "$T/diff")"
pass "pmallocctl(8)'s check example is check's output"
