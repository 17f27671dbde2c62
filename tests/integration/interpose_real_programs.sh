# SPDX-License-Identifier: GPL-2.0-or-later
# interpose_real_programs.sh - real programs keep working under the shim
# with a policy that routes EVERY allocation of every process into a pool
# that is never protected (sites "*", max_bytes 256 MiB, no trigger):
# python3, perl, bash, git, sort and gcc (with cc1, as and ld under the shim
# too) give byte-identical stdout and the same exit status as without it.
# Then, that the pool really takes the allocations (PMALLOC_DEBUG=1).
#
# A program that is not installed is skipped and named; the script then
# exits 77 after running the others (a failure still exits 1).
. "$(dirname "$0")/lib.sh"

# The system's programs, not a user's wrappers (pyenv shims and the like).
export PATH=/usr/local/bin:/usr/bin:/bin
export LC_ALL=C TZ=UTC HOME="$T/home"
mkdir -p "$HOME"
unset PMALLOC_DEBUG
SHIM=$B/libpmalloc_shim.so
[ -f "$SHIM" ] || fail "$SHIM is missing: run make"
CONF=$T/pmalloc.conf
cat >"$CONF" <<'EOF'
version = 1;
policies = (
  { name = "everything"; match = { exe = [ "*" ]; };
    pools = ( { name = "all"; sites = [ "*" ]; max_bytes = 268435456; } ); }
);
EOF
SMALL_CONF=$T/small.conf
sed 's/max_bytes = 268435456/max_bytes = 1048576/' "$CONF" >"$SMALL_CONF"
export PMALLOC_SOCKET=$T/no-daemon.sock     # nonexistent: no daemon is asked

missing=()
have() {
	if command -v "$1" >/dev/null 2>&1; then return 0; fi
	printf 'skipped: %s is not installed\n' "$1"
	missing+=("$1")
	return 1
}

# compare NAME CMD...: run CMD (in a fresh directory each time) without and
# with the shim (policy file $RUN_CONF, default $CONF); stdout must be
# byte-identical and the exit status equal.
compare() {
	local name=$1; shift
	local plain=$T/$name.plain shim=$T/$name.shim rc_plain rc_shim
	mkdir -p "$plain.d" "$shim.d"
	(cd "$plain.d" && PMALLOC_CONF=/nonexistent timeout 120 "$@") >"$plain.out" 2>"$plain.err"
	rc_plain=$?
	(cd "$shim.d" && LD_PRELOAD=$SHIM PMALLOC_CONF=${RUN_CONF:-$CONF} timeout 120 "$@") >"$shim.out" 2>"$shim.err"
	rc_shim=$?
	[ "$rc_plain" -eq 0 ] || fail "$name: fails even without the shim (exit $rc_plain): $(head -c 2000 "$plain.err")"
	if [ "$rc_shim" -ne "$rc_plain" ]; then
		fail "$name: exit $rc_shim with the shim, $rc_plain without; stderr: $(head -c 2000 "$shim.err")"
	fi
	cmp -s "$plain.out" "$shim.out" ||
		fail "$name: stdout differs with the shim: $(diff "$plain.out" "$shim.out" | head -n 20)"
	[ -s "$plain.out" ] || fail "$name: printed nothing, nothing was compared"
	if grep -q pmalloc "$shim.err"; then
		fail "$name: the shim spoke on stderr: $(grep pmalloc "$shim.err" | head -n 5)"
	fi
	pass "$name: $(wc -l <"$plain.out") identical lines, exit $rc_plain"
}

if have python3; then
	printf 'python3: %s\n' "$(python3 --version 2>&1)"
	cat >"$T/prog.py" <<'EOF'
import collections, hashlib, json, re
data = {"items": [{"id": i, "name": "item%d" % i, "tags": ["t%d" % (i % 7)] * (i % 5)}
                  for i in range(3000)]}
text = json.dumps(data, sort_keys=True, indent=1)
back = json.loads(text)
assert back == data
print(len(text), back["items"][1234]["name"])
print(hashlib.sha256(text.encode()).hexdigest(), hashlib.md5(text.encode()).hexdigest())
ids = re.findall(r'"item(\d+)"', text)
print(len(ids), sum(map(int, ids)))
print(sorted(collections.Counter(s[-1] for s in ids).items()))
print(re.sub(r"(\w+)@(\w+)", r"\2 at \1", "alice@example bob@host"))
chunks = [("x" * (i % 300)) + str(i) for i in range(20000)]
print(len("".join(chunks)), hashlib.sha1("|".join(sorted(chunks)).encode()).hexdigest())
EOF
	compare python3 python3 "$T/prog.py"
	# A pool that fills up early: pool and heap objects mixed, pool
	# objects realloc'ed onto the heap and freed.
	RUN_CONF=$SMALL_CONF compare python3-capped python3 "$T/prog.py"
fi

if have perl; then
	printf 'perl: %s\n' "$(perl -e 'print $^V')"
	cat >"$T/prog.pl" <<'EOF'
use strict; use warnings;
my %h;
for my $i (1 .. 5000) { $h{"k$i"} = join(",", map { $_ * $i } 1 .. 5); }
my @k = sort keys %h;
print scalar(@k), " $k[0] $k[-1] $h{k4999}\n";
my $text = join(" ", map { "word$_" } 1 .. 3000);
my @m = ($text =~ /word(\d*7)\b/g);
print scalar(@m), " $m[-1]\n";
(my $t = $text) =~ s/word(\d+)/W$1/g;
print length($t), "\n";
print join(",", sort { $b <=> $a } map { ($_ * 7919) % 97 } 1 .. 40), "\n";
my @aoa = map { [ $_, $_ ** 2, "s" x ($_ % 50) ] } 1 .. 2000;
print scalar(grep { length($_->[2]) > 25 } @aoa), "\n";
EOF
	compare perl perl "$T/prog.pl"
	RUN_CONF=$SMALL_CONF compare perl-capped perl "$T/prog.pl"
fi

if have bash; then
	printf 'bash: %s\n' "$(bash --version | head -n 1)"
	cat >"$T/prog.bash" <<'EOF'
declare -a arr
for i in $(seq 1 500); do arr+=("v$i"); done
echo "${#arr[@]} ${arr[0]} ${arr[499]}"
declare -A sq
for i in {1..300}; do sq[k$i]=$((i * i)); done
echo "${sq[k17]} ${#sq[@]}"
sub=$( (for x in "${arr[@]:0:50}"; do echo "$x"; done) | sort | tail -n 3 | tr '\n' ' ')
echo "$sub"
printf '%s\n' "${arr[@]}" | grep -c 7
rev() { local s="" w; for w in "$@"; do s="$w$s"; done; echo "${s:0:20}"; }
rev a b c d e f
total=0
while read -r n; do total=$((total + n)); done < <(seq 1 1000)
echo "$total"
( cd / && echo "subshell in $PWD"; exit 3 ); echo "subshell exit $?"
x=$(echo "a:b:c" | { IFS=: read -r p q r; echo "$r$q$p"; })
echo "$x ${x^^} ${x/b/B}"
EOF
	compare bash bash "$T/prog.bash"
fi

if have git; then
	printf 'git: %s\n' "$(git --version)"
	cat >"$T/prog-git.bash" <<'EOF'
set -e
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
g() { git -c user.name=Tester -c user.email=tester@example.org -c init.defaultBranch=main "$@"; }
g init -q repo
cd repo
echo hello >a.txt
seq 1 2000 >b.txt
g add .
g commit -q -m "first commit"
echo more >>a.txt
sed -i 's/^1$/one/' b.txt
g commit -q -am "second commit"
g log --format='%H %an %s'
g diff --stat HEAD~1 HEAD
g cat-file -p 'HEAD^{tree}'
g rev-list --count HEAD
g status --porcelain
g gc -q
g fsck --no-progress 2>&1 | sort
EOF
	compare git bash "$T/prog-git.bash"
fi

if have sort; then
	printf 'sort: %s\n' "$(sort --version | head -n 1)"
	seed=12345
	for ((i = 0; i < 5000; i++)); do
		seed=$(((seed * 1103515245 + 12345) % 2147483648))
		printf 'line%05d %d %s\n' $((seed % 7919)) $((seed % 100003)) "$((seed % 3))x"
	done >"$T/sort.in"
	compare sort-plain sort "$T/sort.in"
	compare sort-numeric sort -k2,2n -k1,1r "$T/sort.in"
	compare sort-unique sort -u -t' ' -k3,3 "$T/sort.in"
fi

if have gcc; then
	printf 'gcc: %s\n' "$(gcc --version | head -n 1)"
	cat >"$T/hello.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
	char *s = malloc(64);
	strcpy(s, "hello, world");
	printf("%s (%zu)\n", s, strlen(s));
	free(s);
	return 0;
}
EOF
	compare gcc bash -c "gcc -O2 -Wall -o hello '$T/hello.c' && ./hello"
fi

# The pool really takes the allocations: the policy applies, and with a
# small cap the pool fills up at once.
if command -v python3 >/dev/null 2>&1; then
	out=$(LD_PRELOAD=$SHIM PMALLOC_CONF=$CONF PMALLOC_DEBUG=1 python3 -c 'print("hi")' 2>"$T/debug.err")
	[ "$out" = hi ] || fail "python3 under PMALLOC_DEBUG=1 printed '$out'"
	grep -Eq '^pmalloc\[[0-9]+\]: policy "everything" \(enforce, mprotect\) applies to .*python3' "$T/debug.err" ||
		fail "no policy line under PMALLOC_DEBUG=1: $(head -n 5 "$T/debug.err")"
	out=$(LD_PRELOAD=$SHIM PMALLOC_CONF=$SMALL_CONF PMALLOC_DEBUG=1 python3 -c 'print("hi")' 2>"$T/debug-small.err")
	[ "$out" = hi ] || fail "python3 with a 1 MiB pool printed '$out'"
	grep -Eq '^pmalloc\[[0-9]+\]: pool "all" reached max_bytes' "$T/debug-small.err" ||
		fail "a 1 MiB pool never filled up: python3's allocations did not reach it"
	pass "python3's allocations went into the pool (policy line; a 1 MiB pool filled up)"
fi

if [ ${#missing[@]} -gt 0 ]; then
	skip "not installed: ${missing[*]} (the others passed)"
fi
exit 0
