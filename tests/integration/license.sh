#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# license.sh - every tracked source file names its licence on an SPDX line,
# and that licence is the one debian/copyright gives its path (the last
# matching "Files:" stanza, as DEP-5 reads them; LICENSE says why).
#
# Source files: *.c *.h *.map *.sh *.bash, every file that starts with "#!",
# Makefile, the systemd units and catalog, conf/*.conf, the man pages.  Not:
# data (tests/fuzz corpora and dictionary), the licence texts, README.md,
# LICENSE, the .gitignore, debian's control files (debian/copyright is their
# licence statement).  The line, exactly, where:
#   *.c *.h *.map                      line 1: /* SPDX-License-Identifier: ID */
#   starting with "#!"                 line 2: # SPDX-License-Identifier: ID
#   other files with # comments        line 1: # SPDX-License-Identifier: ID
#   man pages (*.1 ... *.8)            line 1: .\" SPDX-License-Identifier: ID
. "$(dirname "$0")/lib.sh"

cd "$SRC" || fail "no source tree"
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 || skip "not a git checkout: the tracked files are unknown"
copyright=debian/copyright
[ -f LICENSE ] || fail "no LICENSE"
[ -f "$copyright" ] || fail "no $copyright"

# The Files: stanzas of debian/copyright: "PATTERN ID" lines, in order.
awk '/^Files:/ { sub(/^Files:[ \t]*/, ""); files = $0; next }
     /^License:/ && files != "" { sub(/^License:[ \t]*/, ""); n = split(files, f, /[ \t]+/);
	for (i = 1; i <= n; i++) print f[i], $0; files = "" }' "$copyright" >"$T/stanzas"
[ -s "$T/stanzas" ] || fail "no Files:/License: stanzas in $copyright"
ids=$(cut -d' ' -f2 "$T/stanzas" | sort -u)
for id in $ids; do
	grep -qF "($id)" LICENSE || fail "LICENSE does not name $id, which $copyright uses"
	[ -f "LICENSES/$id.txt" ] || fail "no LICENSES/$id.txt"
	[ "$(grep -c "^License: $id\$" "$copyright")" -ge 2 ] || fail "$copyright has no text for $id"
done

# No process per file (some 500 files: forks were this test's time).
mapfile -t stanzas <"$T/stanzas"
# licence_of PATH: sets $id to the licence of PATH's last matching stanza.
licence_of() {
	local s pat
	id=
	for s in "${stanzas[@]}"; do
		pat=${s%% *}
		# DEP-5: "*" matches any characters, "/" included.
		# shellcheck disable=SC2053
		[[ $1 == $pat ]] && id=${s#* }
	done
}

bad=0 n=0
while IFS= read -r f; do
	[ -f "$f" ] || continue
	case $f in
	tests/fuzz/*/* | *.dict | LICENSES/* | LICENSE | README.md | .gitignore) continue ;;
	debian/rules) ;;
	debian/*) continue ;;
	esac
	first= second=
	{ IFS= read -r first; IFS= read -r second; } <"$f"
	case $f in
	*.c | *.h | *.map) line=1 fmt='/* SPDX-License-Identifier: %s */' ;;
	*.[1-8]) line=1 fmt='.\\" SPDX-License-Identifier: %s' ;;
	*)
		if [[ $first == '#!'* ]]; then line=2 fmt='# SPDX-License-Identifier: %s'
		else
			case $f in
			*.sh | *.bash | Makefile | */Makefile | *.service | *.socket | *.catalog | conf/*.conf)
				line=1 fmt='# SPDX-License-Identifier: %s' ;;
			*) continue ;;       # not a source file
			esac
		fi ;;
	esac
	n=$((n + 1))
	licence_of "$f"
	[ -n "$id" ] || { echo "$f: no Files: stanza of $copyright matches"; bad=$((bad + 1)); continue; }
	# shellcheck disable=SC2059
	printf -v want "$fmt" "$id"
	got=$first; [ $line = 2 ] && got=$second
	if [ "$got" != "$want" ]; then
		[ $bad -lt 20 ] && echo "$f:$line: want '$want', have '$got'"
		bad=$((bad + 1))
	fi
done < <(git ls-files)
[ $n -gt 100 ] || fail "only $n source files found: the file set is wrong"
[ $bad = 0 ] || fail "$bad of $n source files lack their SPDX line (first 20 above)"
pass "$n source files carry the SPDX line of their licence ($(echo $ids))"
exit 0
