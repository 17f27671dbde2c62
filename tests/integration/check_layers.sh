#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# check_layers.sh - tests/check-layers itself, on a small tree of its own
# with a layer table of its own (as mk/layers.mk is written): an #include
# of a header of a higher layer fails, so does one of a sibling at the same
# rank (pmallocd and pmallocctl) and one of a header outside the file's
# list; includes down the list pass; and the real tree passes against the
# real mk/layers.mk.
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"

check="$SRC/tests/check-layers"
mk() { mkdir -p "$T/src/$(dirname "$1")"; printf '%s\n' "$2" >"$T/src/$1"; }
mkdir -p "$T/src"
cat >"$T/src/layers.mk" <<'MK'
# a table as mk/layers.mk writes one
SHIM_LAYERS := low mid \
	high
PROGRAM_LAYERS := low prog/a+prog/b
MK
mk low/low.h '/* low */'
mk mid/mid.h '#include "low.h"'
mk mid/mid.c '#include "mid.h"
#include "low.h"
#include <stdio.h>
#include "paths.h"'
mk high/high.h '#include "mid.h"'
mk prog/a/a.h '#include "low.h"'
mk prog/b/b.c '#include "low.h"'

run() { (cd "$T/src" && "$check" --layers layers.mk --src . "$T/nobuild") >"$T/out" 2>&1; }
run || { cat "$T/out"; fail "a tree that includes only downwards failed"; }
grep -q 'shim: #include lines of 4 files, 0 faults' "$T/out" || { cat "$T/out"; fail "files not counted"; }
pass "includes down the list (and system or generated headers) pass"

mk mid/mid.c '#include "high.h"'
run && fail "an upward include passed"
grep -q 'upward include: mid/mid.c (mid) includes high.h of high (high)' "$T/out" ||
	{ cat "$T/out"; fail "the upward include is not named"; }
pass "an #include of a higher layer's header fails, named"

mk mid/mid.c '#include "low.h"'
mk prog/b/b.c '#include "a.h"'
run && fail "an include of a sibling at the same rank passed"
grep -q 'prog/b/b.c (prog/a|prog/b) includes a.h of prog/a' "$T/out" || { cat "$T/out"; fail "the sibling include is not named"; }
pass "an #include of a sibling of the same rank fails (pmallocd and pmallocctl)"

cd "$SRC" && "$check" --layers mk/layers.mk --src . "$T/nobuild" >"$T/out" 2>&1 || { cat "$T/out"; fail "the real tree fails"; }
pass "the real tree's #include lines follow mk/layers.mk"
